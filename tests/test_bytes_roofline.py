"""The per-kernel roofline table (analysis.sweep.roofline): hand-counted FLOP rates,
intensities, bounds and fractions of each kernel's roof."""
import pandas as pd
import pytest

from fusionlab.analysis.sweep import roofline

# H100 SXM roofs (datasheet order of magnitude): DRAM 3.35 TB/s, FP32 67 TFLOP/s, tensor 989 TFLOP/s
ROOFS = {"roof_dram_Bps": 3.35e12, "roof_l2_Bps": 10e12, "roof_fp32_flops": 67e12, "roof_fp16_flops": 134e12,
         "roof_fp64_flops": 34e12, "roof_tensor_flops": 989e12}
KEYS = dict(model="lstm_cell", variant="eager", batch=1024, size="default", mode="inference", dtype="float32")


def _k(name, flops_fp32, flops_tensor, time_us, dram_cold, l2):
    return {**KEYS, **ROOFS, "full_name": name, "name": name, "flops_fp32": flops_fp32, "flops_tensor": flops_tensor,
            "flops_fp16": 0.0, "flops_fp64": 0.0, "flops": flops_fp32 + flops_tensor, "ncu_time_us": time_us,
            "dram_bytes": dram_cold / 2, "dram_bytes_cold": dram_cold, "l2_l1_bytes": l2}


def test_each_kernel_is_judged_against_its_own_roof():
    k = pd.DataFrame([_k("gemm", 0.0, 1e11, 200.0, 1e8, 4e8),        # 500 TFLOP/s at 1000 FLOP/B
                      _k("sigmoid", 1e8, 0.0, 100.0, 6.7e8, 7e8)])   # 1 TFLOP/s at 0.149 FLOP/B
    t = roofline.kernel_roofline(k).set_index("kernel")
    g, s = t.loc["gemm"], t.loc["sigmoid"]
    assert g["pipe"] == "tensor" and g["bound"] == "compute"
    assert g["achieved_flops"] == pytest.approx(5e14) and g["dram_intensity"] == pytest.approx(1000)
    assert g["fraction_of_roof"] == pytest.approx(5e14 / 989e12)
    assert s["pipe"] == "fp32" and s["bound"] == "memory" and s["l2_intensity"] == pytest.approx(1e8 / 7e8)
    # memory-bound: against the DRAM slope at its intensity = 6.7e8 B in 100 us over 3.35 TB/s
    assert s["fraction_of_roof"] == pytest.approx(6.7e12 / 3.35e12 / 1)


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
