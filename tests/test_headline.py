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
    assert (h["traffic_source"], h["traffic_bandwidth"]) == ("modelled", "eager's achieved bandwidth")


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


@pytest.mark.parametrize("values, lo, hi, want", [
    ([1.0, 1.1, 1.2, 1.3, 1.4], 1.05, 1.35, (1.05, 1.35, "95% CI")),   # CI_MIN repeats: the bootstrap CI
    ([1.0, 1.1, 1.2, 1.3, 1.4], float("nan"), float("nan"), (1.0, 1.4, "range of 5")),
    ([1.0, 1.1, 1.2, 1.3], 1.05, 1.25, (1.0, 1.3, "range of 4")),     # fewer: the repeats' range
    ([2.0, float("nan"), 1.5], float("nan"), float("nan"), (1.5, 2.0, "range of 2")),
    ([2.0], float("nan"), float("nan"), (None, None, "1 repeat")),
    ([], float("nan"), float("nan"), (None, None, "")),
])
def test_interval_by_the_number_of_repeats(values, lo, hi, want):
    got = headline.interval(values, lo, hi)
    assert got[2] == want[2] and headline.CI_MIN == 5
    assert (math.isnan(got[0]) and math.isnan(got[1])) if want[0] is None else got[:2] == want[:2]


@pytest.mark.parametrize("s, lo, hi, want", [
    (1.2, 1.0001, 1.4, "faster"), (1.2, 1.0, 1.4, "inconclusive"),      # faster only above 1
    (0.8, 0.6, 0.9999, "slower"), (0.8, 0.6, 1.0, "inconclusive"),      # slower only below
    (1.0, 0.9, 1.1, "inconclusive"),
    (1.2, float("nan"), float("nan"), "1 repeat"), (float("nan"), 0.5, 2.0, ""),
])
def test_verdict_at_one(s, lo, hi, want):
    assert headline.verdict(s, lo, hi) == want


def paired_runs(paired, eager=True):
    """m at batch 8: eager 0.3 ms, compile 0.06 ms a repeat, each compile repeat with the
    paired speedup given."""
    n = len(paired)
    return pd.DataFrame({"model": "m", "batch": 8, "size": "default", "mode": "inference", "dtype": "float32",
                         "backend": "nsys", "device": "cuda", "status": "ok", "reason": None,
                         "variant": ["eager"] * (n if eager else 0) + ["compile"] * n,
                         "repeat": list(range(n)) * (2 if eager else 1),
                         "wall_time_per_iter_ms": [0.3] * (n if eager else 0) + [0.06] * n,
                         "gpu_time_per_iter_ms": 0.05, "kernels_per_iter": 1.0, "profiler_overhead": 1.0,
                         "peak_memory_bytes": 1.0, "compile_latency_s": [0.0] * (n if eager else 0) + [3.0] * n,
                         "paired_speedup": [None] * (n if eager else 0) + list(paired)})


def test_a_paired_speedup_its_interval_and_eager_time():
    """Three paired repeats: the median 5.0, a 95% t interval over the 3 processes (by hand:
    exp(mean(log x) -+ 4.303 sd(log x) / sqrt 3) = [4.444, 5.692]; five: t 2.776, [4.785,
    5.260]), and eager's time beside the variant (0.06 ms x 5.0), not eager's own 0.3 ms;
    3 s / 0.24 ms saved = 12500 iterations. One process alone, with no other configuration
    of two to pool a spread from: no interval."""
    runs = paired_runs([4.8, 5.0, 5.3])
    h = headline.table(runs, tables.speedups(runs)).set_index("variant").loc["compile"]
    assert (h["estimator"], h["speedup"], h["interval"], h["verdict"]) == (
        "paired", 5.0, "95% t over 3 processes", "faster")
    assert (h["speedup_lo"], h["speedup_hi"]) == (pytest.approx(4.443896, abs=1e-6), pytest.approx(5.691510, abs=1e-6))
    assert h["eager_wall_ms"] == pytest.approx(0.3) and h["reference"] == "eager timed beside it"
    assert h["saved_ms"] == pytest.approx(0.24) and h["break_even_iters"] == pytest.approx(12500)
    assert h["speedup_across"] == pytest.approx(5.0)   # 0.3 / 0.06, kept beside it
    five = paired_runs([4.8, 5.0, 5.3, 4.9, 5.1])
    sp = tables.speedups(five)
    h5 = headline.table(five, sp).set_index("variant").loc["compile"]
    assert h5["interval"] == "95% t over 5 processes"
    assert (h5["speedup_lo"], h5["speedup_hi"]) == (pytest.approx(4.785344, abs=1e-6), pytest.approx(5.260030, abs=1e-6))
    one = paired_runs([4.0])
    h1 = headline.table(one, tables.speedups(one)).set_index("variant").loc["compile"]
    assert (h1["speedup"], h1["verdict"]) == (4.0, "1 repeat") and math.isnan(h1["break_even_iters"])


