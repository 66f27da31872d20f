"""Sweep-wide figures of a large sweep: a grid (rows: models, columns: variants) with the
median written in each cell, instead of a strip of bars thousands of pixels wide."""
import numpy as np
import pandas as pd

from fusionlab.analysis.report.figures.compile_cost import compile_cost
from fusionlab.analysis.report.figures.profiler import profiler_overhead
from fusionlab.analysis.report.figures.speedup import speedup_vs_batch
from fusionlab.analysis.report.grid import MAX_BARS
from fusionlab.analysis.report.slicing import main_axis


def _cells(ax) -> dict:
    """(row label, column label) -> the text written in that cell."""
    rows = [t.get_text() for t in ax.get_yticklabels()]
    cols = [t.get_text() for t in ax.get_xticklabels()]
    return {(rows[round(t.get_position()[1])], cols[round(t.get_position()[0])]): t.get_text() for t in ax.texts}


def _zoo_like(n_models=6, variants=("eager", "compile", "jit_script", "cuda_graph", "compile_dynamic")):
    rows = []
    for i in range(n_models):
        for j, v in enumerate(variants):
            for rep, jitter in enumerate((0.0, 0.2, -0.1)):
                rows.append({"model": f"m{i}", "variant": v, "batch": 8, "size": "default", "repeat": rep,
                             "status": "ok", "backend": "nsys", "device": "cuda",
                             "profiler_overhead": 1.0 + i + j / 10 + jitter,
                             "compilation_latency_s": (i + 1) * (j + 1) + jitter, "compression_ratio": 1.0 + j / 4})
    return pd.DataFrame(rows)


def test_profiler_overhead_grid_writes_each_median():
    runs = _zoo_like()
    assert len(runs.groupby(["model", "variant"])) > MAX_BARS
    fig = profiler_overhead({"runs": runs}, None)
    (ax,) = [a for a in fig.axes if a.texts]
    cells = _cells(ax)
    assert len(cells) == 30
    # m2 x compile: 1 + 2 + 0.1 with jitter 0, 0.2, -0.1: median 3.1
    assert cells[("m2 8", "compile")] == "3.10"
    assert [t.get_text() for t in ax.get_xticklabels()][0] == "eager"


def test_compile_cost_grid_and_a_small_sweep_keeps_its_bars():
    s = _zoo_like(n_models=7)
    s = s[s["variant"] != "eager"]   # 7 models x 4 variants: 28 > MAX_BARS
    fig = compile_cost({"speedups": s, "runs": s}, None)
    lat, mem = fig.axes[:2]
    assert _cells(lat)[("m1", "compile_dynamic")] == f"{np.median([10.0, 10.2, 9.9]):.2f}"
    assert _cells(mem)[("m0", "jit_script")] == "1.50"
    small = compile_cost({"speedups": s[s["model"] == "m0"], "runs": s}, None)
    # one bar per variant, its value written on it (no grid)
    assert not small.axes[0].images and len(small.axes[0].patches) == 4
    assert [t.get_text() for t in small.axes[0].texts] == ["2", "5", "4", "3"]   # compile, compile_dynamic, ...


def test_compile_cost_panels_share_rows_when_one_metric_is_missing():
    s = _zoo_like(n_models=7)
    s = s[s["variant"] != "eager"].copy()
    s.loc[s["model"] == "m3", "compression_ratio"] = np.nan   # m3: latency only
    fig = compile_cost({"speedups": s, "runs": s}, None)
    lat, mem = fig.axes[:2]
    assert [t.get_text() for t in lat.get_yticklabels()] == [t.get_text() for t in mem.get_yticklabels()]
    assert ("m3", "compile") in _cells(lat) and ("m3", "compile") not in _cells(mem)


def test_variants_side_by_side_follow_the_paired_speedup():
    """One batch size: the variants in the order of the headline speedup (paired where there
    is one), each labelled with it and its interval, across processes after it (the 2 x
    H200 zoo's deep_gelu_mlp: compile_reduce_overhead 1.21x paired, 0.39x across processes)."""
    h = pd.DataFrame({"model": "m", "variant": ["compile", "compile_reduce_overhead", "jit_script"],
                      "batch": 256, "size": "default", "status": "ok", "noisy": False,
                      "estimator": ["paired", "paired", "across processes"], "speedup": [0.64, 1.21, 0.78],
                      "speedup_lo": [0.6, 1.1, np.nan], "speedup_hi": [0.7, 1.3, np.nan],
                      "interval": ["range of 3", "range of 3", "1 repeat"], "verdict": ["slower", "faster", "1 repeat"],
                      "speedup_across": [0.34, 0.39, 0.78]})
    fig = speedup_vs_batch({"headline": h, "runs": h.assign(backend="nsys")}, "m")
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_yticklabels()] == ["compile", "jit_script", "compile_reduce_overhead"]
    assert [t.get_text() for t in ax.texts] == [
        "0.64x [0.60, 0.70]; across processes 0.34x", "0.78x across processes (1 repeat)",
        "1.21x [1.10, 1.30]; across processes 0.39x"]


