"""The headline record (analysis.sweep.headline) at the boundaries a careless change
crosses, against numbers worked out by hand: break-even iterations (compile seconds over
milliseconds saved per iteration), the largest part of the time saved (of the total's
sign, no larger than it), and both only where the module doc says they exist."""
import math

import pandas as pd
import pytest

from fusionlab.analysis.sweep import headline, tables
from test_decompose import run, runs_table


def record(extra=(), compile_s=12.0):
    """The headline of test_decompose's runs (eager W 3.0 ms, compile W 1.0 ms, three
    repeats each) with compile's first call `compile_s` seconds after eager's."""
    rows = runs_table(extra)
    rows["compile_latency_s"] = [0.0 if v == "eager" else compile_s for v in rows["variant"]]
    rows["profiler_overhead"], rows["peak_memory_bytes"] = 1.0, 1.0
    return headline.table(rows, tables.speedups(rows)).set_index("variant")


def test_break_even_iterations_by_hand():
    """12 s of compiling against 3.0 - 1.0 = 2.0 ms saved per iteration: 12000 ms / 2.0 ms
    = 6000 iterations (not 6: seconds over milliseconds)."""
    h = record().loc["compile"]
    assert h["verdict"] == "faster"            # range of 3: 2.75 / 1.125 = 2.44 > 1
    assert (h["eager_wall_ms"], h["wall_ms"], h["saved_ms"]) == (3.0, 1.0, 2.0)
    assert h["compile_s"] == 12.0
    assert h["break_even_iters"] == 6000.0
    assert record(compile_s=0.5).loc["compile", "break_even_iters"] == 250.0   # 500 ms / 2.0 ms


def test_no_break_even_without_a_verdict_of_faster_or_a_compile_time():
    slow = [run("slow", i, wall_time_per_iter_ms=4.0 + d, traced_wall_time_per_iter_ms=4.5 + d,
                gpu_time_per_iter_ms=2.0 + d, idle_host_wait_per_iter_ms=2.5 + d,
                kernels_per_iter=8, launch_calls_per_iter=8) for i, d in enumerate((-0.25, 0.0, 0.5))]
    h = record(slow)
    assert h.loc["slow", "verdict"] == "slower" and h.loc["slow", "compile_s"] == 12.0
    assert math.isnan(h.loc["slow", "break_even_iters"])
    assert math.isnan(record(compile_s=0.0).loc["compile", "break_even_iters"])
    assert math.isnan(h.loc["eager", "break_even_iters"])


def test_the_records_largest_part_by_hand():
    """compile: host 0.5, traffic 0.75e9 B at eager's 1.5e9 B / 2.0 ms = 1.0, kernels
    1.5 - 1.0 = 0.5, host speed 0, remainder 0: they add up to 2.0 ms and traffic is the
    largest."""
    h = record().loc["compile"]
    parts = {p: h[p] for p in headline.PARTS}
    assert parts == pytest.approx({"host_saved_ms": 0.5, "traffic_ms": 1.0, "kernels_saved_ms": 0.5,
                                   "host_speed_ms": 0.0, "remainder_ms": 0.0}, abs=1e-12)
    assert (h["largest_part"], h["largest_part_ms"]) == ("traffic_ms", pytest.approx(1.0, abs=1e-12))


def test_a_slower_variants_largest_part_is_of_the_totals_sign():
    slow = [run("slow", i, wall_time_per_iter_ms=4.0 + d, traced_wall_time_per_iter_ms=4.5 + d,
                gpu_time_per_iter_ms=2.0 + d, idle_host_wait_per_iter_ms=2.5 + d,
                kernels_per_iter=8, launch_calls_per_iter=8) for i, d in enumerate((-0.25, 0.0, 0.5))]
    h = record(slow).loc["slow"]
    assert h["saved_ms"] == -1.0
    parts = {p: h[p] for p in headline.PARTS}
    assert sum(parts.values()) == pytest.approx(-1.0, abs=1e-12)
    negative = {k: v for k, v in parts.items() if v < 0}
    want = min(negative, key=negative.get)
    assert (h["largest_part"], h["largest_part_ms"]) == (want, negative[want]) and negative[want] >= -1.0


@pytest.mark.parametrize("parts, total, want", [
    ({"host": 3.0, "traffic": 2.5, "kernels": 3.5, "remainder": -4.0}, 5.0, ("kernels", 3.5)),   # -4.0 is larger
    ({"host": -2.0, "traffic": 2.2, "kernels": -1.2, "remainder": -1.5}, -2.5, ("host", -2.0)),  # 2.2 is larger
    ({"host": 4.9, "traffic": 0.1}, 5.0, ("host", 4.9)),
    ({"host": 5.0, "traffic": 0.0}, 5.0, ("host", 5.0)),             # as large as the total: still named
    ({"host": 6.0, "traffic": -1.0}, 5.0, ("", None)),               # larger than the total: both ways
    ({"host": -4.9, "traffic": 9.9}, 5.0, ("", None)),
    ({"host": 1.0, "traffic": float("nan"), "kernels": 0.5}, 1.5, ("host", 1.0)),
    ({"host": 1.0, "traffic": -1.0}, 0.0, ("", None)),               # nothing saved
    ({"host": 1.0}, float("nan"), ("", None)),
    ({"host": -1.0, "traffic": -0.5}, 1.5, ("", None)),              # no part of the total's sign
])
def test_largest_part(parts, total, want):
    name, value = headline.largest(parts, total)
    assert name == want[0]
    assert math.isnan(value) if want[1] is None else value == want[1]
