"""What each step records in `run_steps.result`, as types instead of string keys.

The workers write these (`as_result`) and every reader (the outcome, the reply, the web
page, `runs show`) reads them back (`from_step`). Reading tolerates rows written before a field
existed: a missing key reads as its default.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Protocol, TypeVar

T = TypeVar("T", bound="_Record")


class StoredStep(Protocol):
    state: str
    result: dict[str, Any]


class _Record:
    @classmethod
    def from_result(cls: type[T], result: dict[str, Any] | None) -> T:
        known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        return cls(**{k: v for k, v in (result or {}).items() if k in known})

    @classmethod
    def from_step(cls: type[T], step: StoredStep | None) -> T:
        return cls.from_result(step.result if step is not None else None)

    def as_result(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]


@dataclass(frozen=True)
class Conflict:
    path: str
    hunks: str  # the conflicted region(s) as `git diff` shows them, with markers


@dataclass(frozen=True)
class ApplyRecord(_Record):
    """The `apply` step: the base chosen, and how far `git am` got."""

    base: str = ""
    base_reason: str = ""  # base-commit, subject-tag, b4-guess, branch-head, explicit
    base_detail: str = ""  # the choice in words, e.g. "head of mm-unstable; ..."
    base_branch: str = ""
    patched: str | None = None  # the commit after the last patch
    applied: int = 0  # patches applied before the failure (all of them on success)
    failed_patch: str | None = None  # "0002 mm/vmscan: ..." as git am names it
    conflicts: tuple[Conflict, ...] = ()
    changes_lru_gen: bool = False  # the applied series changes MGLRU code (bot.runs.lru)
    # The Message-IDs of the patches in the mbox, in order: what the run tested, which a
    # correction sent later changes in the version (bot.runs.corrections); empty in records
    # written before it was kept.
    patches: tuple[str, ...] = ()

    @classmethod
    def from_result(cls, result: dict[str, Any] | None) -> ApplyRecord:
        record = super().from_result(result)
        conflicts = tuple(c if isinstance(c, Conflict) else Conflict(c["path"], c.get("hunks", ""))
                          for c in record.conflicts)
        return cls(**{**asdict(record), "conflicts": conflicts,
                      "patches": tuple(record.patches)})

    @property
    def conflicted_paths(self) -> tuple[str, ...]:
        return tuple(c.path for c in self.conflicts)


@dataclass(frozen=True)
class BuildRecord(_Record):
    """A `build-base` or `build-patched` step: did the kernel build, and where it is."""

    ok: bool = False
    commit: str = ""
    cache_key: str = ""
    cached: bool = False  # the artifact cache had it: nothing was built
    artifact_dir: str | None = None  # bzImage, .config and build.json
    seconds: float = 0.0
    objdir: str = ""
    errors: tuple[dict[str, Any], ...] = ()  # location, message, excerpt of the first errors
    isolation: str = ""
    # An align follow-up's build: how functions were forced to align (workers/kernel/alignment
    # .py): "CONFIG_DEBUG_FORCE_FUNCTION_ALIGN_64B=y" or "KCFLAGS=-falign-functions=64".
    alignment: str = ""

    @classmethod
    def from_build(cls, result: Any) -> BuildRecord:
        """From a `workers.kernel.build.BuildResult` (its log is kept on the step's row)."""
        data = result.as_dict()
        data["errors"] = tuple(data.get("errors") or ())
        return cls.from_result(data)


@dataclass(frozen=True)
class BenchCampaign:
    id: int
    benchmark: str
    state: str
    error: str | None = None


@dataclass(frozen=True)
class BenchRecord(_Record):
    """The `bench` step: the lab host and each benchmark's campaign."""

    host: str = ""
    runner: str = ""
    campaigns: tuple[BenchCampaign, ...] = ()

    @classmethod
    def from_result(cls, result: dict[str, Any] | None) -> BenchRecord:
        record = super().from_result(result)
        campaigns = tuple(c if isinstance(c, BenchCampaign) else BenchCampaign(**c)
                          for c in record.campaigns)
        return cls(host=record.host, runner=record.runner, campaigns=campaigns)


@dataclass(frozen=True)
class ReportRecord(_Record):
    """The `report` step: the reply written (its outbox row) or why none was."""

    reply: int | None = None  # the outbox row's id
    message_id: str | None = None
    kind: str | None = None
    state: str | None = None
    new: bool = False  # False: a repeated step found the reply it had written
    why: str = ""


@dataclass(frozen=True)
class PrefixBuild:
    """One prefix of a series built: its first `prefix` patches applied on the base."""

    prefix: int  # 1..N; N is the patched tree
    commit: str
    ok: bool
    artifact_dir: str | None = None
    cached: bool = False  # the artifact cache had it: nothing was built
    seconds: float = 0.0
    error: str = ""  # why it did not build: the first error, or the limit that stopped it


@dataclass(frozen=True)
class PrefixesRecord(_Record):
    """The `build-prefixes` step of a bisect run: every prefix of the series built. `ok` is
    the whole series (prefix N) built; a shorter prefix that did not build is recorded here
    and skipped by the bisection (bot.runs.bisection), as `git bisect skip` does."""

    ok: bool = False
    base: str = ""
    prefixes: tuple[PrefixBuild, ...] = ()

    @classmethod
    def from_result(cls, result: dict[str, Any] | None) -> PrefixesRecord:
        record = super().from_result(result)
        return cls(ok=record.ok, base=record.base, prefixes=tuple(
            p if isinstance(p, PrefixBuild) else PrefixBuild(**p) for p in record.prefixes))

    def built(self) -> dict[int, PrefixBuild]:
        return {p.prefix: p for p in self.prefixes if p.ok}


@dataclass(frozen=True)
class MetricFinding:
    """One main metric of one campaign, as it was judged: the figures a bisect reply shows."""

    benchmark: str  # the benchmark run's label, "reclaim-sim ops=3000000"
    metric: str
    verdict: str
    words: str
    # None where the stored judgement has no finite figure (an unbounded interval)
    change_pct: float | None
    ci_low_pct: float | None
    ci_high_pct: float | None
    interval_level: float = 0.95  # the interval's nominal coverage


@dataclass(frozen=True)
class BisectProbe:
    """One bisection step: the base against prefix `prefix`, and what its campaigns said."""

    prefix: int
    commit: str
    carries: str  # bot.runs.bisection.Carries value
    campaigns: tuple[int, ...] = ()
    boots: int = 0
    metrics: tuple[MetricFinding, ...] = ()


@dataclass(frozen=True)
class BisectRecord(_Record):
    """The `bisect` step: the change followed (the review's findings), each prefix tested, and
    how the bisection ended (bot.runs.bisection.Ended): the patch found, or why not."""

    host: str = ""
    runner: str = ""
    patches: int = 0
    boots_per_step: int = 0  # [follow_ups] bisect_boots (or the run's option)
    pairs_max: int = 0  # measured pairs each step's campaign may take within them
    review: tuple[MetricFinding, ...] = ()  # the parent review's changed main metrics
    probes: tuple[BisectProbe, ...] = ()
    not_built: tuple[int, ...] = ()  # prefixes that did not build
    ended: str = ""
    found: int | None = None  # the patch that brings the change
    good: int = 0  # the last prefix shown not to carry it (0: the base)
    bad: int = 0  # the first prefix known to carry it
    stopped_at: int | None = None  # the prefix whose step could not tell
    boots: int = 0  # every boot the bisection took (warm-ups included)

    @classmethod
    def from_result(cls, result: dict[str, Any] | None) -> BisectRecord:
        record = super().from_result(result)

        def findings(items: Any) -> tuple[MetricFinding, ...]:
            return tuple(m if isinstance(m, MetricFinding) else MetricFinding(**m)
                         for m in items)

        probes = tuple(p if isinstance(p, BisectProbe) else BisectProbe(
            **{**p, "campaigns": tuple(p.get("campaigns", ())),
               "metrics": findings(p.get("metrics", ()))}) for p in record.probes)
        return replace(record, review=findings(record.review), probes=probes,
                       not_built=tuple(record.not_built))


@dataclass(frozen=True)
class AlternativeRecord(_Record):
    """The `apply-alternative` step of a compare run: the reviewer's diff (the message
    `message_id`, answering patch `answers` of `patches`) applied in place of that patch, or on
    top of the whole series; the commit made, or why it does not apply (the files, and the
    `file:line` git named, of the last placement tried)."""

    message_id: str = ""
    answers: int | None = None  # the patch the reply answers (1-based); None: the cover letter
    patches: int = 0
    mode: str = ""  # "in place" or "on top"; "" when it applied nowhere
    commit: str | None = None
    tried: tuple[str, ...] = ()  # the placements tried, in order
    conflicts: tuple[str, ...] = ()  # files
    failed_at: tuple[str, ...] = ()  # "mm/vmscan.c:42", as git apply names the hunk
    failed_patch: str | None = None  # a patch of the series after it that does not apply on it

    @classmethod
    def from_result(cls, result: dict[str, Any] | None) -> AlternativeRecord:
        record = super().from_result(result)
        return replace(record, tried=tuple(record.tried), conflicts=tuple(record.conflicts),
                       failed_at=tuple(record.failed_at))

    @property
    def where(self) -> str:
        """Where the diff went, as the reply says it: "in place of 2/3", "on top of the
        series"."""
        if self.mode == "in place" and self.answers is not None:
            return f"in place of {self.answers}/{self.patches}"
        return "on top of the series"
