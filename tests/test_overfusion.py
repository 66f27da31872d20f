"""Over-fusion signs (analysis.sweep.overfusion): the rule on a tidy table, and the table, the
summary section and the figure built from the real GPU fixtures' kernels.csv."""
import os

import numpy as np
import pandas as pd
import pytest

from conftest import ROOT

from fusionlab.analysis.sweep import build, overfusion
from fusionlab.analysis.report import plots, style, summary
from fusionlab.analysis.run import run_metrics

KEY = {"model": "m", "batch": 8, "size": "default", "mode": "inference", "dtype": "float32", "repeat": 0,
       "backend": "nsys", "device": "cuda"}


def _kernel(variant, name, kind, n_ops, occ=1.0, limited="warps", local=0, us=10.0, **kw):
    return {**KEY, "variant": variant, "name": name, "full_name": name, "kind": kind, "ops": "?", "n_ops": n_ops,
            "calls_per_iter": 1.0, "time_per_iter_us": us, "registers_per_thread": 32, "static_smem_bytes": 0,
            "dynamic_smem_bytes": 0, "local_mem_per_thread_bytes": local, "block_threads": 256, "grid_blocks": 64,
            "theoretical_occupancy": occ, "occupancy_limited_by": limited, **kw}


def _tables():
    """Three variants of one configuration: compile the fastest (4e11 B/s), max_autotune at
    1.5e11 (0.375 of the best), eager at 1e11; and a kernel of a CPU run."""
    bandwidth = (("eager", 1e11), ("compile", 4e11), ("compile_max_autotune", 1.5e11))
    runs = pd.DataFrame([{**KEY, "variant": v, "status": "ok", "achieved_bandwidth_Bps": bw,
                          "copy_bandwidth_frac": bw / 1e12} for v, bw in bandwidth])
    kernels = pd.DataFrame([
        _kernel("eager", "nvjet_gemm", "other", 1, occ=0.125, limited="registers"),
        _kernel("eager", "vectorized_elementwise_kernel", "eager", 1),
        _kernel("compile", "triton_poi_fused_add_relu_0", "pointwise", 2, local=16),          # best run: no flag
        _kernel("compile_max_autotune", "triton_per_fused_a_b_0", "persistent reduction", 2, occ=0.125,
                limited="registers", us=30.0),                                                  # flagged: occupancy
        _kernel("compile_max_autotune", "triton_poi_fused_c_d_1", "pointwise", 2, local=64),   # flagged: spills
        _kernel("compile_max_autotune", "triton_poi_fused_gelu_2", "pointwise", 1, local=64),  # one op: not fused
        _kernel("compile_max_autotune", "triton_poi_fused_e_f_3", "pointwise", 2, occ=0.125,
                limited="warps+blocks"),                                                        # not a resource limit
        _kernel("compile_max_autotune", "nvjet_gemm", "other", 1, occ=0.125, limited="registers"),  # eager's too
        _kernel("compile_max_autotune", "my_fused_kernel", "other", 1, occ=0.2, limited="shared_memory"),  # new: fused
        _kernel("compile_max_autotune", "Kernel2", "library", 1, occ=0.125, limited="registers"),
        {**_kernel("compile_max_autotune", "multi_tensor_apply_kernel", "other", 1, occ=0.125, limited="registers"),
         "full_name": "void at::native::<unnamed>::multi_tensor_apply_kernel<...>(T1, T2, T3...)"},  # PyTorch's
        {**_kernel("eager", "aten::add", "aten", 1), "device": "cpu", "registers_per_thread": np.nan},
    ])
    return kernels, runs


def test_rule_flags_fused_kernels_with_signs_in_slow_runs():
    kr = overfusion.kernel_resources(*_tables())
    assert list(kr.columns) == overfusion.COLUMNS
    assert "aten::add" not in set(kr["name"])                  # CPU rows carry no launch resources
    by = kr.set_index(["variant", "name"])
    assert set(by.index[by["over_fusion"]]) == {("compile_max_autotune", "triton_per_fused_a_b_0"),
                                                ("compile_max_autotune", "triton_poi_fused_c_d_1"),
                                                ("compile_max_autotune", "my_fused_kernel")}
    assert set(by.index[by["fused"]]) == {("compile", "triton_poi_fused_add_relu_0"),
                                          ("compile_max_autotune", "triton_per_fused_a_b_0"),
                                          ("compile_max_autotune", "triton_poi_fused_c_d_1"),
                                          ("compile_max_autotune", "triton_poi_fused_e_f_3"),
                                          ("compile_max_autotune", "my_fused_kernel")}
    assert by.loc[("compile", "triton_poi_fused_add_relu_0"), "spills"]
    assert not by.loc[("compile_max_autotune", "triton_poi_fused_e_f_3"), "low_occupancy"]
    assert by.loc[("compile_max_autotune", "Kernel2"), "low_occupancy"]
    assert by.loc[("compile_max_autotune", "Kernel2"), "bandwidth_vs_best"] == 1.5e11 / 4e11
    assert by.loc[("compile", "triton_poi_fused_add_relu_0"), "bandwidth_vs_best"] == 1.0
    share = kr.groupby("variant")["gpu_time_share"].sum()
    assert np.allclose(share, 1.0)


