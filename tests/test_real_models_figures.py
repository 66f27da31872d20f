"""Figures of a sweep of real networks (ResNet-50 and GPT-2 on an H100; tables in
tests/data/real_models_h100/, copied from the sweep of config/real-models.yaml): one batch
per model, inference in bfloat16 and training under autocast(bfloat16), so the mode and
the dtype go together. Each figure draws every setting apart, never an empty panel, and
the audit finds every number it draws in the records."""
import os

import pandas as pd
import pytest

from conftest import ROOT
from fusionlab.analysis.report import audit, plots, style
from fusionlab.analysis.report.slicing import by_setting, main_axis, settings
from fusionlab.analysis.report.summary import summary_md, write_text

DATA = os.path.join(ROOT, "tests", "data", "real_models_h100")
MODELS = ("gpt2", "resnet50")
FIGURES = ("headline", "speedup_vs_batch", "speedup_breakdown", "kernel_durations")


def tables():
    p = {k: os.path.join(DATA, f"{k}.csv") for k in ("runs", "speedups", "headline", "kernels", "speedup_breakdown")}
    return plots.load_tables(p["runs"], p["speedups"], None, None, None, None, p["speedup_breakdown"],
                             p["headline"], p["kernels"])


@pytest.fixture(scope="module")
def t():
    return tables()


def draw(name, t, model):
    fn, _, _ = plots.FIGURES[name]
    return fn(t, model)


def test_mode_and_dtype_are_held_together(t):
    h = t["headline"][t["headline"]["model"] == "resnet50"]
    assert settings(h) == [("inference", "bfloat16"), ("train", "amp_bfloat16")]
    rows, axis, fixed = main_axis(h)
    assert (len(rows), axis) == (2, "batch")
    assert set(zip(rows["mode"], rows["dtype"])) == {("inference", "bfloat16")}
    assert fixed == "mode=inference dtype=bfloat16; train amp_bfloat16 not drawn: see tables/headline.csv"
    assert [(label, len(r), a) for label, r, a, _ in by_setting(h)] == [
        ("inference bfloat16", 2, "batch"), ("train amp_bfloat16", 2, "batch")]


def test_headline_has_a_panel_per_setting(t):
    fig = draw("headline", t, "resnet50")
    assert [ax.get_title() for ax in fig.axes] == ["inference bfloat16, batch size 64",
                                                   "train amp_bfloat16, batch size 64"]
    walls = {(m["mode"], m["variant"]): m["value"] for m in style.marks(fig) if m["quantity"] == "wall_ms"}
    h = t["headline"].set_index(["model", "mode", "variant"])
    assert walls == {(mode, v): h.loc[("resnet50", mode, v), "wall_ms"]
                     for mode in ("inference", "train") for v in ("eager", "compile")}


def test_speedup_vs_batch_at_one_batch_has_a_row_per_variant_and_setting(t):
    fig = draw("speedup_vs_batch", t, "gpt2")
    (ax,) = fig.axes
    assert [x.get_text() for x in ax.get_yticklabels()] == ["compile, train amp_bfloat16",
                                                            "compile, inference bfloat16"]
    assert [x.get_text() for x in ax.texts] == [   # the numbers in a column; the interval's method in the axis label
        "1.99x [1.94, 2.04]; across processes 1.72x",
        "2.63x [2.37, 2.89]; across processes 2.81x"]
    assert ax.get_xlabel().replace("\n", " ") == ("paired speedup at batch size 16 (>1: faster; x: across processes; "
                                                  "interval: range of 2)")
    assert fig.texts[-1].get_text().endswith("mode dtype=inference bfloat16/train amp_bfloat16")


def test_speedup_breakdown_has_a_panel_per_setting_adding_up_to_the_time_saved(t):
    fig = draw("speedup_breakdown", t, "resnet50")
    assert [ax.get_title() for ax in fig.axes] == ["inference bfloat16", "train amp_bfloat16"]
    marks = pd.DataFrame(style.marks(fig))
    parts = marks[marks["mark"] == "bar part"].groupby("mode")["value"].sum()
    totals = marks[marks["mark"] == "total"].set_index("mode")["value"]
    assert parts.round(9).to_dict() == totals.round(9).to_dict()
    # ResNet-50 training: 16.7 ms of modelled traffic removed, 16.0 ms of exposed host time added
    assert totals["train"] == pytest.approx(-0.129861, abs=1e-6)


