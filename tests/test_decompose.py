"""The speedup breakdown (analysis.sweep.decompose) on hand-made tables whose answers are known
exactly: the parts are the module doc's formulas and add up to the wall-time change."""
import pandas as pd
import pytest

from fusionlab.analysis.sweep import decompose, tables

BASE = {"model": "m", "batch": 256, "size": "default", "mode": "inference", "dtype": "float32", "backend": "nsys",
        "device": "cuda", "status": "ok", "reason": None,
        "bytes_unfused": 1.5e9, "bytes_fused": 0.75e9}
PEAKS = {"copy_bandwidth_Bps": 1e12, "matmul_flops": 5e13}


def run(variant, repeat, **m):
    return {**BASE, "variant": variant, "repeat": repeat, **m}


def runs_table(extra=()):
    """eager: W 3.0 (traced 3.5), G 2.0, host wait 1.5 -> H = 1.5 - (3.5 - 3.0) = 1.0, R = 0.
    compile: W 1.0 (traced 1.25), G 0.5, host wait 0.5 -> H = 0.25, R = 0.25.
    The medians of three repeats (the outer ones differ)."""
    rows = []
    for i, d in enumerate((-0.25, 0.0, 0.5)):   # the middle repeat carries the median
        rows.append(run("eager", i, wall_time_per_iter_ms=3.0 + d, traced_wall_time_per_iter_ms=3.5 + d,
                        gpu_time_per_iter_ms=2.0 + d, idle_host_wait_per_iter_ms=1.5 + d,
                        kernels_per_iter=8, launch_calls_per_iter=8))
        rows.append(run("compile", i, wall_time_per_iter_ms=1.0 + d / 4, traced_wall_time_per_iter_ms=1.25 + d / 4,
                        gpu_time_per_iter_ms=0.5 + d / 4, idle_host_wait_per_iter_ms=0.5 + d / 4,
                        kernels_per_iter=2, launch_calls_per_iter=2))
    rows += list(extra)
    return pd.DataFrame(rows)


def one(wide, variant="compile"):
    r = wide[wide["variant"] == variant]
    assert len(r) == 1
    return r.iloc[0]


def test_parts_by_hand_and_they_add_up():
    r = one(decompose.breakdown_wide(runs_table(), peaks=PEAKS))
    assert r["total"] == 2.0
    assert r["host"] == 0.75                       # 1.0 - 0.25
    assert r["traffic"] == pytest.approx(0.75, abs=1e-12)   # 0.75e9 B / 1e12 B/s, <= 1.5 ms GPU saved
    assert r["kernels"] == pytest.approx(0.75, abs=1e-12)   # 1.5 - 0.75
    assert r["remainder"] == -0.25                 # 0 - 0.25
    assert r["host"] + r["traffic"] + r["kernels"] + r["remainder"] == pytest.approx(r["total"], abs=1e-12)
    assert (r["eager_wall_ms"], r["eager_gpu_ms"], r["eager_host_ms"], r["eager_remainder_ms"]) == (3.0, 2.0, 1.0, 0.0)
    assert (r["variant_wall_ms"], r["variant_gpu_ms"], r["variant_host_ms"], r["variant_remainder_ms"]) == \
        (1.0, 0.5, 0.25, 0.25)
    assert r["speedup_wall"] == 3.0
    assert r["bandwidth"] == "measured copy bandwidth"
    assert (r["eager_launches_per_iter"], r["variant_launches_per_iter"]) == (8, 2)


def test_without_peaks_traffic_uses_eagers_own_bandwidth():
    r = one(decompose.breakdown_wide(runs_table(), peaks=None))
    # eager moved 1.5e9 B in 2.0 ms; 0.75e9 B of it removed -> 1.0 ms
    assert r["traffic"] == pytest.approx(1.0, abs=1e-12)
    assert r["kernels"] == pytest.approx(0.5, abs=1e-12)
    assert r["bandwidth"] == "eager's achieved bandwidth"


def test_traffic_is_capped_at_the_gpu_time_saved():
    extra = [run("cuda_graph", i, wall_time_per_iter_ms=2.0, traced_wall_time_per_iter_ms=2.0,
                 gpu_time_per_iter_ms=2.25, idle_host_wait_per_iter_ms=0.0,
                 kernels_per_iter=8, launch_calls_per_iter=1) for i in range(2)]
    r = one(decompose.breakdown_wide(runs_table(extra), peaks=PEAKS), "cuda_graph")
    assert r["traffic"] == 0.0                       # GPU time rose: no traffic saved
    assert r["kernels"] == -0.25
    assert r["host"] == 1.0
    assert r["remainder"] == 0.25                    # R: 0 - (2.0 - 2.25 - 0)
    assert r["total"] == 1.0
    assert r["host"] + r["traffic"] + r["kernels"] + r["remainder"] == r["total"]


def test_no_byte_counts_puts_all_gpu_time_in_kernels():
    t = runs_table().assign(bytes_unfused=float("nan"), bytes_fused=float("nan"))
    r = one(decompose.breakdown_wide(t, peaks=PEAKS))
    assert (r["traffic"], r["kernels"], r["bandwidth"]) == (0.0, 1.5, "no byte counts")


