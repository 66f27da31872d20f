"""A headline record (analysis.sweep.headline.table) at the boundaries of what it reads:
the eager time a speedup is compared with and the parts of the time saved, the memory
term's bandwidth and bytes, the interval across processes of unequal repeats, and the
fields carried from the speedups table; every value worked out by hand from
test_decompose's runs (eager 3.0 ms, kernels 2.0, host 1.0; compile 1.0, 0.5, 0.5;
bytes 1.5e9 unfused, 0.75e9 fused) or test_headline's paired runs (eager 0.3 ms beside
compile 0.06 ms)."""
import math

import numpy as np
import pandas as pd
import pytest

from fusionlab.analysis.sweep import headline, tables
from test_decompose import runs_table
from test_headline import paired_runs

PEAKS = {"copy_bandwidth_Bps": 1e12}


def record(runs, peaks=None, sp=None, variant="compile"):
    runs = runs.assign(profiler_overhead=1.0, peak_memory_bytes=1.0,
                       compile_latency_s=[0.0 if v == "eager" else 12.0 for v in runs["variant"]])
    h = headline.table(runs, tables.speedups(runs) if sp is None else sp, peaks).set_index("variant")
    return h.loc[variant]


def parts(h) -> dict:
    return {p: h[p] for p in headline.PARTS}


def approx(d):
    return pytest.approx(d, abs=1e-12)


def test_a_paired_speedup_compares_with_eager_beside_it():
    """4.0 in each process: eager beside compile 0.06 x 4.0 = 0.24 ms, 0.06 ms faster than
    eager in its own processes (0.3): the host-speed part -0.06; host 0.25 - 0.01 = 0.24;
    0.18 saved, its largest part of its sign (0.24) larger than it: none named."""
    h = record(paired_runs([4.0, 4.0, 4.0]))
    assert (h["eager_wall_ms"], h["eager_own_ms"], h["saved_ms"]) == approx((0.24, 0.3, 0.18))
    assert h["reference"] == "eager timed beside it"
    assert parts(h) == approx({"host_saved_ms": 0.24, "traffic_ms": 0.0, "kernels_saved_ms": 0.0,
                               "host_speed_ms": -0.06, "remainder_ms": 0.0})
    assert h["largest_part"] == "" and math.isnan(h["largest_part_ms"])
    assert h["break_even_iters"] == pytest.approx(12e3 / 0.18)


def test_an_unpaired_speedup_compares_with_eager_in_its_own_processes():
    h = record(runs_table())
    assert (h["reference"], h["eager_wall_ms"], h["eager_own_ms"], h["host_speed_ms"]) == (
        "eager in its own processes", 3.0, 3.0, 0.0)


def test_an_unpaired_eager_time_is_eagers_own_median_exactly():
    """Eager 0.3 ms, compile 0.07 ms in their own processes: eager_wall_ms is 0.3 itself
    (0.07 x (0.3 / 0.07) would be 0.30000000000000004)."""
    runs = paired_runs([None, None, None])
    runs.loc[runs["variant"] == "compile", "wall_time_per_iter_ms"] = 0.07
    h = headline.table(runs, tables.speedups(runs)).set_index("variant").loc["compile"]
    assert (h["estimator"], h["speedup"]) == ("across processes", 0.3 / 0.07)
    assert (h["eager_wall_ms"], h["saved_ms"], h["host_speed_ms"]) == (0.3, 0.3 - 0.07, 0.0)


def test_a_speedups_table_without_the_paired_speedup_quotes_the_processes_median():
    runs = paired_runs([4.8, 5.0, 5.3])
    h = headline.table(runs, tables.speedups(runs).drop(columns=["speedup_paired"])).set_index("variant")
    assert (h.loc["compile", "estimator"], h.loc["compile", "speedup"]) == ("paired", 5.0)


def test_a_paired_variant_without_an_eager_run_of_its_own():
    """The speedup and time saved from eager beside it (0.06 x 5.0 = 0.3 ms), no parts."""
    h = record(paired_runs([4.8, 5.0, 5.3], eager=False))
    assert (h["estimator"], h["speedup"], h["reference"]) == ("paired", 5.0, headline.BESIDE_ONLY)
    assert (h["eager_wall_ms"], h["saved_ms"]) == approx((0.3, 0.24))
    assert all(math.isnan(v) for v in parts(h).values()) and not h["host_skewed"]
    assert h["break_even_iters"] == pytest.approx(12e3 / 0.24)


