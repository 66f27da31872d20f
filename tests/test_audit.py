"""The audit (report.audit): a results folder whose summary, figures, captions and tables
come from one record per claim passes it; a contradiction seeded into a copy (a wrong
verdict, a part larger than the total, a bar from another eager time, a bold verdict an
interval does not allow, a caption that miscounts) is caught with the two numbers.
Built from recorded GPU runs (two H200 fixtures), and on the smoke sweep."""
import os
import re
import shutil

import pandas as pd
import pytest

from conftest import ROOT
from fusionlab.analysis.report import audit, plots
from fusionlab.analysis.report.summary import summary_md, write_text
from fusionlab.analysis.run import run_metrics
from fusionlab.analysis.sweep import headline
from fusionlab.analysis.sweep.build import build
from test_workflow import smoke   # noqa: F401  (the session's smoke sweep)

FIGURES = ("headline", "speedup_vs_batch", "speedup_breakdown")
MODEL = "deep_gelu_mlp"


@pytest.fixture(scope="module")
def gpu_results(tmp_path_factory, request):
    """A results folder made from two recorded H100 runs (deep_gelu_mlp training, eager
    and compile_reduce_overhead, batch 256, each with its untraced timing): metrics,
    tables, the headline, three figures with their data and captions, the summary with
    the audit in its banner."""
    from conftest import DATA
    import gzip
    res = tmp_path_factory.mktemp("gpu") / "results"
    dirs = []
    for variant in ("eager", "compile_reduce_overhead"):
        d = res / "runs" / "nsys" / MODEL / variant / "train_float32" / "bs256" / "r0"
        d.mkdir(parents=True)
        src = os.path.join(DATA, "nsys2025_h100_train", f"{MODEL}_{variant}")
        for name in ("run.json", "timing.json"):
            shutil.copy(os.path.join(src, name), d / name)
        with gzip.open(os.path.join(src, "report.sqlite.gz")) as f, open(d / "report.sqlite", "wb") as g:
            shutil.copyfileobj(f, g)
        run_metrics.main(str(d / "run.json"), str(d / "report.sqlite"), "nsys", str(d / "metrics.json"),
                         str(d / "kernels.csv"), timing_json=str(d / "timing.json"))
        dirs.append(d)
    t = res / "tables"
    out = {k: str(t / f"{k}.csv") for k in ("runs", "long", "speedups", "crossover", "kernels", "breakdown",
                                            "scaling", "kernel_resources")}
    build([str(d / "metrics.json") for d in dirs], [str(d / "kernels.csv") for d in dirs], None, None, out)
    h = headline.table(pd.read_csv(out["runs"]), pd.read_csv(out["speedups"]))
    h.to_csv(t / "headline.csv", index=False)
    tabs = plots.load_tables(out["runs"], out["speedups"], out["crossover"], None, out["scaling"],
                             out["kernel_resources"], out["breakdown"], str(t / "headline.csv"), out["kernels"])
    for fig in FIGURES:
        base = res / "figures" / fig / MODEL
        base.parent.mkdir(parents=True)
        plots.render(fig, tabs, {MODEL: (f"{base}.png", None)}, {MODEL: f"{base}.rst"}, {MODEL: f"{base}.data.csv"})
    md = summary_md(tabs["runs"], tabs["speedups"], tabs["crossover"], None, headline=tabs["headline"])
    found = audit.audit(str(res), summary_text=md)
    write_text(str(res / "summary.md"), summary_md(tabs["runs"], tabs["speedups"], tabs["crossover"], None,
                                                   headline=tabs["headline"],
                                                   audit=[found.line(), *found.violations]))
    return str(res)


def seeded(src, dst, edit):
    shutil.copytree(src, dst)
    edit(str(dst))
    return audit.audit(str(dst))


def test_recorded_gpu_runs_pass_the_audit(gpu_results):
    a = audit.audit(gpu_results)
    assert a.violations == [] and a.checks >= 20, a.violations
    md = open(f"{gpu_results}/summary.md").read()
    assert f"The {a.line()} between the records" in md
    assert audit.main([gpu_results]) == 0


def edit_csv(path, fn):
    df = pd.read_csv(path)
    fn(df)
    df.to_csv(path, index=False)