def test_summary_section_states_the_rule_or_no_gpu_data():
    kr = overfusion.kernel_resources(*_tables())
    text = "\n".join(summary.overfusion_md(kr))
    assert overfusion.RULE in text
    assert "5 fused kernels in 2 configurations (first repeat): 2 spill, 2 have theoretical occupancy under " \
           "0.25 limited by registers or shared memory, 3 flagged as likely over-fusion." in text
    table = text.split("| model |", 1)[1].splitlines()
    assert "triton_per_fused_a_b_0" in table[2] and table[2].rstrip().endswith("True |")   # flagged first
    empty = overfusion.kernel_resources(pd.DataFrame(), pd.DataFrame())
    assert list(empty.columns) == overfusion.COLUMNS and empty.empty
    for kr in (empty, None):
        assert "No GPU kernel data" in "\n".join(summary.overfusion_md(kr))


def test_summary_section_with_measured_bandwidth_shows_it():
    """Kernels with Nsight Compute's bytes: the section says the kernel's own bandwidth is
    used and shows it, with the measured local-memory traffic."""
    kernels, runs = _tables()
    kernels["dram_bandwidth_Bps"] = [1e11, 1e11, 4e11, 2e10, 3e11, 3e11, 3e11, 1e11, 3e11, 1e11, 1e11, np.nan]
    kernels["local_bytes"] = 0.0
    kr = overfusion.kernel_resources(kernels, runs)
    text = "\n".join(summary.overfusion_md(kr))
    assert "the kernel's own DRAM bandwidth over the fastest kernel's" in text
    header = text.split("| model |", 1)[1].splitlines()[0]
    assert "kernel_bandwidth_vs_best" in header and "local_bytes" in header and "bandwidth_source" in header
    by = kr.set_index(["variant", "name"])
    assert by.loc[("compile_max_autotune", "triton_per_fused_a_b_0"), "kernel_bandwidth_vs_best"] == 2e10 / 4e11
    # the figure's right panel: the kernel's own measured share, the flagged kernels labelled
    from fusionlab.analysis.report.figures.overfusion import over_fusion
    fig = over_fusion({"kernel_resources": kr, "runs": runs}, None)
    right = fig.axes[1]
    assert "the kernel's DRAM bandwidth (Nsight Compute)" in right.get_ylabel()
    labels = {t.get_text() for t in right.texts}
    assert "triton_per_fused_a_b_0" in labels and "my_fused_kernel" not in labels   # measured 0.75 of the best


def test_fixture_sweep_table_summary_and_figure(report, tmp_path):
    """The four H200 fixtures through run_metrics and build.build: one row per GPU kernel
    with the kernels.csv columns; the two Inductor kernels are the fused ones; the figure
    draws every kernel (no bandwidth here: no cost table, so the left panel says so)."""
    metric_files, kernel_files = [], []
    for name in ("mlp_eager", "mlp_compile", "pointwise_heavy_eager", "pointwise_heavy_compile"):
        d = os.path.join(ROOT, "tests", "data", "nsys2025_h200", name)
        metric_files.append(str(tmp_path / f"{name}.json"))
        kernel_files.append(str(tmp_path / f"{name}.csv"))
        run_metrics.main(os.path.join(d, "run.json"), report(f"nsys2025_h200/{name}"), "nsys",
                         metric_files[-1], kernel_files[-1])
    out = {k: str(tmp_path / f"{k}.csv") for k in ("runs", "long", "speedups", "crossover", "kernels",
                                                   "kernel_resources")}
    build.build(metric_files, kernel_files, None, None, out)
    kr = pd.read_csv(out["kernel_resources"])
    k = pd.read_csv(out["kernels"])
    assert len(kr) == len(k) == 27 and list(kr.columns) == overfusion.COLUMNS
    assert sorted(kr.loc[kr["fused"], "name"]) == ["triton_poi_fused_abs_add_cos_div_mul_relu_sigmoid_sin_tanh_0",
                                                   "triton_poi_fused_add_relu_0"]
    pd.testing.assert_frame_equal(kr.sort_values(["variant", "model", "full_name"])[overfusion.RESOURCE_TABLE_COLUMNS]
                                  .reset_index(drop=True),
                                  k.sort_values(["variant", "model", "full_name"])[overfusion.RESOURCE_TABLE_COLUMNS]
                                  .reset_index(drop=True))
    assert not kr["over_fusion"].any() and kr["bandwidth_vs_best"].isna().all()
    t = plots.load_tables(out["runs"], out["speedups"], out["crossover"], None, None, out["kernel_resources"])
    with pytest.raises(style.NoData, match="no measured copy bandwidth.*no achieved bandwidth"):
        plots.FIGURES["over_fusion"][0](t, None)   # no bandwidth on either panel: nothing to draw
    text = summary.summary_md(t["runs"], t["speedups"], t["crossover"], None, kernel_resources=t["kernel_resources"])
    assert "2 fused kernels in 2 configurations (first repeat): 0 spill" in text
    with pytest.raises(style.NoData, match="No GPU kernel data"):
        plots.FIGURES["over_fusion"][0]({**t, "kernel_resources": kr.iloc[:0]}, None)