def test_kernel_durations_count_the_kernels_the_headline_counts(t):
    """Each panel's title quotes the record: the headline's kernel time and launches per
    iteration (medians over repeats), never one repeat's own sum."""
    fig = draw("kernel_durations", t, "gpt2")
    titles = [ax.get_title().splitlines() for ax in fig.axes]
    h = t["headline"][t["headline"]["model"] == "gpt2"].set_index(["mode", "variant"])
    order = [(m, v) for v in ("eager", "compile") for m in ("inference", "train")]   # a row per variant
    setting = {"inference": "inference bfloat16", "train": "train amp_bfloat16"}
    assert [x[0] for x in titles] == [f"{v} ({setting[m]}): {style.fmt_time(h.loc[(m, v), 'kernel_ms'])} of kernels "
                                      "per iteration" for m, v in order]
    for (mode, variant), line in zip(order, [x[1] for x in titles]):
        assert line.endswith(f", {h.loc[(mode, variant), 'kernels_per_iter']:g} launches per iteration")


def test_nothing_to_draw_is_said(t):
    only_eager = {**t, "headline": t["headline"][t["headline"]["variant"] == "eager"]}
    with pytest.raises(style.NoData, match="no variant besides eager ran ok"):
        draw("speedup_vs_batch", only_eager, "gpt2")
    with pytest.raises(style.NoData, match="no configuration with both eager and a variant ok"):
        draw("speedup_breakdown", only_eager, "gpt2")
    with pytest.raises(style.NoData, match="no kernels recorded"):
        draw("kernel_durations", {**t, "kernels": t["kernels"].iloc[:0]}, "gpt2")
    with pytest.raises(style.NoData, match="no configuration of this model ran ok"):
        draw("headline", t, "vit")


@pytest.mark.slow
def test_the_figures_and_summary_pass_the_audit(tmp_path):
    t = tables()
    res = tmp_path / "results"
    (res / "tables").mkdir(parents=True)
    # every table the audit reads, in the order the workflow makes them (audit_inputs)
    for k in ("runs", "speedups", "kernels", "kernel_resources", "scaling", "crossover", "headline", "suite"):
        if isinstance(t.get(k), pd.DataFrame):
            t[k].to_csv(res / "tables" / f"{k}.csv", index=False)
    for fig in FIGURES:
        out = res / "figures" / fig
        out.mkdir(parents=True)
        empty = plots.render(fig, t, {m: (str(out / f"{m}.png"), None) for m in MODELS},
                             {m: str(out / f"{m}.rst") for m in MODELS}, {m: str(out / f"{m}.data.csv") for m in MODELS})
        assert empty == []
    write_text(str(res / "summary.md"), summary_md(t["runs"], t["speedups"], t["crossover"], None,
                                                   headline=t["headline"]))
    found = audit.audit(str(res))
    assert found.violations == [] and found.checks > 100


def test_an_empty_kernel_panel_says_whether_the_variant_ran_there(t):
    """A variant swept for inference only (compile_reduce_overhead, as config/real-models.yaml
    sweeps it) leaves its training panel 'not swept here'; a variant that ran in that
    setting without kernels says 'no kernels recorded'."""
    def cro(df):
        extra = df[(df["model"] == "gpt2") & (df["variant"] == "compile") & (df["mode"] == "inference")]
        return pd.concat([df, extra.assign(variant="compile_reduce_overhead")], ignore_index=True)
    k = cro(t["kernels"])
    k = k[~((k["model"] == "gpt2") & (k["variant"] == "compile") & (k["mode"] == "train"))]
    fig = draw("kernel_durations", {**t, "kernels": k, "runs": cro(t["runs"])}, "gpt2")
    said = [x.get_text() for ax in fig.axes for x in ax.texts if x.get_text().endswith(("here", "recorded"))]
    assert said == ["compile: no kernels recorded", "compile_reduce_overhead: not swept here"]