def test_a_wrong_verdict_is_caught(gpu_results, tmp_path):
    def edit(res):
        edit_csv(f"{res}/tables/headline.csv", lambda h: h.__setitem__(
            "verdict", h["verdict"].where(h["variant"] == "eager", "faster")))
    a = seeded(gpu_results, tmp_path / "r", edit)
    assert any("verdict 'faster' but its interval" in v for v in a.violations), a.violations


def test_a_part_larger_than_the_total_is_caught(gpu_results, tmp_path):
    def edit(res):
        def bigger(h):
            v = h["variant"] != "eager"
            h["largest_part"] = h["largest_part"].astype(object)
            h.loc[v, "largest_part"] = "kernels_saved_ms"
            h.loc[v, "kernels_saved_ms"] = h.loc[v, "saved_ms"] * 3
            h.loc[v, "largest_part_ms"] = h.loc[v, "saved_ms"] * 3
        edit_csv(f"{res}/tables/headline.csv", bigger)
    a = seeded(gpu_results, tmp_path / "r", edit)
    assert any("parts add up to" in v for v in a.violations), a.violations
    assert any("largest part kernels_saved_ms" in v for v in a.violations), a.violations


def test_a_bar_from_another_eager_time_is_caught(gpu_results, tmp_path):
    def edit(res):
        def other(m):
            tick = m["quantity"] == "eager_wall_ms"
            assert tick.any()
            m.loc[tick, "value"] = m.loc[tick, "value"] * 1.6
        edit_csv(f"{res}/figures/headline/{MODEL}.data.csv", other)
    a = seeded(gpu_results, tmp_path / "r", edit)
    assert any(f"figures/headline/{MODEL}.data.csv reference tick" in v and "draws eager_wall_ms" in v
               for v in a.violations), a.violations


def test_a_bold_verdict_the_interval_does_not_allow_is_caught(gpu_results, tmp_path):
    def edit(res):
        path = f"{res}/summary.md"
        text = open(path).read()
        new = re.sub(r"no verdict from one repeat; the highest estimate, (\w+):", r"**\1** beats eager:", text)
        assert new != text
        open(path, "w").write(new)
    a = seeded(gpu_results, tmp_path / "r", edit)
    assert any("bold, beats eager but the verdict is" in v for v in a.violations), a.violations


def test_a_caption_that_miscounts_is_caught(gpu_results, tmp_path):
    def edit(res):
        path = f"{res}/figures/headline/{MODEL}.rst"
        text = open(path).read()
        open(path, "w").write(re.sub(r"\((\d+) configurations drawn", "(7 configurations drawn", text))
    a = seeded(gpu_results, tmp_path / "r", edit)
    assert any("the caption counts 7 configurations, the figure draws 1" in v for v in a.violations), a.violations


@pytest.mark.smoke_reader
def test_the_smoke_sweep_passes_its_audit(smoke):
    a = audit.audit(smoke.res)
    assert a.violations == [] and a.checks > 50, a.violations
    assert "The audit: " in open(f"{smoke.res}/summary.md").read()


def test_the_cli_says_what_disagrees(gpu_results, tmp_path, capsys):
    res = tmp_path / "r"
    shutil.copytree(gpu_results, res)
    edit_csv(f"{res}/tables/headline.csv", lambda h: h.__setitem__("speedup", h["speedup"] * 1.5))
    assert audit.main([str(res)]) == 1
    out = capsys.readouterr().out
    assert "eager's time / the variant's" in out and "contradiction(s)" in out
    assert audit.main([str(tmp_path / "nothing")]) == 2
    assert os.path.isdir(ROOT)


def test_hostile_values_in_a_results_folder_reach_captions_as_text(gpu_results, tmp_path):
    """A run's recorded fields (here the GPU's name in runs.csv) reach a caption only as
    plain text: no template or markup survives captions.safe_text."""
    from fusionlab.analysis.report import captions
    res = tmp_path / "r"
    shutil.copytree(gpu_results, res)
    edit_csv(f"{res}/tables/runs.csv", lambda r: r.__setitem__(
        "gpu", "{{ cycler.__init__.__globals__.os.system('id') }}\n.. include:: /etc/passwd"))
    t = plots.load_tables(f"{res}/tables/runs.csv", f"{res}/tables/speedups.csv", f"{res}/tables/crossover.csv",
                          None, f"{res}/tables/scaling.csv", f"{res}/tables/kernel_resources.csv",
                          f"{res}/tables/breakdown.csv", f"{res}/tables/headline.csv", f"{res}/tables/kernels.csv")
    text = captions.caption("headline", t, MODEL)
    assert captions.is_safe(text) and "{" not in text and "\n.." not in text and "cycler" in text