def test_a_size_held_away_from_its_default_is_in_the_title_label():
    # matmul_heavy at dim 1024 (its default 4096) in every run, num_layers at its default 4
    d = pd.DataFrame({"model": "matmul_heavy", "variant": "compile", "batch": [8, 32], "dim": 1024,
                      "num_layers": 4, "size": "dim1024"})
    rows, axis, fixed = main_axis(d)
    assert (axis, fixed, len(rows)) == ("batch", "dim=1024", 2)
    assert main_axis(d.assign(dim=4096, size="default"))[2] == ""
    # a swept axis held at its most common value, and the held size after it
    swept = pd.concat([d.assign(hidden=h, size=f"dim1024-hidden{h}") for h in (256, 256, 512)])
    assert main_axis(swept)[1:] == ("batch", "hidden=256 dim=1024; hidden 512 not drawn: see tables/headline.csv")


def test_kernel_labels_say_what_each_kernel_computes():
    from fusionlab.analysis.report.figures.kernels import count, display_name, kernel_label, short_name
    assert short_name("triton_poi_fused_add_mul_sigmoid_split_tanh_0") == "triton_poi_fused"
    assert short_name("vectorized_elementwise_kernel") == "vectorized_elementwise_kernel"
    row = {"name": "reduce_kernel", "ops": "reduction", "full_name":
           "void at::native::reduce_kernel<(int)512, (int)1, at::native::ReduceOp<float, at::native::MaxOps<float>, "
           "unsigned int, float, (int)4, (int)4>>(T3)"}
    assert kernel_label(row).split("\n")[0] == "reduction/normalisation: max"
    # a library GEMM by its whole name (the FFMA in it says it is an FP32 GEMM), over lines
    gemm = "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute"
    assert display_name(gemm).replace("\n", "") == gemm
    assert kernel_label({"name": gemm}).startswith("matmul/convolution\n")
    # cutlass's Kernel2 by the kernel it wraps; cuDNN's flash attention as attention
    cutlass = "void cutlass::Kernel2<cutlass_75_tensorop_s1688gemm_f16_256x128_32x2_nt_align1>(Params)"
    assert display_name("Kernel2", cutlass).replace("\n", "") == "cutlass_75_tensorop_s1688gemm_f16_256x128_32x2_nt_align1"
    sdpa = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0"
    assert kernel_label({"name": sdpa, "ops": "convolution"}).startswith("attention\n")
    fused = kernel_label({"name": "triton_poi_fused_abs_0", "ops": "abs+add+cos+div+mul+relu+sigmoid+sin+tanh"})
    assert fused.startswith("elementwise: abs+add") and fused.endswith("triton_poi_fused_abs_0")
    assert (count(1, "launch"), count(35, "launch"), count(12, "distinct kernel")) == \
        ("1 launch", "35 launches", "12 distinct kernels")


def _headline_rows():
    rows = []
    for b in (64, 1024):
        for v, wall, s in (("eager", 0.256, 1.0), ("compile", 0.116, 1.13)):
            rows.append({"model": "m", "variant": v, "batch": b, "size": "default", "wall_ms": wall,
                         "eager_wall_ms": wall * s,
                         "kernel_ms": wall / 3, "host_ms": wall / 2, "kernel_wait_ms": wall / 12, "other_ms": wall / 12,
                         "speedup": s, "speedup_lo": 1.0 if v != "eager" else np.nan, "speedup_hi": 1.26,
                         "interval": "range of 2", "estimator": "paired" if v != "eager" else "reference",
                         "verdict": "inconclusive" if v != "eager" else ""})
    return pd.DataFrame(rows)


def test_headline_legend_below_the_panels_and_no_text_covered():
    from fusionlab.analysis.report import legibility, style
    from fusionlab.analysis.report.figures.headline import headline
    runs = pd.DataFrame([{"model": "m", "backend": "nsys", "device": "cuda"}])
    fig = headline({"headline": _headline_rows(), "runs": runs}, "m")
    r = style.renderer(fig)
    (leg,) = fig.legends
    assert leg.get_window_extent(r).y1 <= min(ax.get_window_extent(r).y0 for ax in fig.axes)
    values = [t for ax in fig.axes for t in ax.texts]
    assert any("inconclusive" in t.get_text() for t in values)
    for ax in fig.axes:      # every value text inside its panel
        assert all(t.get_window_extent(r).x1 <= ax.get_window_extent(r).x1 for t in ax.texts)
    assert legibility.text_overlaps(fig) == [] and legibility.texts_outside(fig) == []