def test_a_variant_without_eager_or_a_paired_speedup_has_no_speedup():
    runs = runs_table()
    h = record(runs[runs["variant"] == "compile"])
    assert "paired_speedup" not in runs and h["wall_ms"] == 1.0
    assert pd.isna(h["speedup"]) and pd.isna(h["estimator"]) and pd.isna(h["saved_ms"])


def test_the_remainder_is_the_idle_time_each_side_leaves():
    """Kernel wait 0.2 ms (eager) and 0.1 ms (compile): host 1.0 - 0.2 = 0.8 and 0.5 - 0.1
    = 0.4; remainder 0.2 - 0.1 = 0.1."""
    runs = runs_table()
    runs["idle_kernel_wait_per_iter_ms"] = [0.2 if v == "eager" else 0.1 for v in runs["variant"]]
    h = record(runs)
    assert parts(h) == approx({"host_saved_ms": 0.4, "traffic_ms": 1.0, "kernels_saved_ms": 0.5,
                               "host_speed_ms": 0.0, "remainder_ms": 0.1})
    assert (h["kernel_wait_ms"], h["host_ms"]) == approx((0.1, 0.4))


def test_a_side_without_kernel_time_has_no_host_time_to_subtract():
    """Compile's kernel time missing: its host time is none, counted as 0 in the host part
    (eager's 1.0), and the kernel parts are unknown."""
    runs = runs_table()
    runs.loc[runs["variant"] == "compile", "gpu_time_per_iter_ms"] = np.nan
    h = record(runs)
    assert (h["host_saved_ms"], h["traffic_ms"], h["traffic_source"]) == (1.0, 0.0, "none")
    assert math.isnan(h["kernels_saved_ms"]) and math.isnan(h["remainder_ms"]) and math.isnan(h["kernel_speedup"])
    assert (h["largest_part"], h["largest_part_ms"]) == ("host_saved_ms", 1.0)
    assert h["host_bound"] is not None and not h["host_bound"]   # eager's share 1/3, compile's unknown
    assert pd.isna(h["bound"])


# --- the memory term --------------------------------------------------------------------

def test_eager_with_no_kernel_time_gives_no_bandwidth():
    runs = runs_table()
    runs.loc[runs["variant"] == "eager", "gpu_time_per_iter_ms"] = 0.0
    h = record(runs)
    assert (h["traffic_source"], h["traffic_bandwidth"], h["traffic_ms"]) == ("none", "none", 0.0)
    assert (h["host_saved_ms"], h["kernels_saved_ms"]) == (2.5, -0.5)


def test_eagers_achieved_bandwidth_under_a_millisecond_of_kernels():
    """All times x 0.25: eager moves 1.5e9 B in 0.5 ms, 3e12 B/s; 0.75e9 B removed: 0.25 ms."""
    runs = runs_table()
    for c in ("wall_time_per_iter_ms", "traced_wall_time_per_iter_ms", "gpu_time_per_iter_ms",
              "idle_host_wait_per_iter_ms"):
        runs[c] = runs[c] * 0.25
    h = record(runs)
    assert (h["traffic_source"], h["traffic_bandwidth"]) == ("modelled", "eager's achieved bandwidth")
    assert (h["traffic_ms"], h["kernels_saved_ms"], h["traffic_bytes"]) == approx((0.25, 0.125, 0.75e9))


def with_bytes(eager, compile_, **cols):
    runs = runs_table().assign(**cols)
    runs["dram_bytes_measured"] = [eager if v == "eager" else compile_ for v in runs["variant"]]
    return runs


def test_measured_bytes_at_eagers_achieved_bandwidth():
    """No copy bandwidth measured: 1.0e9 B removed at eager's 1.5e9 B / 2.0 ms = 1.333 ms
    (measured bytes are not capped at the kernel time saved)."""
    h = record(with_bytes(1.2e9, 0.2e9))
    assert (h["traffic_source"], h["traffic_bandwidth"], h["traffic_bytes"]) == (
        "measured", "eager's achieved bandwidth", 1.0e9)
    assert (h["traffic_ms"], h["kernels_saved_ms"]) == approx((4 / 3, 1.5 - 4 / 3))
    none = record(with_bytes(1.2e9, 0.2e9, bytes_fused=np.nan))   # nor eager's bytes: no bandwidth
    assert (none["traffic_source"], none["traffic_bandwidth"], none["traffic_ms"]) == ("none", "none", 0.0)
    assert math.isnan(none["traffic_bytes"])


