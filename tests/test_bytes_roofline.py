"""The per-kernel roofline table (analysis.sweep.roofline): hand-counted FLOP rates,
intensities, bounds and fractions of each kernel's roof, each rate from one pass's bytes
and duration; and the same on a report recorded on the H100 (tests/data/ncu_h100_fp16)."""
import csv
import gzip
import json
import os
import shutil

import pandas as pd
import pytest

from fusionlab.analysis.readers import ncu_report
from fusionlab.analysis.sweep import roofline

# H100 SXM roofs (NVIDIA's datasheet): DRAM 3.35 TB/s, FP32 67 TFLOP/s, tensor 989 TFLOP/s
ROOFS = {"roof_dram_Bps": 3.35e12, "roof_l2_Bps": 10e12, "roof_fp32_flops": 67e12, "roof_fp16_flops": 134e12,
         "roof_fp64_flops": 34e12, "roof_tensor_flops": 989e12}
KEYS = dict(model="lstm_cell", variant="eager", batch=1024, size="default", mode="inference", dtype="float32")
KNOWN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "ncu_h100_fp16")


def _k(name, flops_fp32, flops_tensor, time_us, dram_cold, l2, roofline_time_us=None):
    """A kernel whose steady pass ran in time_us moving dram_cold / 2 (its data partly in
    L2), and whose roofline pass ran in roofline_time_us moving dram_cold."""
    return {**KEYS, **ROOFS, "full_name": name, "name": name, "flops_fp32": flops_fp32, "flops_tensor": flops_tensor,
            "flops_fp16": 0.0, "flops_fp64": 0.0, "flops": flops_fp32 + flops_tensor, "ncu_time_us": time_us,
            "roofline_time_us": roofline_time_us, "dram_bytes": dram_cold / 2, "dram_bytes_cold": dram_cold,
            "l2_l1_bytes": l2}


def test_each_kernel_is_judged_against_its_own_roof():
    k = pd.DataFrame([_k("gemm", 0.0, 1e11, 150.0, 1e8, 4e8, 200.0),        # 500 TFLOP/s at 1000 FLOP/B
                      _k("sigmoid", 1e8, 0.0, 100.0, 6.7e8, 7e8, 250.0)])   # 6.7e8 B in 250 us: 2.68 TB/s
    t = roofline.kernel_roofline(k).set_index("kernel")
    g, s = t.loc["gemm"], t.loc["sigmoid"]
    assert g["pipe"] == "tensor" and g["bound"] == "compute" and g["rate_pass"] == "roofline"
    assert g["achieved_flops"] == pytest.approx(5e14) and g["dram_intensity"] == pytest.approx(1000)
    assert g["fraction_of_roof"] == pytest.approx(5e14 / 989e12)
    assert s["pipe"] == "fp32" and s["bound"] == "memory" and s["l2_intensity"] == pytest.approx(1e8 / 7e8)
    # memory-bound: the roofline pass's 6.7e8 B in its own 250 us over 3.35 TB/s; the
    # steady pass's 100 us (its data partly in L2) never meets the cold bytes
    assert s["fraction_of_roof"] == pytest.approx(6.7e8 / 250e-6 / 3.35e12) == pytest.approx(0.8)
    assert s["fraction_of_roof"] == pytest.approx(s["achieved_flops"] / s["roof_at"])


def test_without_the_roofline_passs_bytes_and_time_the_steady_pass_gives_both():
    k = pd.DataFrame([_k("sigmoid", 1e8, 0.0, 100.0, 6.7e8, 7e8, None)])
    s = roofline.kernel_roofline(k).iloc[0]
    assert s["rate_pass"] == "steady" and s["time_us"] == 100.0 and s["dram_bytes_roof"] == 3.35e8
    assert s["fraction_of_roof"] == pytest.approx(3.35e8 / 100e-6 / 3.35e12) == pytest.approx(1.0)


def test_a_compute_bound_kernel_is_judged_on_its_pipes_own_flops():
    """FP32 work beside the tensor work does not lift the tensor kernel's fraction."""
    k = pd.DataFrame([_k("gemm", 5e10, 1e11, 150.0, 1e8, 4e8, 100.0)])
    g = roofline.kernel_roofline(k).iloc[0]
    assert g["bound"] == "compute" and g["achieved_flops"] == pytest.approx(1.5e15)
    assert g["fraction_of_roof"] == pytest.approx(1e11 / 100e-6 / 989e12)


