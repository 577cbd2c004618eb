"""Benchmark output parsers and reclaim counters, on output recorded from the real programs."""

from __future__ import annotations

import pytest

from bot.benchmarks.hackbench import TIME_METRIC, hackbench, parse_hackbench
from bot.benchmarks.simulator import THROUGHPUT, parse_simulator, simulator
from bot.benchmarks.vmstat import counter_delta, parse_counters, select_counters
from bot.demo.simtree import ops_per_second
from tests.support.paths import FIXTURES

LAB_FIXTURES = FIXTURES / "lab"


def test_hackbench_time_from_process_and_thread_mode_output():
    assert parse_hackbench((LAB_FIXTURES / "hackbench-g4-l100-p.txt").read_text()) == {
        TIME_METRIC: 0.190
    }
    assert parse_hackbench((LAB_FIXTURES / "hackbench-g2-l200-T.txt").read_text()) == {
        TIME_METRIC: 0.489
    }


def test_hackbench_without_a_time_line_is_an_error_not_a_zero():
    header = (LAB_FIXTURES / "hackbench-g4-l100-p.txt").read_text().splitlines()[0]
    with pytest.raises(ValueError, match="Time"):
        parse_hackbench(header + "\n")


def test_hackbench_definition_fills_its_argv_and_judges_time_lower_is_better():
    bench = hackbench(groups=8, loops=50, pipe=True, threads=True)
    assert bench.argv() == ["hackbench", "-g", "8", "-l", "50", "-p", "-T"]
    assert bench.argv(groups=2)[:3] == ["hackbench", "-g", "2"]
    (metric,) = bench.main_metrics
    assert (metric.name, metric.unit, metric.higher_is_better) == (TIME_METRIC, "s", False)


def test_simulator_output_gives_throughput_and_its_counters():
    text = (LAB_FIXTURES / "simulator-defconfig-300000.txt").read_text()
    values = parse_simulator(text)
    assert values[THROUGHPUT] == ops_per_second(text) == 46992662
    assert values["reclaim-sim.seconds"] == 0.013
    assert values["reclaim-sim.pgscan"] == 457728
    assert [m.name for m in simulator().main_metrics] == [THROUGHPUT]
    with pytest.raises(ValueError, match="ops/s"):
        parse_simulator(text.replace("ops/s", "ops"))


def test_simulator_argv_needs_the_kernel_the_runner_fills_in():
    bench = simulator(ops_per_cpu=1000)
    assert bench.argv(kernel="/b/bzImage") == ["/b/bzImage", "1000"]
    with pytest.raises(ValueError, match="kernel"):
        bench.argv()


def test_vmstat_reclaim_counters_are_selected_and_differenced():
    before = parse_counters((LAB_FIXTURES / "vmstat.txt").read_text())
    assert before["nr_free_pages"] >= 0  # every line is read, not only the reclaim ones
    chosen = select_counters(before)
    assert {"pgscan_kswapd", "pgsteal_direct", "workingset_refault_file", "allocstall_normal",
            "pswpin", "pswpout", "pgscan_file"} <= set(chosen)
    assert "nr_free_pages" not in chosen and "pgfault" not in chosen
    after = dict(before, pgscan_kswapd=before["pgscan_kswapd"] + 640, pswpout=before["pswpout"] + 3)
    del after["pgsteal_direct"]  # missing in one reading: left out, not guessed
    delta = counter_delta(before, after)
    assert delta["pgscan_kswapd"] == 640 and delta["pswpout"] == 3
    assert delta["pgscan_direct"] == 0
    assert "pgsteal_direct" not in delta


def test_memcg_memory_stat_v1_reclaim_counters():
    stat = parse_counters((LAB_FIXTURES / "memory.stat-v1.txt").read_text())
    assert select_counters(stat) == {
        "workingset_refault_anon": 0,
        "workingset_refault_file": 3430,
    }


def test_a_malformed_counter_line_is_reported_with_its_line_number():
    with pytest.raises(ValueError, match="line 2"):
        parse_counters("pgscan_kswapd 1\npgsteal_kswapd many\n")
