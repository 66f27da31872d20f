"""The speedup breakdown (analysis.sweep.decompose) at the edges a careless change crosses:
a value that is not a number, a table without a device or traced column, an eager GPU
time of 0 or under 1 ms, a total of 0, a variant wall time of 0, a missing key value,
configurations the loop skips, the speedups table's columns merged in, and the tables'
exact columns. The runs are test_decompose's (eager W 3.0, G 2.0, H 1.0, R 0; compile
W 1.0, G 0.5, H 0.25, R 0.25; 0.75e9 bytes saved by the model; 1e12 B/s copy bandwidth)."""
import numpy as np
import pandas as pd
import pytest

from fusionlab.analysis.sweep import decompose, tables
from test_decompose import PEAKS, run, runs_table

KEYS = list(tables.GROUP)
WIDE = KEYS + ["variant", "host", "traffic", "kernels", "remainder", "total", "bandwidth", "saved_bytes",
               "bytes_source"] + [f"{s}_{c}" for c in decompose.CONTEXT for s in ("eager", "variant")] + \
    ["speedup_wall"]
LONG = KEYS + ["variant", "part", "label", "saved_ms", "share", "eager_ms", "variant_ms"]


def variant_runs(variant, n=3, **m):
    return [run(variant, i, **m) for i in range(n)]


def test_a_value_that_is_not_a_number_is_left_out_of_the_median():
    g = pd.DataFrame({"x": [1.0, "n/a", 4.0], "y": [None, None, None]})
    assert decompose._med(g, "x") == 2.5           # the median of 1.0 and 4.0
    assert np.isnan(decompose._med(g, "y")) and np.isnan(decompose._med(g, "absent"))


def test_a_table_without_a_device_column_is_read_as_a_gpu_run():
    """G is the kernels' time, not the CPU operators' (0.5 here): H = 1.5 - (3.5 - 3.0) = 1.0."""
    g = pd.DataFrame([{"wall_time_per_iter_ms": 3.0, "traced_wall_time_per_iter_ms": 3.5,
                       "gpu_time_per_iter_ms": 2.0, "cpu_kernel_time_per_iter_ms": 0.5,
                       "idle_host_wait_per_iter_ms": 1.5}])
    s = decompose.side(g)
    assert (s["wall_ms"], s["gpu_ms"], s["host_ms"], s["remainder_ms"]) == (3.0, 2.0, 1.0, 0.0)


def test_without_a_traced_wall_time_no_profiler_cost_is_taken_off():
    """H = host wait 0.75 itself (not 0.75 - 1.0 clipped to 0); R = 3.0 - 2.0 - 0.75."""
    g = pd.DataFrame([{"device": "cuda", "wall_time_per_iter_ms": 3.0, "gpu_time_per_iter_ms": 2.0,
                       "idle_host_wait_per_iter_ms": 0.75, "traced_wall_time_per_iter_ms": np.nan}])
    s = decompose.side(g)
    assert (s["host_ms"], s["remainder_ms"]) == (0.75, 0.25)


def test_measured_bytes_on_one_side_only_fall_back_to_the_model():
    model = {"bytes_unfused": 1.5e9, "bytes_fused": 0.75e9}
    assert decompose.saved_bytes(model, {"dram_bytes_measured": 0.5e9}) == (0.75e9, "model")
    assert decompose.saved_bytes({**model, "dram_bytes_measured": 2.0e9}, {}) == (0.75e9, "model")
    assert decompose.saved_bytes({**model, "dram_bytes_measured": 2.0e9}, {"dram_bytes_measured": 0.5e9}) == \
        (1.5e9, "measured")


def side_of(wall, gpu, host):
    return {"wall_ms": wall, "gpu_ms": gpu, "host_ms": host, "remainder_ms": wall - gpu - host,
            "bytes_unfused": 1.5e9, "bytes_fused": 0.75e9, "dram_bytes_measured": np.nan}


def test_an_eager_gpu_time_of_0_gives_no_bandwidth_of_its_own():
    parts, source = decompose._parts(side_of(3.0, 0.0, 1.0), side_of(1.0, 0.0, 0.25), None)
    assert source == "no byte counts"
    assert (parts["traffic"], parts["kernels"], parts["host"], parts["total"]) == (0.0, 0.0, 0.75, 2.0)