def test_roofline_shares_in_whole_percent():
    from fusionlab.analysis.report.figures.roofline import percent
    assert [percent(p) for p in (112.4, 19.3, 1.3, 0.2, float("nan"))] == ["112", "19", "1", "<1", ""]


def test_rates_in_the_unit_that_fits_them():
    from fusionlab.analysis.report.text import fmt_flops, fmt_rate
    assert [fmt_rate(x) for x in (3.35e12, 1.31e10, 8.5e8, 12.0)] == ["3.35 TB/s", "13.1 GB/s", "850 MB/s", "12 B/s"]
    assert fmt_flops(9.89e14) == "989 TFLOP/s" and fmt_flops(float("nan")) == ""


def _two_settings(runs: pd.DataFrame) -> pd.DataFrame:
    """runs as bfloat16 inference, and again as float32 inference with 10 added to each
    profiler overhead and a tenth of each FLOP rate."""
    bf16 = runs.assign(mode="inference", dtype="bfloat16")
    return pd.concat([bf16, bf16.assign(dtype="float32", profiler_overhead=bf16["profiler_overhead"] + 10,
                                        **({"achieved_flops": bf16["achieved_flops"] / 10}
                                           if "achieved_flops" in bf16 else {}))], ignore_index=True)


def test_profiler_overhead_keeps_each_setting_its_own_row():
    """Two settings of the same model, batch and variant are two rows of the grid (a median
    across them would mix float32 into bfloat16), and two bars of a small sweep."""
    runs = _two_settings(_zoo_like())
    (ax,) = [a for a in profiler_overhead({"runs": runs}, None).axes if a.texts]
    cells = _cells(ax)
    assert cells[("m2 8 inference bfloat16", "compile")] == "3.10"
    assert cells[("m2 8 inference float32", "compile")] == "13.10"
    small = _two_settings(_zoo_like(n_models=1, variants=("eager", "compile")))
    (ax,) = profiler_overhead({"runs": small}, None).axes
    assert [t.get_text() for t in ax.get_xticklabels()] == [   # eager first in each configuration
        "m0 bs 8 inference bfloat16  eager", "m0 bs 8 inference bfloat16  compile",
        "m0 bs 8 inference float32  eager", "m0 bs 8 inference float32  compile"]
    assert sorted(t.get_text() for t in ax.texts) == ["1.00x", "1.10x", "11.00x", "11.10x"]


def test_the_roofline_draws_one_setting_and_names_the_others():
    """A roof in one dtype: the roofline draws the first setting's configurations (a median
    across settings would put a float32 run's rate in a bfloat16 point) and its title
    names the settings it leaves out."""
    from fusionlab.analysis.report.figures.roofline import roofline
    base = _zoo_like(n_models=1, variants=("eager", "compile")).assign(
        arithmetic_intensity=100.0, achieved_flops=5e13, copy_bandwidth_frac=0.5)
    runs = _two_settings(base)
    fig = roofline({"runs": runs, "peaks": {"copy_bandwidth_Bps": 3e12, "matmul_flops": 8e14,
                                            "dtype": "bfloat16"}}, None)
    ax = fig.axes[0]
    ys = sorted({round(float(y), 6) for c in ax.collections for _, y in c.get_offsets()})
    assert ys == [50.0]   # TFLOP/s of the bfloat16 runs only (float32's would be 5.0)
    title = fig._suptitle.get_text().replace("\n", " ")
    assert title.endswith("at dtype=bfloat16; inference float32 not drawn: see tables/headline.csv")
    one = roofline({"runs": base, "peaks": {"copy_bandwidth_Bps": 3e12, "matmul_flops": 8e14}}, None)
    assert "not drawn" not in one._suptitle.get_text()


def test_headline_draws_a_row_of_panels_per_setting():
    """Three settings at two batch sizes are six panels, a row per setting, each titled with
    its setting and batch; a setting with one batch leaves its row's second panel empty.
    Nothing is left out, so the title names nothing as not drawn."""
    from fusionlab.analysis.report import legibility, style
    from fusionlab.analysis.report.figures.headline import headline
    base = _headline_rows()
    rows = pd.concat([base.assign(mode="inference", dtype="bfloat16"), base.assign(mode="inference", dtype="float32"),
                      base[base["batch"] == 64].assign(mode="train", dtype="amp_bfloat16")], ignore_index=True)
    runs = pd.DataFrame([{"model": "m", "backend": "nsys", "device": "cuda"}])
    fig = headline({"headline": rows, "runs": runs}, "m")
    shown = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in shown] == [
        "inference bfloat16, batch size 64", "inference bfloat16, batch size 1024",
        "inference float32, batch size 64", "inference float32, batch size 1024", "train amp_bfloat16, batch size 64"]
    assert len(fig.axes) == 6 and "not drawn" not in fig._suptitle.get_text()
    assert legibility.text_overlaps(fig) == [] and legibility.texts_outside(fig) == []