def test_modelled_traffic_is_never_below_zero_nor_above_the_kernel_time_saved():
    """Compile 3.0 ms slower, its kernels 2.5 ms: 0.5 ms of kernel time added, no traffic
    saved in it; the model's bytes added (0.5e9 B unfused against 0.75e9 fused): none."""
    runs = runs_table()
    slow = runs["variant"] == "compile"
    for c, add in (("wall_time_per_iter_ms", 3.0), ("traced_wall_time_per_iter_ms", 3.0),
                   ("gpu_time_per_iter_ms", 2.0)):
        runs.loc[slow, c] += add
    h = record(runs, PEAKS)
    assert (h["saved_ms"], h["traffic_source"], h["traffic_ms"], h["kernels_saved_ms"]) == (-1.0, "modelled", 0.0, -0.5)
    more = record(runs_table().assign(bytes_unfused=0.5e9), PEAKS)          # the model adds 0.25e9 B
    assert (more["traffic_source"], more["traffic_ms"], more["traffic_bytes"]) == ("modelled", 0.0, -0.25e9)
    assert more["kernels_saved_ms"] == 1.5


def test_the_disagreement_note_quotes_megabytes_to_three_figures():
    """101.5e6 B measured, 401.5e6 B modelled: 102 and 402 MB (ties to even)."""
    h = record(with_bytes(301.5e6, 200e6, bytes_fused=1098.5e6), PEAKS)
    assert h["traffic_note"] == ("Nsight Compute measured 102 MB removed, the cost model counts 402 MB: they differ "
                                 "by more than 25%; the measured bytes are used")
    assert h["traffic_ms"] == pytest.approx(0.1015)


# --- the interval across processes -------------------------------------------------------

def test_unequal_repeats_give_the_range_of_the_fewer():
    """Eager 2.75, 3.0, 3.5 ms against compile 0.9375, 1.0: a range of 2, eager's extremes
    over compile's."""
    runs = runs_table()
    runs = runs[(runs["variant"] == "eager") | (runs["repeat"] < 2)]
    h = record(runs)
    assert (h["interval"], h["speedup_lo"], h["speedup_hi"]) == ("range of 2", 2.75 / 1.0, 3.5 / 0.9375)
    assert h["repeats"] == 2


def test_a_variant_without_wall_times_has_no_interval():
    runs = runs_table()
    runs.loc[runs["variant"] == "compile", "wall_time_per_iter_ms"] = np.nan
    h = record(runs)
    assert (h["estimator"], h["interval"], h["verdict"]) == ("across processes", "", "")
    assert math.isnan(h["speedup_lo"]) and math.isnan(h["speedup"])


# --- what the record carries from the speedups table and the runs -------------------------

def test_the_fields_carried_from_the_speedups_table():
    runs = paired_runs([4.8, 5.0, 5.3])
    sp = tables.speedups(runs)
    sp["noisy"], sp["noisy_paired"], sp["host_moved"], sp["kernels_per_iter"] = True, False, True, 7.0
    h = headline.table(runs, sp).set_index("variant")
    c, e = h.loc["compile"], h.loc["eager"]
    assert (c["noisy"], c["host_moved"], c["kernels_per_iter"], c["compile_s"], c["repeats"]) == (
        False, True, 7.0, 3.0, 3)                                   # paired: noisy_paired is the one
    assert (e["estimator"], e["speedup"], e["reference"], e["eager_wall_ms"], e["eager_own_ms"]) == (
        "reference", 1.0, "itself", 0.3, 0.3)
    assert bool(e["noisy"]) is False and math.isnan(e["compile_s"])   # eager: paired (1.0) beside its variants
    unpaired = runs_table().assign(profiler_overhead=1.0, peak_memory_bytes=1.0, compile_latency_s=0.0)
    sp = tables.speedups(unpaired).assign(noisy=True, noisy_paired=False)
    assert headline.table(unpaired, sp).set_index("variant").loc["compile", "noisy"]