def test_an_eager_gpu_time_under_1_ms_gives_its_own_bandwidth():
    """Eager moved 1.5e9 B in 0.5 ms (3e12 B/s): the 0.75e9 B removed take 0.25 ms, within
    the 0.375 ms of GPU time saved; kernels 0.125."""
    parts, source = decompose._parts(side_of(3.0, 0.5, 1.0), side_of(1.0, 0.125, 0.25), None)
    assert source == "eager's achieved bandwidth"
    assert parts["traffic"] == pytest.approx(0.25, abs=1e-12)
    assert parts["kernels"] == pytest.approx(0.125, abs=1e-12)


def test_the_wide_and_long_tables_have_their_columns_when_no_variant_ran():
    eager = runs_table()
    eager = eager[eager["variant"] == "eager"]
    wide = decompose.breakdown_wide(eager, peaks=PEAKS)
    assert wide.empty and list(wide.columns) == WIDE
    long = decompose.breakdown(eager, peaks=PEAKS)
    assert long.empty and list(long.columns) == LONG + ["speedup_wall", "bandwidth", "bytes_source"]


def test_the_wide_tables_columns_in_order_and_its_counts():
    wide = decompose.breakdown_wide(runs_table(), peaks=PEAKS)
    assert list(wide.columns) == WIDE
    r = wide.iloc[0]
    assert (r["eager_kernels_per_iter"], r["variant_kernels_per_iter"]) == (8, 2)


def test_a_total_of_0_has_no_shares():
    """A variant as fast as eager (W 3.0) whose parts pull both ways: G 1.0 (1.0 saved:
    traffic 0.75, kernels 0.25), H 1.0 (host 0), R 1.0 (remainder -1.0)."""
    extra = variant_runs("same_time", wall_time_per_iter_ms=3.0, traced_wall_time_per_iter_ms=3.5,
                         gpu_time_per_iter_ms=1.0, idle_host_wait_per_iter_ms=1.5)
    long = decompose.breakdown(runs_table(extra), peaks=PEAKS)
    g = long[long["variant"] == "same_time"].set_index("part")
    assert g.loc["total", "saved_ms"] == 0.0 and g.loc["remainder", "saved_ms"] == -1.0
    assert g.loc["traffic", "saved_ms"] == pytest.approx(0.75, abs=1e-12)
    assert g["share"].isna().all()


def test_a_variant_wall_time_of_0_has_no_speedup():
    extra = variant_runs("instant", wall_time_per_iter_ms=0.0, traced_wall_time_per_iter_ms=0.0,
                         gpu_time_per_iter_ms=0.0, idle_host_wait_per_iter_ms=0.0)
    r = decompose.breakdown_wide(runs_table(extra), peaks=PEAKS).set_index("variant").loc["instant"]
    assert r["total"] == 3.0 and np.isnan(r["speedup_wall"])


def test_a_configuration_without_eager_or_wall_time_is_skipped_and_the_next_kept():
    """In key order: batch 128 (no eager) first, then at batch 256 a variant `aaa` whose
    runs have no wall time, then compile: only compile's row."""
    extra = [run("compile", 0, batch=128, wall_time_per_iter_ms=1.0, gpu_time_per_iter_ms=0.5),
             *variant_runs("aaa", wall_time_per_iter_ms=np.nan, gpu_time_per_iter_ms=0.5)]
    wide = decompose.breakdown_wide(runs_table(extra), peaks=PEAKS)
    assert list(zip(wide["variant"], wide["batch"])) == [("compile", 256)]


def test_rows_in_key_order_whatever_the_runs_order():
    zz = pd.DataFrame(variant_runs("zz_variant", wall_time_per_iter_ms=2.0, traced_wall_time_per_iter_ms=2.0,
                                   gpu_time_per_iter_ms=1.0, idle_host_wait_per_iter_ms=0.0))
    wide = decompose.breakdown_wide(pd.concat([zz, runs_table()], ignore_index=True), peaks=PEAKS)
    assert list(wide["variant"]) == ["compile", "zz_variant"]


