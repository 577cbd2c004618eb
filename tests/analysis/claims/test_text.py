"""Who said a claim (bot/analysis/claims/text.py): the replier, or the author an attribution
line names."""

from __future__ import annotations

import textwrap

from bot.analysis.claims import analyse_message

RELAYED = """\
On Tue, Apr 21, 2026 at 2:17\u202fPM Kairui Song via B4 Relay
<devnull+kasong.tencent.com@kernel.org> wrote:
> Before: 261000 RPS
> After: 262827 RPS (+0.70%), 24 runs each.

Thanks, looks good.
"""


def test_a_relay_in_the_attribution_or_the_sender_is_not_the_speaker() -> None:
    """b4's web relay and DMARC-munging lists send as "Name via Relay": the claim is Kairui
    Song's (it read "Relay (quoted, depth 1)" on cgroups), and the reply Marco Elver's."""
    result = analyse_message("s", "'Marco Elver' via kasan-dev <kasan-dev@googlegroups.com>",
                             RELAYED + "\nOn my box throughput improved by 3%.\n")
    speakers = [(c.claim.speaker.name, c.claim.speaker.role) for c in result.claims]
    assert ("Kairui Song", "quoted") in speakers
    assert ("Marco Elver", "replier") in speakers


def test_rows_of_a_profile_are_no_claims() -> None:
    # Barry Song's arm64 batched TLB series (linux-mm, 2022) quotes `perf report`: its shares
    # were read as "21.07% regression" and ten more percentages.
    body = textwrap.dedent("""\
        > >  # Overhead  Command  Shared Object      Symbol
        > >  # ........  .......  .................  ..................
        > >  #
        > >     21.07%  a.out    [kernel.kallsyms]  [k] _raw_spin_unlock_irq
        > >      8.23%  a.out    [kernel.kallsyms]  [k] _raw_spin_unlock_irqrestore
        > >     16.99%  swap_bench  [kernel.kallsyms]  [k] ptep_clear_flush
        > >    - 30.12%  5.01%  a.out  [kernel.kallsyms]  [k] do_swap_page
        > >             |--12.50%--shrink_folio_list
        > >
        > > With the above micro benchmark, the time to finish decreases around 5%.
        """)
    result = analyse_message("Re: [PATCH v3 4/4]", "Barry Song <21cnbao@gmail.com>", body)
    assert [(j.claim.kind, j.claim.change.low_pct) for j in result.claims] == [("percentage", 5)]


def test_a_short_profile_of_shares_and_symbols_is_no_claim() -> None:
    # Yu Zhao's kswapd profiles (linux-mm, 2022): "39.73%", "14.96%", "6.97%" were claims
    body = textwrap.dedent("""\
        Client benchmark results:
          kswapd profiles:
            patch1-5
              39.73%  lzo1x_1_do_compress (real work)
              14.96%  page_vma_mapped_walk
               6.97%  _raw_spin_unlock_irq
               3.07%  do_raw_spin_lock

        The throughput improved 4% with this patch.
        A 12% improvement
        """)
    result = analyse_message("s", "Yu Zhao <yuzhao@google.com>", body)
    assert [j.claim.change.low_pct for j in result.claims] == [4, 12]