def test_across_processes_the_interval_by_the_number_of_repeats():
    """Unpaired, two repeats a side: the range eager's extremes over the variant's;
    five: the bootstrap CI of speedups."""
    two = runs_table().assign(profiler_overhead=1.0, peak_memory_bytes=1.0, compile_latency_s=0.0)
    two = two[two["repeat"] < 2]      # eager 2.75, 3.0; compile 0.9375, 1.0
    h = headline.table(two, tables.speedups(two)).set_index("variant").loc["compile"]
    assert (h["estimator"], h["interval"]) == ("across processes", "range of 2")
    assert (h["speedup_lo"], h["speedup_hi"]) == pytest.approx((2.75 / 1.0, 3.0 / 0.9375))
    five = pd.concat([runs_table().assign(repeat=lambda d, k=k: d["repeat"] + 3 * k) for k in range(2)],
                     ignore_index=True).assign(profiler_overhead=1.0, peak_memory_bytes=1.0, compile_latency_s=0.0)
    five = five[five["repeat"] < headline.CI_MIN]     # exactly CI_MIN a side
    sp = tables.speedups(five)
    h = headline.table(five, sp).set_index("variant").loc["compile"]
    want = sp.set_index("variant").loc["compile", ["speedup_wall_lo", "speedup_wall_hi"]].tolist()
    assert h["interval"] == "95% CI" and [h["speedup_lo"], h["speedup_hi"]] == want


def test_across_processes_one_repeat_has_no_interval():
    one = runs_table().assign(profiler_overhead=1.0, peak_memory_bytes=1.0, compile_latency_s=0.0)
    one = one[one["repeat"] == 1]
    h = headline.table(one, tables.speedups(one)).set_index("variant").loc["compile"]
    assert (h["speedup"], h["interval"], h["verdict"]) == (3.0, "1 repeat", "1 repeat")
    assert math.isnan(h["speedup_lo"]) and math.isnan(h["speedup_hi"])


def test_the_headline_quotes_the_speedups_tables_paired_speedup():
    runs = paired_runs([4.8, 5.0, 5.3])
    sp = tables.speedups(runs)
    sp.loc[sp["variant"] == "compile", "speedup_paired"] = 4.9
    assert headline.table(runs, sp).set_index("variant").loc["compile", "speedup"] == 4.9


def test_best_is_the_highest_speedup_of_each_configuration():
    h = pd.DataFrame({"model": "m", "batch": [16, 16, 8, 8, 8], "size": "default", "mode": "inference",
                      "dtype": "float32", "backend": float("nan"), "device": "cuda",
                      "variant": ["eager", "a", "eager", "a", "b"], "speedup": [1.0, 0.5, 1.0, 1.5, 2.5]})
    got = headline.best(h)       # in configuration order, a configuration without a backend kept
    assert list(zip(got["batch"], got["variant"], got["speedup"])) == [(8, "b", 2.5), (16, "eager", 1.0)]
    assert list(got.columns) == list(h.columns) and list(got.index) == [0, 1]


PEAKS = {"copy_bandwidth_Bps": 1e12}


def with_bytes(eager, compile_):
    rows = runs_table().assign(profiler_overhead=1.0, peak_memory_bytes=1.0, compile_latency_s=0.0)
    rows["dram_bytes_measured"] = [eager if v == "eager" else compile_ for v in rows["variant"]]
    return rows