def test_headline_shows_a_variant_that_ran_and_failed_by_its_status_and_the_audit_reads_it():
    """A timeout at batch 1024 has no time to draw: its row says so in that panel only, its
    mark carries the status, and the audit finds a status that is not the record's."""
    from fusionlab.analysis.report import audit, legibility, style
    from fusionlab.analysis.report.figures.headline import headline
    ok = _headline_rows().assign(status="ok")
    timeout = {"model": "m", "variant": "compile_max_autotune", "batch": 1024, "size": "default",
               "status": "timeout", "wall_ms": np.nan, "speedup": np.nan}
    rows = pd.concat([ok, pd.DataFrame([timeout])], ignore_index=True)
    runs = pd.DataFrame([{"model": "m", "backend": "nsys", "device": "cuda"}])
    fig = headline({"headline": rows, "runs": runs}, "m")
    said = {ax.get_title(): [t.get_text() for t in ax.texts] for ax in fig.axes}
    assert "timeout: no time measured" in said["batch size 1024"]
    assert not any("timeout" in t for t in said["batch size 64"])
    assert [lab.get_text() for lab in fig.axes[1].get_yticklabels()] == [
        "eager (own processes)", "compile", "compile_max_autotune"]
    assert legibility.text_overlaps(fig) == [] and legibility.texts_outside(fig) == []
    marks = pd.DataFrame(style.marks(fig))
    assert marks[marks["quantity"] == "status"][["variant", "batch", "text"]].values.tolist() == [
        ["compile_max_autotune", 1024, "timeout"]]
    records = {audit._key(r): r for r in rows.to_dict("records")}
    a = audit.Audit()
    audit.check_figure(a, marks, records, "headline")
    assert a.violations == []
    records[audit._key(timeout)] = {**timeout, "status": "oom"}
    a = audit.Audit()
    audit.check_figure(a, marks, records, "headline")
    assert len(a.violations) == 1 and "the record's status is 'oom'" in a.violations[0]


def test_a_caption_over_several_settings_names_the_setting_of_its_highest_estimate():
    """With three settings drawn, 'at batch 64' alone would not say which of them holds the
    highest estimate: the caption names it, and the audit reads the setting it names."""
    from fusionlab.analysis.report import audit, captions
    base = _headline_rows()
    h = pd.concat([base.assign(mode="inference", dtype="bfloat16"),
                   base.assign(mode="inference", dtype="float32",
                               speedup=np.where(base["variant"] == "eager", 1.0, 1.50))], ignore_index=True)
    text = captions._best({"headline": h}, "m")
    assert text.startswith("the highest estimate is compile at batch 64, inference float32: 1.50x paired")
    a = audit.Audit()
    audit.check_caption(a, text, set(), h, "m", "caption")
    assert a.violations == []
    a = audit.Audit()
    audit.check_caption(a, text.replace("inference float32", "inference bfloat16"), set(), h, "m", "caption")
    assert len(a.violations) == 1 and "the records have 1.13x" in a.violations[0]
    one = captions._best({"headline": base.assign(mode="inference", dtype="bfloat16")}, "m")
    assert one.startswith("the highest estimate is compile at batch 64: 1.13x")


def test_a_caption_quotes_the_highest_estimate_among_the_configurations_drawn():
    """The smoke sweep's mlp figure draws hidden 256 only: its caption's highest estimate is
    of those (0.61x at batch 32), not hidden 1024's 0.77x, which the figure leaves out; the
    audit finds a caption that quotes a configuration its figure does not draw."""
    from fusionlab.analysis.report import audit, captions
    base = _headline_rows()
    h = pd.concat([base.assign(size="hidden256", speedup=np.where(base["variant"] == "eager", 1.0, 0.61)),
                   base.assign(size="default", speedup=np.where(base["variant"] == "eager", 1.0, 0.77))],
                  ignore_index=True).assign(mode="inference", dtype="float32", device="cpu")
    marks = [{"model": "m", "variant": "compile", "batch": b, "size": "hidden256", "mode": "inference",
              "dtype": "float32"} for b in (64, 1024)]
    text = captions._best({"headline": h}, "m", marks)
    assert text.startswith("the highest estimate is compile at batch 64: 0.61x")
    assert captions._best({"headline": h}, "m").startswith("the highest estimate is compile at batch 64: 0.77x")
    drawn = {("m", str(b), "hidden256", "inference", "float32", "cpu") for b in (64, 1024)}
    a = audit.Audit()
    audit.check_caption(a, text, drawn, h, "m", "caption")
    assert a.violations == []
    a = audit.Audit()
    audit.check_caption(a, text.replace("0.61x", "0.77x"), drawn, h, "m", "caption")
    assert len(a.violations) == 1 and "the records have 0.61x" in a.violations[0]