def test_a_host_skewed_speedup_left_unsaid_is_caught(gpu_results, tmp_path):
    def edit(res):
        edit_csv(f"{res}/tables/headline.csv", lambda h: h.__setitem__("host_skewed", h["variant"] != "eager"))
    a = seeded(gpu_results, tmp_path / "r", edit)
    assert any("does not say host-skewed, the record's host_skewed is True" in v for v in a.violations), a.violations
    for fig in FIGURES:   # every figure's speedup label too
        assert any(f"figures/{fig}/{MODEL}.data.csv label" in v and "the record's host_skewed True" in v
                   for v in a.violations), (fig, a.violations)


def test_a_host_skewed_speedup_is_said_in_every_label():
    from fusionlab.analysis.report.figures.headline import speedup_label
    from fusionlab.analysis.report import text
    r = {"speedup": 3.2275, "estimator": "paired", "speedup_lo": float("nan"), "speedup_hi": float("nan"),
         "interval": "1 repeat", "verdict": "1 repeat", "host_skewed": True}
    assert speedup_label(r) == "3.23x (1 repeat), host-skewed"
    assert text.speedup(r) == "3.23x paired (1 repeat), host-skewed"
    assert speedup_label({**r, "host_skewed": False}) == "3.23x (1 repeat)"


@pytest.mark.parametrize("estimator, slowdown, eager, variant, skewed", [
    ("paired", 2.06, "host", "gpu", True),      # eager stretched by the slow host, the CUDA graph not
    ("paired", 2.06, "gpu", "host", True),
    ("paired", 2.06, "host", "host", False),    # both sides stretched alike: the pairing cancels it
    ("paired", 1.2, "host", "gpu", False),      # the host at most HOST_SLOW x its best
    ("across processes", 2.06, "host", "gpu", False),
    ("paired", float("nan"), "host", "gpu", False),
    ("paired", 2.06, None, "gpu", False),
])
def test_host_skew(estimator, slowdown, eager, variant, skewed):
    assert headline.host_skew(estimator, slowdown, eager, variant) is skewed


def test_the_real_model_sweep_skews_only_the_run_a_quiet_host_contradicts():
    """The H100 real-model sweep (benchmarks/results/h100-real-models-part2): one speedup
    is host-skewed, bert compile_reduce_overhead at batch 32: 3.23x paired in the sweep,
    where the same run alone on the machine gave 1.52x (alone.txt there)."""
    from fusionlab.analysis.report import text
    d = os.path.join(ROOT, "benchmarks", "results", "h100-real-models-part2", "tables")
    h = headline.table(pd.read_csv(os.path.join(d, "runs.csv")), pd.read_csv(os.path.join(d, "speedups.csv")))
    skewed = h[h["host_skewed"]]
    assert [tuple(r) for r in skewed[["model", "variant", "batch", "mode"]].values] == \
        [("bert", "compile_reduce_overhead", 32, "inference")]
    assert text.speedup(skewed.iloc[0]) == "3.23x paired (1 repeat), host-skewed"


def test_a_headline_without_a_column_it_reads_is_one_violation(gpu_results, tmp_path):
    a = seeded(gpu_results, tmp_path / "r", lambda res: edit_csv(f"{res}/tables/headline.csv",
                                                                  lambda h: h.drop(columns=["speedup", "saved_ms"],
                                                                                   inplace=True)))
    assert "tables/headline.csv: no column speedup, saved_ms: the audit reads it" in a.violations


def test_a_headline_whose_speedups_are_gone_contradicts_the_summary_and_stops_nothing(gpu_results, tmp_path):
    a = seeded(gpu_results, tmp_path / "r", lambda res: edit_csv(f"{res}/tables/headline.csv",
                                                                  lambda h: h.__setitem__("speedup", float("nan"))))
    assert a.violations and a.checks > 1


def test_a_host_time_the_summary_does_not_quote_is_caught(gpu_results, tmp_path):
    a = seeded(gpu_results, tmp_path / "r", lambda res: edit_csv(f"{res}/tables/headline.csv",
                                                                  lambda h: h.__setitem__("host_ms", h["host_ms"] * 10)))
    found = [v for v in a.violations if v.startswith("summary.md: Time per iteration, ")]
    assert found and all("exposed host time says " in v and ", the record gives " in v for v in found), a.violations
