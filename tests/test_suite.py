"""The suite tables (analysis.sweep.suite) on the H100 real-network tables: the kernel-class
split against a hand classification of one configuration's kernel names, the geometric
mean and pass rate against a hand computation, and the slower-variant ledger."""
import math

import numpy as np
import pandas as pd
import pytest

from fusionlab.analysis.report import suite_text
from fusionlab.core.kernel_class import kernel_class, precision
from fusionlab.analysis.sweep import headline, suite
from conftest import ROOT

DATA = f"{ROOT}/tests/data/real_models_h100"

# resnet50, eager, inference, bfloat16, batch 64: each kernel name of the table, classified by hand
RESNET_EAGER = {
    "Kernel": "matmul/convolution",                   # cutlass__5x_cudnn::Kernel<..fprop..>: a convolution
    "Kernel2": "matmul/convolution",                  # cutlass::Kernel2<..s16816gemm..>: a GEMM
    "batch_norm_transform_input_kernel": "reduction/normalisation",
    "max_pool_forward_nchw": "elementwise",
    "nchwToNhwcKernel": "copies",
    "nhwcToNchwKernel": "copies",
    "reduce_kernel": "reduction/normalisation",
    "unrolled_elementwise_kernel": "elementwise",
    "vectorized_elementwise_kernel": "elementwise",
}


@pytest.fixture(scope="module")
def tables():
    return pd.read_csv(f"{DATA}/headline.csv"), pd.read_csv(f"{DATA}/kernels.csv")


def test_kernel_classes_of_one_configuration_by_hand(tables):
    _, k = tables
    one = k[(k["model"] == "resnet50") & (k["variant"] == "eager") & (k["mode"] == "inference")]
    want: dict[str, float] = {}
    for name, t in zip(one["name"], one["time_per_iter_us"]):
        cls = RESNET_EAGER.get(name) or ("matmul/convolution" if name.startswith(("nvjet_", "sm90_xmma_")) else None)
        assert cls, f"unclassified by hand: {name}"
        want[cls] = want.get(cls, 0.0) + t
    got = suite.kernel_classes(k)
    got = got[(got["model"] == "resnet50") & (got["variant"] == "eager") & (got["mode"] == "inference")]
    assert dict(zip(got["kernel_class"], got["time_per_iter_us"])) == pytest.approx(want, rel=1e-12)
    assert got["share"].sum() == pytest.approx(1.0)
    assert dict(zip(got["kernel_class"], got["kernels_per_iter"])) == {
        c: one[[RESNET_EAGER.get(n) == c or (c == "matmul/convolution" and n.startswith(("nvjet_", "sm90_xmma_")))
                for n in one["name"]]]["calls_per_iter"].sum() for c in want}


@pytest.mark.parametrize("name, full, cls, prec", [
    ("triton_poi_fused__to_copy_10", "", "copies", ""),
    ("triton_poi_fused__native_batch_norm_legit_no_training_add_relu_7", "", "elementwise", ""),
    ("triton_red_fused__native_batch_norm_legit_functional_13", "", "reduction/normalisation", ""),
    ("triton_per_fused_add_native_layer_norm_view_9", "", "reduction/normalisation", ""),
    ("triton_tem_fused_mm_0", "", "matmul/convolution", ""),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7", "", "attention", "fp16"),
    ("compute_dot_do_o_specialized", "", "attention", ""),
    ("Kernel2", "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_256x128_64x3_nn_align2>(T1::Params)",
     "matmul/convolution", "bf16"),
    ("nvjet_sm90_tst_96x128_64x6_2x1_v_bz_bias_NNN", "", "matmul/convolution", ""),
    ("multi_tensor_apply_kernel", "", "elementwise", ""),
    ("CatArrayBatchedCopy", "", "copies", ""),
    ("some_kernel", "", "other", ""),
])
def test_kernel_class_and_precision_of_names(name, full, cls, prec):
    assert kernel_class(name, full) == cls
    assert precision(name, full) == prec


def test_suite_geomean_and_pass_rate_by_hand(tables):
    """From the headline records: the geometric mean of the configurations' speedups, the
    pass rate, and the interval's ends where only two models can be drawn."""
    sp, _ = tables
    got = suite.suite(sp)
    for mode in ("inference", "train"):
        row = got[got["mode"] == mode].iloc[0]
        s = sp[(sp["variant"] == "compile") & (sp["mode"] == mode)]["speedup"]
        assert row["geomean_speedup"] == pytest.approx(math.prod(s) ** (1 / len(s)), rel=1e-12)
        assert (row["n_configs"], row["n_pass"], row["pass_rate"], row["n_models"]) == (2, 2, 1.0, 2)
        # resampling two models: the interval's ends are the geometric means of {a, a}, {b, b}
        assert (row["geomean_lo"], row["geomean_hi"]) == pytest.approx((s.min(), s.max()), rel=1e-12)
        assert row["verdict"] == headline.verdict(row["geomean_speedup"], row["geomean_lo"], row["geomean_hi"])


