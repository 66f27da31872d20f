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


def test_a_paired_variant_without_an_eager_run_of_its_own():
    """The speedup and time saved from eager beside it (0.06 x 5.0 = 0.3 ms), no parts."""
    h = record(paired_runs([4.8, 5.0, 5.3], eager=False))
    assert (h["estimator"], h["speedup"], h["reference"]) == ("paired", 5.0, headline.BESIDE_ONLY)
    assert (h["eager_wall_ms"], h["saved_ms"]) == approx((0.3, 0.24))
    assert all(math.isnan(v) for v in parts(h).values()) and not h["host_skewed"]
    assert h["break_even_iters"] == pytest.approx(12e3 / 0.24)


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
    for c, add in (("wall_time_per_iter_ms", 3.0), ("traced_wall_time_per_iter_ms", 3.0), ("gpu_time_per_iter_ms", 2.0)):
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