def test_the_memory_traffic_part_from_measured_bytes():
    """Nsight Compute's DRAM bytes on both sides, 1.0e9 removed, at the measured 1e12 B/s:
    1.0 ms; the model's 0.75e9 B are exactly 25% off (no note), 1.01e9 more than 25%."""
    runs = with_bytes(1.2e9, 0.2e9)
    h = headline.table(runs, tables.speedups(runs), PEAKS).set_index("variant").loc["compile"]
    assert (h["traffic_source"], h["traffic_bytes"], h["traffic_bytes_model"]) == ("measured", 1.0e9, 0.75e9)
    assert h["traffic_ms"] == pytest.approx(1.0) and h["kernels_saved_ms"] == pytest.approx(0.5)
    assert h["traffic_bandwidth"] == "measured copy bandwidth" and h["traffic_note"] == ""
    runs = with_bytes(1.21e9, 0.2e9)
    h = headline.table(runs, tables.speedups(runs), PEAKS).set_index("variant").loc["compile"]
    assert h["traffic_note"].startswith("Nsight Compute measured 1.01e+03 MB removed, the cost model counts 750 MB")


def test_the_memory_traffic_part_from_the_model_and_without_bytes():
    runs = with_bytes(float("nan"), float("nan"))
    h = headline.table(runs, tables.speedups(runs), PEAKS).set_index("variant").loc["compile"]
    assert (h["traffic_source"], h["traffic_ms"], h["traffic_bytes"]) == ("modelled", pytest.approx(0.75), 0.75e9)
    none = runs.assign(bytes_unfused=float("nan"), bytes_fused=float("nan"))
    h = headline.table(none, tables.speedups(none), PEAKS).set_index("variant").loc["compile"]
    assert (h["traffic_source"], h["traffic_ms"], h["traffic_bandwidth"]) == ("none", 0.0, "none")
    assert h["kernels_saved_ms"] == pytest.approx(1.5)


def test_a_cpu_configuration_has_no_bound_and_its_kernel_time_is_the_operators():
    runs = runs_table().assign(device="cpu", profiler_overhead=1.0, peak_memory_bytes=1.0, compile_latency_s=0.0)
    runs["cpu_kernel_time_per_iter_ms"] = runs["gpu_time_per_iter_ms"] / 2
    h = headline.table(runs, tables.speedups(runs)).set_index("variant")
    assert h["bound"].isna().all()
    assert (h.loc["eager", "kernel_ms"], h.loc["compile", "kernel_ms"]) == (1.0, 0.25)
    gpu = record()
    assert set(gpu["bound"]) <= {"host", "gpu"} and gpu["bound"].notna().all()


def test_the_measured_bytes_removed_as_a_range():
    row = {"traffic_source": "measured", "traffic_ms": 1.0, "traffic_bytes": 1.0e9, "traffic_note": "earlier"}
    sp = {"bytes_removed_low": 0.8e9, "bytes_removed_high": 1.2e9, "bytes_regime": "near or below L2"}
    got = headline.traffic_spread(sp, row)
    assert got == {"traffic_bytes_low": 0.8e9, "traffic_bytes_high": 1.2e9, "traffic_ms_low": pytest.approx(0.8),
                   "traffic_ms_high": pytest.approx(1.2),
                   "traffic_note": "earlier; the working set is near or below L2: the DRAM bytes removed lie between "
                                   "800 and 1.2e+03 MB (cold and steady-state iterations), 1e+03 MB being the steady "
                                   "median"}
    assert "traffic_note" not in headline.traffic_spread({**sp, "bytes_regime": "above L2"}, row)
    for s, r in ((sp, {**row, "traffic_source": "modelled"}), ({**sp, "bytes_removed_low": float("nan")}, row),
                 ({**sp, "bytes_removed_high": float("nan")}, row), ({}, row)):
        got = headline.traffic_spread(s, r)
        assert list(got) == ["traffic_bytes_low", "traffic_bytes_high"] and all(map(math.isnan, got.values()))


def test_the_t_quantile_is_the_table_and_between_its_rows():
    """core.ratios.t95, which the headline's interval and the runner's pair CI share: the
    standard table's 95% quantiles at tabled df (df 2: 4.303, df 4: 2.776, the intervals
    above use them), the next lower row between rows (df 11: row 10's 2.228, wider than the
    exact 2.201), 1.980 past 120, none below 1 df."""
    from fusionlab.core.ratios import t95
    assert (t95(1), t95(2), t95(4), t95(30), t95(120)) == (12.706, 4.303, 2.776, 2.042, 1.980)
    assert (t95(11), t95(2.5), t95(10_000)) == (2.228, 4.303, 1.980) and math.isinf(t95(0.5))