def test_a_failed_configuration_lowers_the_pass_rate_and_is_named(tables):
    sp, _ = tables
    sp = sp.copy()
    bad = (sp["variant"] == "compile") & (sp["mode"] == "inference") & (sp["model"] == "gpt2")
    sp.loc[bad, "status"] = "incorrect"
    row = suite.suite(sp).query("mode == 'inference'").iloc[0]
    assert (row["n_pass"], row["pass_rate"], row["n_incorrect"]) == (1, 0.5, 1)
    assert row["verdict"] == "no interval"    # one model left: no interval over models
    text = "\n".join(suite_text.suite_md(suite.suite(sp)))
    assert "1 of 2 asked for (50%)" in text and "1 incorrect" in text


def test_a_configuration_without_an_eager_run_passes_but_is_not_compared(tables):
    """It ran ok and matched eager in its own process, but no eager time was recorded beside
    it or apart (eager's run did not finish): it counts as passed, not in the geometric
    mean, and the table says so; the audit agrees."""
    from fusionlab.analysis.report import audit
    sp, _ = tables
    sp = sp.copy()
    gone = (sp["variant"] == "compile") & (sp["mode"] == "inference") & (sp["model"] == "gpt2")
    sp.loc[gone, ["speedup", "speedup_lo", "speedup_hi"]] = np.nan
    table = suite.suite(sp)
    row = table.query("mode == 'inference'").iloc[0]
    assert (row["n_configs"], row["n_pass"], row["n_compared"], row["pass_rate"]) == (2, 2, 1, 1.0)
    text = "\n".join(suite_text.suite_md(table))
    assert "2 of 2 asked for (100%)" in text and "1 compared; 1 without an eager run" in text
    assert "over the models swept" in text and "where the next model" not in text
    a = audit.Audit()
    audit.check_suite(a, sp, table, None)
    assert a.violations == [] and a.checks == 2 * 5


def test_a_row_with_no_speedup_says_so_and_the_audit_agrees(tables):
    """Every configuration of a variant passed but none has a speedup (no eager time beside
    it or apart): its row says so in words, never a number, and the audit reads that."""
    from fusionlab.analysis.report import audit
    sp, _ = tables
    sp = sp.copy()
    gone = (sp["variant"] == "compile") & (sp["mode"] == "inference")
    sp.loc[gone, ["speedup", "speedup_lo", "speedup_hi"]] = np.nan
    table = suite.suite(sp)
    md = "\n".join(suite_text.suite_md(table))
    line = next(ln for ln in md.splitlines() if ln.startswith("| compile | inference |"))
    assert suite_text.NONE_COMPARED in line and "| none (0 compared; 2 without an eager run) |" in line
    assert "nan" not in line
    a = audit.Audit()
    audit.check_suite(a, sp, table, md)
    assert a.violations == []


def test_a_host_skewed_speedup_is_counted_and_said(tables):
    """A compared configuration whose paired speedup is host-skewed stays in the mean, and
    the suite counts it and says so; the audit recounts it from the records."""
    from fusionlab.analysis.report import audit
    sp, _ = tables
    sp = sp.copy()
    sp["host_skewed"] = (sp["variant"] == "compile") & (sp["mode"] == "inference") & (sp["model"] == "gpt2")
    table = suite.suite(sp)
    assert table.set_index("mode")["n_host_skewed"].to_dict() == {"inference": 1, "train": 0}
    text = "\n".join(suite_text.suite_md(table))
    assert text.count("(1 host-skewed, in the mean)") == 1
    a = audit.Audit()
    audit.check_suite(a, sp, table.assign(n_host_skewed=0), None)
    assert a.violations == ["tables/suite.csv compile inference bfloat16: 0 host-skewed but the records have 1"]


def test_the_slower_ledger_lists_what_the_variant_no_longer_runs(tables):
    sp, k = tables
    sp = sp.copy()
    # read gpt2's compiled inference as if its interval lay below 1
    row = (sp["variant"] == "compile") & (sp["mode"] == "inference") & (sp["model"] == "gpt2")
    sp.loc[row, ["speedup", "speedup_lo", "speedup_hi", "verdict"]] = [0.8, 0.7, 0.9, "slower"]
    led = suite.slower(sp, k)
    assert set(led["model"]) == {"gpt2"} and set(led["variant"]) == {"compile"}
    classes = suite.kernel_classes(k)
    cfg = classes[(classes["model"] == "gpt2") & (classes["mode"] == "inference")]
    for cls, g in led.groupby("kernel_class"):
        e = cfg[(cfg["variant"] == "eager") & (cfg["kernel_class"] == cls)]["time_per_iter_us"].sum()
        v = cfg[(cfg["variant"] == "compile") & (cfg["kernel_class"] == cls)]["time_per_iter_us"].sum()
        assert (g["eager_class_us"].iloc[0], g["variant_class_us"].iloc[0]) == pytest.approx((e, v), rel=1e-12)
    eager_names = set(k[(k["model"] == "gpt2") & (k["variant"] == "eager") & (k["mode"] == "inference")]["name"])
    comp_names = set(k[(k["model"] == "gpt2") & (k["variant"] == "compile") & (k["mode"] == "inference")]["name"])
    assert set(led[led["side"] == "gone"]["name"]) <= eager_names - comp_names
    assert set(led[led["side"] == "new"]["name"]) <= comp_names - eager_names
    assert "vectorized_elementwise_kernel" in set(led[led["side"] == "gone"]["name"])
    text = "\n".join(suite_text.slower_md(led))
    assert "gpt2 compile inference bfloat16 16" in text and "0.80x [0.70x, 0.90x]" in text