def test_host_time_is_never_negative_under_a_large_profiler_cost():
    t = runs_table()
    t.loc[t["variant"] == "compile", "traced_wall_time_per_iter_ms"] += 1.0   # overhead 1.25 > host wait 0.5
    r = one(decompose.breakdown_wide(t, peaks=PEAKS))
    assert r["variant_host_ms"] == 0.0
    assert r["host"] == 1.0 and r["remainder"] == -0.5
    assert r["host"] + r["traffic"] + r["kernels"] + r["remainder"] == pytest.approx(r["total"], abs=1e-12)


def test_cpu_backend_host_is_time_outside_operators():
    t = runs_table().assign(device="cpu", backend="torch", gpu_time_per_iter_ms=float("nan"),
                            idle_host_wait_per_iter_ms=float("nan"), launch_calls_per_iter=float("nan"))
    t["cpu_kernel_time_per_iter_ms"] = [1.5, 0.25, 2.0, 0.5, 2.5, 0.75]   # medians 2.0, 0.5
    r = one(decompose.breakdown_wide(t, peaks=None))
    assert (r["eager_host_ms"], r["variant_host_ms"]) == (1.0, 0.5)
    assert (r["host"], r["remainder"], r["total"]) == (0.5, 0.0, 2.0)
    assert r["traffic"] + r["kernels"] == 1.5


def test_runs_that_are_not_ok_and_missing_eager_get_no_breakdown():
    extra = [run("triton_kernel", 0, status="unsupported", wall_time_per_iter_ms=float("nan")),
             run("compile", 0, batch=512, wall_time_per_iter_ms=1.0, gpu_time_per_iter_ms=0.5)]
    w = decompose.breakdown_wide(runs_table(extra), peaks=PEAKS)
    assert list(w["variant"]) == ["compile"] and list(w["batch"]) == [256]


def test_long_table_parts_sum_to_total_and_extra_axes_flow_through(monkeypatch):
    monkeypatch.setattr(tables, "GROUP", tables.GROUP + ["dim"])
    a = runs_table().assign(dim=64)
    b = runs_table().assign(dim=128)
    b.loc[b["variant"] == "compile", "wall_time_per_iter_ms"] *= 2     # W 2.0 at dim 128
    long = decompose.breakdown(pd.concat([a, b], ignore_index=True), peaks=PEAKS)
    assert len(long) == 2 * 5 and "dim" in long
    for dim, g in long.groupby("dim"):
        parts = g[g["part"] != "total"].set_index("part")["saved_ms"]
        total = g.loc[g["part"] == "total", "saved_ms"].item()
        assert list(parts.index) == list(decompose.PARTS)
        assert parts.sum() == pytest.approx(total, abs=1e-12)
        assert g[g["part"] != "total"]["share"].sum() == pytest.approx(1.0)
        assert total == {64: 2.0, 128: 1.0}[dim]
    tot = long[(long["dim"] == 128) & (long["part"] == "total")].iloc[0]
    assert (tot["eager_ms"], tot["variant_ms"], tot["speedup_wall"]) == (3.0, 2.0, 1.5)
    wide = decompose.wide_from_long(long)
    assert set(decompose.PARTS) <= set(wide.columns) and len(wide) == 2


def test_one_colour_per_variant_in_the_sweeps_order():
    from fusionlab.analysis.report import style
    from fusionlab.experiments.catalog import variant_names
    style.use_variants(variant_names())
    colours = [style.variant_colour(v) for v in variant_names()]
    assert len(set(colours)) == len(colours) and style.variant_colour("eager") == "#000000"
    assert style.variant_order(["compile", "zzz_new", "eager"]) == ["eager", "compile", "zzz_new"]


def test_measured_bytes_on_both_sides_replace_the_model():
    # Nsight Compute's DRAM bytes: eager 2.0e9, compile 0.5e9 -> 1.5e9 B saved, 1.5 ms at
    # 1e12 B/s (all of the GPU time saved); one side measured alone: the model's 0.75e9 B
    t = runs_table()
    t["dram_bytes_measured"] = [2.0e9 if v == "eager" else 0.5e9 for v in t["variant"]]
    r = one(decompose.breakdown_wide(t, peaks=PEAKS))
    assert (r["saved_bytes"], r["bytes_source"]) == (1.5e9, "measured")
    assert (r["traffic"], r["kernels"]) == (pytest.approx(1.5, abs=1e-12), pytest.approx(0.0, abs=1e-12))
    t.loc[t["variant"] == "compile", "dram_bytes_measured"] = float("nan")
    r = one(decompose.breakdown_wide(t, peaks=PEAKS))
    assert (r["saved_bytes"], r["bytes_source"]) == (0.75e9, "model")


def test_without_host_wait_the_remainder_is_wall_minus_gpu():
    t = runs_table().assign(idle_host_wait_per_iter_ms=float("nan"))
    r = one(decompose.breakdown_wide(t, peaks=PEAKS))
    assert (r["eager_remainder_ms"], r["variant_remainder_ms"]) == (1.0, 0.5)
    assert (r["host"], r["remainder"], r["total"]) == (0.0, 0.5, 2.0)