def test_a_missing_key_value_still_finds_its_eager():
    """A NaN dtype on eager and compile alike (tables.speedups gives it a row too)."""
    r = decompose.breakdown_wide(runs_table().assign(dtype=np.nan), peaks=PEAKS)
    assert len(r) == 1 and np.isnan(r["dtype"].iloc[0])
    assert (r["total"].iloc[0], r["host"].iloc[0]) == (2.0, 0.75)


def speedups_for(variants):
    return pd.DataFrame([{**{k: runs_table().iloc[0][k] for k in KEYS}, "variant": v, "speedup_wall_lo": lo,
                          "speedup_wall_hi": hi, "noisy": noisy, "speedup_paired": paired, "repeats": 3}
                         for v, lo, hi, noisy, paired in variants])


def test_the_speedups_tables_interval_and_noise_flag_are_merged_in():
    """compile has a speedups row; cuda_graph none (kept, NaN); a row of a variant not
    broken down adds none."""
    extra = variant_runs("cuda_graph", wall_time_per_iter_ms=2.0, traced_wall_time_per_iter_ms=2.0,
                         gpu_time_per_iter_ms=1.0, idle_host_wait_per_iter_ms=0.0)
    sp = speedups_for([("compile", 2.5, 3.5, False, 2.75), ("not_run", 1.0, 1.5, True, 1.25)])
    wide = decompose.breakdown_wide(runs_table(extra), sp, PEAKS)
    assert list(wide.columns) == WIDE + ["speedup_wall_lo", "speedup_wall_hi", "noisy", "speedup_paired"]
    assert list(wide["variant"]) == ["compile", "cuda_graph"]
    c = wide.iloc[0]
    assert (c["speedup_wall"], c["speedup_wall_lo"], c["speedup_wall_hi"], c["noisy"], c["speedup_paired"]) == \
        (3.0, 2.5, 3.5, False, 2.75)
    assert wide.iloc[1][["speedup_wall_lo", "speedup_wall_hi", "speedup_paired"]].isna().all()


def test_the_long_table_carries_the_labels_interval_and_bandwidth():
    sp = speedups_for([("compile", 2.5, 3.5, True, 2.75)])
    long = decompose.breakdown(runs_table(), sp, PEAKS)
    assert list(long.columns) == LONG + ["speedup_wall", "speedup_wall_lo", "speedup_wall_hi", "noisy",
                                         "bandwidth", "bytes_source"]
    assert list(long["part"]) == [*decompose.PARTS, "total"]
    assert list(long["label"]) == [decompose.LABELS[p] for p in long["part"]]
    assert set(long["speedup_wall_lo"]) == {2.5} and set(long["speedup_wall_hi"]) == {3.5}
    assert set(long["noisy"]) == {True} and set(long["speedup_wall"]) == {3.0}
    assert set(long["bandwidth"]) == {"measured copy bandwidth"} and set(long["bytes_source"]) == {"model"}


def test_wide_from_long_columns_and_a_missing_part():
    """compile (total 2.0) and cuda_graph (total 1.0) back to one row each; cuda_graph's
    kernels row taken out of the long table: its row stays, kernels NaN."""
    extra = variant_runs("cuda_graph", wall_time_per_iter_ms=2.0, traced_wall_time_per_iter_ms=2.0,
                         gpu_time_per_iter_ms=1.0, idle_host_wait_per_iter_ms=0.0)
    long = decompose.breakdown(runs_table(extra), peaks=PEAKS)
    long = long[~((long["variant"] == "cuda_graph") & (long["part"] == "kernels"))]
    wide = decompose.wide_from_long(long)
    assert list(wide.columns) == KEYS + ["variant", "total", "eager_wall_ms", "speedup_wall", *decompose.PARTS]
    assert list(wide.index) == [0, 1] and list(wide["variant"]) == ["compile", "cuda_graph"]
    assert list(wide["total"]) == [2.0, 1.0] and list(wide["eager_wall_ms"]) == [3.0, 3.0]
    assert list(wide["speedup_wall"]) == [3.0, 1.5]
    assert wide["kernels"].iloc[0] == pytest.approx(0.75, abs=1e-12) and np.isnan(wide["kernels"].iloc[1])
    assert decompose.wide_from_long(long.iloc[:0]).empty