def test_no_slower_configuration_no_ledger(tables):
    sp, k = tables
    assert suite.slower(sp, k).empty and suite_text.slower_md(suite.slower(sp, k)) == []


def test_the_audit_recomputes_the_suite_from_the_records(tables):
    """audit.check_suite: the suite as written agrees with its records and with the summary
    table quoting it; a geometric mean, pass count or verdict changed in the table, or a
    summary quoting another number, is a contradiction."""
    from fusionlab.analysis.report import audit
    h, _ = tables
    st = suite.suite(h)
    md = "\n".join(suite_text.suite_md(st))
    a = audit.Audit()
    audit.check_suite(a, h, st, md)
    assert a.violations == [] and a.checks == 2 * 6
    bad = st.copy()
    bad.loc[0, "geomean_speedup"] *= 1.01
    bad.loc[1, "n_pass"] = 1
    bad.loc[1, "verdict"] = "faster"
    a = audit.Audit()
    audit.check_suite(a, h, bad, md)
    assert len(a.violations) == 4, a.violations   # the mean, its quote, the count, the verdict


def test_the_kernel_class_figure_draws_the_tables_values(tables):
    """Each bar segment of figure kernel_classes is one (configuration, class) cell of the
    kernel_classes table, with its value; a configuration with no kernels draws nothing."""
    from fusionlab.analysis.report import style
    from fusionlab.analysis.report.figures.kernel_classes import kernel_classes as draw
    _, k = tables
    runs = pd.read_csv(f"{DATA}/runs.csv")
    fig = draw({"kernels": k, "runs": runs}, "gpt2")
    marks = pd.DataFrame(style.marks(fig))
    cls = suite.kernel_classes(k)
    cls = cls[cls["model"] == "gpt2"]
    want = {(r["variant"], r["mode"], r["kernel_class"]): r["time_per_iter_us"] for r in cls.to_dict("records")}
    got = {(m["variant"], m["mode"], m["kernel_class"]): m["value"] for m in marks.to_dict("records")
           if m["mark"] == "bar segment" and m["value"] > 0}
    assert got == pytest.approx(want, rel=1e-12)
    with pytest.raises(style.NoData):
        draw({"kernels": k.iloc[:0], "runs": runs}, "gpt2")


def test_no_suite_verdict_from_configurations_without_their_own_interval(tables):
    """One repeat gives a configuration no interval: the suite then gives its geometric
    mean and its spread over models but no verdict, and the audit agrees."""
    from fusionlab.analysis.report import audit
    h, _ = tables
    h = h.copy()
    h.loc[h["model"] == "gpt2", ["speedup_lo", "speedup_hi", "verdict"]] = [float("nan"), float("nan"), None]
    st = suite.suite(h)
    assert set(st["verdict"]) == {"no interval"} and st["geomean_lo"].notna().all()
    a = audit.Audit()
    audit.check_suite(a, h, st, None)
    assert a.violations == []
    # one repeat everywhere: no break-even, and the table says why (no interval, not that none is faster)
    h[["speedup_lo", "speedup_hi", "verdict", "break_even_iters"]] = [float("nan"), float("nan"), "1 repeat", float("nan")]
    text = "\n".join(suite_text.suite_md(suite.suite(h)))
    assert "none (no configuration faster by its own interval)" in text and "none (no configuration faster)" not in text


def test_a_configuration_not_run_is_counted_apart_from_those_tried_and_the_audit_checks_the_count(tables):
    """gpt2's compile inference row not run: the suite tries 1 of its 2 configurations,
    passes it, counts the other apart (outside the pass rate), and says so; the audit
    agrees, and finds a changed count."""
    from fusionlab.analysis.report import audit
    h, _ = tables
    h = h.copy()
    gone = (h["variant"] == "compile") & (h["mode"] == "inference") & (h["model"] == "gpt2")
    h.loc[gone, "status"] = headline.NOT_RUN
    h.loc[gone, ["speedup", "speedup_lo", "speedup_hi", "wall_ms", "compile_s"]] = np.nan
    st = suite.suite(h)
    row = st.query("mode == 'inference'").iloc[0]
    assert (row["n_configs"], row["n_asked"], row["n_pass"], row["pass_rate"], row["n_not_run"]) == (1, 2, 1, 0.5, 1)
    assert "1 of 2 asked for (50%); 1 not run" in "\n".join(suite_text.suite_md(st))
    a = audit.Audit()
    audit.check_suite(a, h, st, None)
    assert a.violations == []
    bad = st.copy()
    bad.loc[bad["mode"] == "inference", "n_not_run"] = 0
    a = audit.Audit()
    audit.check_suite(a, h, bad, None)
    assert len(a.violations) == 1 and "not run" in a.violations[0]