def _raw(name):
    with open(os.path.join(KNOWN, name)) as f:
        lines = [line for line in csv.reader(f) if line and not line[0].startswith("==")]
    return [dict(zip(lines[0], line)) for line in lines[2:]]


@pytest.mark.skipif(not ncu_report.available(), reason=ncu_report.MISSING_MODULE)
def test_on_a_recorded_report_every_fraction_of_roof_is_at_most_one(tmp_path):
    """The H100 report of known work (fma and add kernels on 1 Mi elements, torch.randn's
    kernels) read as the steady and the roofline pass of one run, under the datasheet's
    roofs: every kernel's fraction of its roof is at most 1, and the fma kernels' is their
    DRAM bytes over their own duration over 3.35 TB/s, counted here from ncu's CSV."""
    from fusionlab.analysis.run import traffic
    from fusionlab.core import ncu_passes
    rec = {"status": "ok", "reason": None, "settings": {"iterations": 1}, "passes": ["steady", "roofline"]}
    for p in ("steady", "roofline"):
        with gzip.open(os.path.join(KNOWN, "fixture.ncu-rep.gz")) as src, \
                open(tmp_path / ncu_passes.PASSES[p].report, "wb") as dst:
            shutil.copyfileobj(src, dst)
        rec[p] = {"status": "ok", "reason": None, "passes": 1, "report": ncu_passes.PASSES[p].report,
                  "iterations": 1}
    (tmp_path / "ncu.json").write_text(json.dumps(rec))
    _, kernels = traffic.compute(str(tmp_path / "ncu.json"))
    # a steady pass ten times faster (its data in L2) must not change any rate
    kernels = kernels.assign(**KEYS, **ROOFS, ncu_time_us=kernels["ncu_time_us"] / 10)
    t = roofline.kernel_roofline(kernels, top=10)
    assert len(t) == kernels["full_name"].nunique() and (t["rate_pass"] == "roofline").all()
    assert t["fraction_of_roof"].notna().all() and (t["fraction_of_roof"] <= 1).all()
    fma = [r for r in _raw("fixture_raw.csv") if r["Kernel Name"] == "fma_kernel"]
    num = lambda r, m: float(r[m].replace(",", ""))   # noqa: E731
    dram = sum(num(r, "dram__bytes_read.sum") + num(r, "dram__bytes_write.sum") for r in fma)
    seconds = sum(num(r, "gpu__time_duration.sum") for r in fma) / 1e9
    assert (dram, seconds) == (3807744 + 6912 + 6814464 + 512, (4544 + 6240) / 1e9)
    row = t.set_index("kernel").loc["fma_kernel"]
    assert row["bound"] == "memory"
    assert row["fraction_of_roof"] == pytest.approx(dram / seconds / 3.35e12, rel=1e-12)
    assert row["fraction_of_roof"] == pytest.approx(0.29423, abs=1e-5)


def test_the_top_kernels_by_time_and_the_rest_summed():
    k = pd.DataFrame([_k(f"k{i}", 1e6, 0.0, float(i + 1), 1e6, 1e6) for i in range(7)])
    t = roofline.kernel_roofline(k, top=5)
    assert list(t["kernel"]) == ["k6", "k5", "k4", "k3", "k2", "other (2 kernels)"]
    other = t.iloc[-1]
    assert other["kernels"] == 2 and other["ncu_time_us"] == 3.0 and other["flops"] == 2e6


def test_no_measured_flops_no_table():
    assert roofline.kernel_roofline(pd.DataFrame([{**KEYS, "full_name": "k", "flops": float("nan")}])).empty


def test_the_figure_draws_each_kernel_under_the_roofs():
    from fusionlab.analysis.report.figures.kernel_roofline import kernel_roofline
    k = pd.DataFrame([_k("gemm", 0.0, 1e11, 200.0, 1e8, 4e8), _k("sigmoid", 1e8, 0.0, 100.0, 6.7e8, 7e8)])
    runs = pd.DataFrame([{**KEYS, "backend": "nsys", "device": "cuda", "status": "ok"}])
    fig = kernel_roofline({"kernels": k, "runs": runs, "speedups": pd.DataFrame()}, "lstm_cell")
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.texts]
    assert any(s.startswith("gemm 51%") for s in labels) and any(s.startswith("sigmoid") for s in labels)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "DRAM 3.35 TB/s (ncu peak sustained)" in legend and any(s.startswith("tensor") for s in legend)