def test_a_value_that_is_not_a_number_is_left_out_of_a_median():
    runs = runs_table()
    runs["launch_overhead_ratio"] = pd.Series([0.5, 0.2, "n/a", 0.4, 0.6, "n/a"], dtype=object)
    h = record(runs)   # compile's 0.2, 0.4 (median 0.3); eager's 0.5, 0.6 (median 0.55)
    assert h["traced_launch_overhead_ratio"] == pytest.approx(0.3)
    assert record(runs, variant="eager")["traced_launch_overhead_ratio"] == pytest.approx(0.55)


def test_a_configuration_without_an_ok_run_keeps_its_row_without_numbers():
    runs = runs_table()
    runs.loc[runs["variant"] == "compile", "status"] = "error"
    h = record(runs)
    assert (h["status"], h["repeats"], h["host_skewed"]) == ("error", 0, False)
    assert pd.isna(h["speedup"]) and pd.isna(h["wall_ms"]) and pd.isna(h["estimator"])
    assert record(runs, variant="eager")["wall_ms"] == 3.0          # the rows after it made all the same


def test_the_spread_pooled_over_the_sweeps_paired_configurations():
    """Batch 8 and 16: two processes each, log values (-0.1, 0.3) and (0.1, 0.5), squares
    0.08 each: sd sqrt(0.16 / 2) over 2 df and 2 configurations; batch 32, one process
    (2.0): 2.0 x exp(-+4.303 sd); batch 8: exp(0.1 -+ 4.303 sd / sqrt 2). Eager's own
    processes (a paired speedup of 1.0 each) pool nothing."""
    groups = {8: [math.exp(-0.1), math.exp(0.3)], 16: [math.exp(0.1), math.exp(0.5)], 32: [2.0]}
    runs = pd.concat([paired_runs(v).assign(batch=b) for b, v in groups.items()], ignore_index=True)
    runs.loc[runs["variant"] == "eager", "paired_speedup"] = 1.0
    h = headline.table(runs, tables.speedups(runs)).set_index(["variant", "batch"]).loc["compile"]
    sd = math.sqrt(0.08)
    assert h.loc[32, "interval"] == "95% t over 1 process, spread pooled over 2 configurations"
    assert (h.loc[32, "speedup_lo"], h.loc[32, "speedup_hi"]) == pytest.approx(
        (2.0 * math.exp(-4.303 * sd), 2.0 * math.exp(4.303 * sd)), rel=1e-12)
    assert h.loc[8, "interval"] == "95% t over 2 processes, spread pooled over 2 configurations"
    assert (h.loc[8, "speedup_lo"], h.loc[8, "speedup_hi"]) == pytest.approx(
        (math.exp(0.1 - 4.303 * 0.2), math.exp(0.1 + 4.303 * 0.2)), rel=1e-12)


def test_a_paired_speedup_on_a_slow_host_with_one_side_host_bound_is_skewed():
    """Eager 0.3 ms with 0.05 of kernels (host-bound, host share 0.83), compile 0.06 ms
    with 0.05 (GPU-bound): skewed once the host ran slower than HOST_SLOW x its best."""
    runs = paired_runs([4.8, 5.0, 5.3])
    for slowdown, skewed in ((1.31, True), (1.3, False)):
        sp = tables.speedups(runs).assign(host_slowdown=slowdown)
        h = headline.table(runs, sp).set_index("variant").loc["compile"]
        assert (h["host_skewed"], h["bound"], h["host_bound"], h["kernel_speedup"]) == (skewed, "gpu", True, 1.0)


def test_the_medians_and_notes_carried_from_the_runs():
    runs = runs_table().assign(copy_bandwidth_frac=1.5, flops_frac=0.5, copy_bandwidth_frac_measured=0.4,
                               gpu_busy_fraction=0.9, bound=["host", "gpu", "gpu", "host", "host", "gpu"])
    h = record(runs)   # compile's repeats: bound gpu, host, gpu
    assert (h["launches_per_iter"], h["bandwidth_frac"], h["flops_frac"], h["bandwidth_frac_measured"]) == (
        2.0, 1.5, 0.5, 0.4)
    assert (h["traced_wall_ms"], h["traced_busy_share"], h["traced_bound"]) == (1.25, 0.9, "gpu")
    assert h["ceiling_note"].startswith("1.50x the measured copy bandwidth by the model's bytes, 0.40x by Nsight")
    cpu = record(runs.assign(device="cpu", copy_bandwidth_frac_measured=np.nan))
    assert cpu["ceiling_note"].endswith("the cost model counts bytes that stay in the CPU's caches between operators")
    assert record(runs_table())["traced_bound"] is None
    small = record(runs.assign(bytes_fused=16e6, flops_frac=1.5, copy_bandwidth_frac_measured=np.nan))
    assert small["ceiling_note"] == (
        "1.50x the measured copy bandwidth: its 16 MB per iteration fit in L2, so the data stay resident between "
        "kernels and iterations; 1.50x the measured matmul rate: the kernels take a faster path than the measured "
        "matmul (another precision such as TF32, or another kernel)")


def test_the_tables_columns_order_and_index():
    runs = runs_table().assign(profiler_overhead=1.0, peak_memory_bytes=1.0, compile_latency_s=0.0)
    h = headline.table(runs, tables.speedups(runs))
    assert list(h.columns) == list(headline.COLUMNS) and list(h.index) == [0, 1]
    assert list(h["variant"]) == ["compile", "eager"]


def test_an_older_speedups_table_without_the_later_columns():
    runs = runs_table().assign(profiler_overhead=1.0, peak_memory_bytes=1.0, compile_latency_s=0.0)
    sp = tables.speedups(runs).drop(columns=["host_moved", "compilation_latency_s", "kernels_per_iter"])
    h = headline.table(runs, sp).set_index("variant").loc["compile"]
    assert h["host_moved"] is False or h["host_moved"] == 0
    assert math.isnan(h["compile_s"]) and math.isnan(h["kernels_per_iter"]) and h["speedup"] == 3.0


def test_a_not_run_row_takes_its_setting_from_the_plan_or_a_recorded_configuration():
    sp = pd.DataFrame([{"model": "m", "batch": 8, "size": "default", "mode": "inference", "dtype": "float32",
                        "backend": "nsys", "device": "cuda", "variant": "eager", "dim": 512.0, "speedup": 1.0}])
    columns = list(tables.GROUP) + ["dim"]
    plan = {"model": "m", "variant": "compile", "batch": 8, "size": "", "mode": "inference", "dtype": "float32"}
    base = {"variant": "compile", "status": headline.NOT_RUN, "repeats": 0, "noisy": False, "host_moved": False,
            "host_skewed": False}
    assert headline.not_run_rows([plan], sp, columns) == [
        {"model": "m", "batch": 8, "size": "default", "mode": "inference", "dtype": "float32", "backend": "nsys",
         "device": "cuda", "dim": 512.0, **base}]
    other = dict(plan, batch=16, size="-dim1024", backend="torch", device="cpu", sizes={"dim": 1024})
    got = headline.not_run_rows([other], sp, columns)[0]
    assert {k: got[k] for k in columns} == {"model": "m", "batch": 16, "size": "dim1024", "mode": "inference",
                                            "dtype": "float32", "backend": "torch", "device": "cpu", "dim": 1024}
    for k in ("model", "mode", "dtype"):                          # no recorded configuration of this one
        got = headline.not_run_rows([dict(plan, **{k: "x"})], sp, columns)[0]
        assert (got[k], got["backend"] != got["backend"], got["dim"] != got["dim"]) == ("x", True, True)
    got = headline.not_run_rows([dict(plan, size="dim1024")], sp, columns)[0]
    assert got["size"] == "dim1024" and got["backend"] != got["backend"]
    assert headline.not_run_rows([plan], sp.drop(columns="mode"), columns)[0]["backend"] != "nsys"


def test_the_records_come_in_key_order_numbered_from_0():
    """The rows sorted by configuration and variant whatever the speedups table's order,
    their index 0, 1, ... (a reader's h.loc[0] is the first row)."""
    runs = runs_table().assign(profiler_overhead=1.0, peak_memory_bytes=1.0, compile_latency_s=0.0)
    sp = tables.speedups(runs)
    h = headline.table(runs, sp.iloc[::-1])
    assert list(h.index) == list(range(len(h))) and list(h["variant"]) == sorted(sp["variant"])
    assert h.loc[0, "variant"] == "compile"
