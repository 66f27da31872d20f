"""Every figure is a function of the written tables alone (tables/*.csv and
device/peaks.json, as the tables and headline rules write them): drawn from those files
copied into an empty folder, with the sweep layer's table builders made to fail; no
figure the sweep's plan lists is drawn empty; and the report layer imports no reader."""
import ast
import glob
import json
import os
import shutil

import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from conftest import ROOT

from fusionlab.analysis.report import figures, legibility, plots, style
from fusionlab.analysis.run import attribution as run_attribution
from fusionlab.analysis.run import run_metrics
from fusionlab.analysis.sweep import attribution as sweep_attribution
from fusionlab.analysis.sweep import build as sweep_build
from fusionlab.analysis.sweep import suite as sweep_suite
from fusionlab.analysis.sweep import decompose, gap_ledger, headline, overfusion, scaling, shares, stats, tables

FIXTURES = ("mlp_eager", "mlp_compile", "pointwise_heavy_eager", "pointwise_heavy_compile")
PEAKS = {"copy_bandwidth_Bps": 4.0e12, "matmul_flops": 5.0e13, "device": "cuda"}
# every sweep-layer function that builds a table or a statistic from runs
BUILDERS = {sweep_build: ("build",),
            tables: ("runs_table", "long_table", "speedups", "crossover", "kernels_table",
                     "host_slowdown", "compile_cost", "along_axes"),
            decompose: ("breakdown_wide", "breakdown", "side"),   # wide_from_long reads a written table back
            scaling: ("table", "fit", "bootstrap_k"),
            overfusion: ("kernel_resources", "fused", "bandwidth"),
            stats: ("median_ci", "ratio_ci", "crossover", "spans"),
            headline: ("table", "crossings"),
            gap_ledger: ("build", "rows_of"),
            shares: ("split", "per_run", "inputs")}


@pytest.fixture
def written(report, tmp_path):
    """A results folder holding only what the tables rule writes (tables/*.csv and
    device/peaks.json), built from the four H200 fixtures with a cost table and an
    untraced wall time."""
    build = tmp_path / "build"
    build.mkdir()
    metric_files, kernel_files = [], []
    for name in FIXTURES:
        d = os.path.join(ROOT, "tests", "data", "nsys2025_h200", name)
        metric_files.append(str(build / f"{name}.json"))
        kernel_files.append(str(build / f"{name}.csv"))
        run_metrics.main(os.path.join(d, "run.json"), report(f"nsys2025_h200/{name}"), "nsys",
                         metric_files[-1], kernel_files[-1])
        m = json.loads(open(metric_files[-1]).read())   # the untraced wall time (no timing.json here)
        m["wall_time_per_iter_ms"] = 2.0 if name.endswith("eager") else 1.0
        m["profiler_overhead"] = m["traced_wall_time_per_iter_ms"] / m["wall_time_per_iter_ms"]
        open(metric_files[-1], "w").write(json.dumps(m))
    costs = pd.DataFrame([{"model": m, "batch": 128, "mode": "inference", "dtype": "float32", "size": "default",
                           "flops": 2e9, "flops_pointwise": 1e6, "bytes_unfused": 4e8, "bytes_fused": 1e8}
                          for m in ("mlp", "pointwise_heavy")])
    costs.to_csv(build / "costs.csv", index=False)
    (build / "peaks.json").write_text(json.dumps(PEAKS))
    out = {k: str(build / f"{k}.csv") for k in ("runs", "long", "speedups", "crossover", "kernels",
                                                "breakdown", "scaling", "kernel_resources")}
    sweep_build.build(metric_files, kernel_files, str(build / "costs.csv"), str(build / "peaks.json"), out)
    out["headline"] = str(build / "headline.csv")   # the headline rule
    headline.table(pd.read_csv(out["runs"]), pd.read_csv(out["speedups"]), PEAKS).to_csv(out["headline"], index=False)
    out["suite"] = str(build / "suite.csv")         # the suite rule
    sweep_suite.suite(pd.read_csv(out["headline"])).to_csv(out["suite"], index=False)
    out["gap_ledger"] = str(build / "gap_ledger.csv")   # the gap_ledger rule
    gap_ledger.write(metric_files, out["headline"], out["kernels"], out["gap_ledger"])
    for name, m in zip(FIXTURES, metric_files):      # the attribution rules (no op record, no provenance kept)
        (build / name).mkdir()
        shutil.copy(m, build / name / "metrics.json")
        run_attribution.main(os.path.join(ROOT, "tests", "data", "nsys2025_h200", name, "run.json"),
                             report(f"nsys2025_h200/{name}"), str(build / name / "attribution.csv"))
    out["attribution"] = str(build / "attribution.csv")
    sweep_attribution.write([str(build / name / "metrics.json") for name in FIXTURES], out["attribution"])
    res = tmp_path / "results"
    (res / "tables").mkdir(parents=True)
    (res / "device").mkdir()
    names = {"long": "metrics_long", "breakdown": "speedup_breakdown"}
    for k, path in out.items():
        shutil.copy(path, res / "tables" / f"{names.get(k, k)}.csv")
    shutil.copy(build / "peaks.json", res / "device" / "peaks.json")
    shutil.rmtree(build)
    return res


def drawn(fig) -> list[str]:
    """The titles (or indices) of the figure's visible panels that hold no data: no line,
    marker, bar or image."""
    empty = []
    for i, ax in enumerate(a for a in fig.axes if a.get_visible() and a.get_label() != "<colorbar>"):
        if not (ax.lines or ax.collections or ax.patches or ax.images or ax.containers):
            empty.append(ax.get_title() or str(i))
    return empty


def _refuse(name):
    def refuse(*_a, **_k):
        raise AssertionError(f"a figure computed a table ({name}) instead of reading the written one")
    return refuse


def test_every_figure_from_the_written_tables_alone(written, tmp_path, monkeypatch):
    """Every figure the plan lists, drawn from the written tables (no table computed): data
    in every panel, text kept as text, a title of at most two lines, no text over another or past the
    figure's edge, a short caption."""
    for module, names in BUILDERS.items():
        for name in names:
            monkeypatch.setattr(module, name, _refuse(f"{module.__name__}.{name}"))
    read, real, opened = [], pd.read_csv, os.open
    monkeypatch.setattr(pd, "read_csv", lambda path, *a, **k: isinstance(path, (str, os.PathLike))
                        and read.append(str(path)) or real(path, *a, **k))
    monkeypatch.setattr(os, "open", lambda path, *a, **k: str(path).endswith(".csv") and read.append(str(path))
                        or opened(path, *a, **k))
    tab = written / "tables"
    t = plots.load_tables(tab / "runs.csv", tab / "speedups.csv", tab / "crossover.csv",
                          written / "device" / "peaks.json", tab / "scaling.csv", tab / "kernel_resources.csv",
                          tab / "speedup_breakdown.csv", tab / "headline.csv", tab / "kernels.csv",
                          tab / "suite.csv", tab / "gap_ledger.csv", tab / "attribution.csv")
    assert {os.path.dirname(p) for p in read} == {str(tab)}
    assert t["peaks"] == PEAKS
    # the figures draw data, not their empty states
    assert len(t["breakdown"]) == 2 and set(t["breakdown"]["model"]) == {"mlp", "pointwise_heavy"}
    assert t["runs"]["arithmetic_intensity"].notna().all() and t["kernel_resources"]["theoretical_occupancy"].notna().any()
    assert plots.FIGURES.keys() == figures.FIGURES.keys()
    plan = figures.plan([{"model": m, "variant": v, "batch": b, "sizes": {}} for m, v, b in
                         t["runs"][["model", "variant", "batch"]].itertuples(index=False)], "cuda", "nsys")
    listed = {fig: figures.scopes(fig, plan) for fig in figures.FIGURES}
    # one batch size and no size axis: no crossover, no scaling law; no ncu roofline pass:
    # no per-kernel roofline (tests/test_bytes_roofline.py draws it); every other figure
    assert [f for f, s in listed.items() if not s] == ["kernel_roofline", "crossover", "scaling"]
    saved, save = {}, plots.save        # each figure as render saved it (checked below, not drawn again)
    monkeypatch.setattr(plots, "save", lambda f, png, svg=None: saved.__setitem__(png, f) or save(f, png, svg))
    for fig, scopes in listed.items():
        outputs = {s: (str(tmp_path / f"{fig}_{s}.png"), str(tmp_path / f"{fig}_{s}.svg")) for s in scopes}
        captions = {s: str(tmp_path / f"{fig}_{s}.rst") for s in scopes}
        assert plots.render(fig, t, outputs, captions) == [], fig      # nothing drawn as a marker
        for s in scopes:
            f = saved[outputs[s][0]]
            FigureCanvasAgg(f)          # the canvas pyplot.close took away, to measure its texts
            assert drawn(f) == [], (fig, s)
            svg = open(outputs[s][1]).read()
            assert "<text" in svg and f.get_suptitle().split(":")[-1].strip()[:12] in svg, (fig, s)   # text as text
            assert f.get_suptitle().count("\n") <= 1                                           # a title of 1 or 2 lines
            # no two texts it draws overlap (titles, tick labels, values, labels beside
            # points, legends, footer) and none is cut off at the figure's edge
            assert legibility.text_overlaps(f) == [] and legibility.texts_outside(f) == [], (fig, s)
            style.plt.close(f)
            assert 10 < len(open(captions[s]).read().split()) < 90, (fig, s)                 # a short caption


def test_a_figure_without_data_raises_and_a_marker_is_written(written, tmp_path):
    """A figure with nothing to draw is never an empty plot: its function raises NoData,
    render writes a small marker saying why."""
    tab = written / "tables"
    t = plots.load_tables(tab / "runs.csv", tab / "speedups.csv")   # no headline table: nothing to draw
    for fig in ("headline", "speedup_vs_batch", "launch_overhead", "crossover"):
        with pytest.raises(style.NoData):
            plots.FIGURES[fig][0](t, None if plots.FIGURES[fig][1] == "sweep" else "mlp")
    png = str(tmp_path / "h.png")
    assert plots.render("headline", t, {"mlp": (png, None)}) == ["mlp"] and os.path.getsize(png) < 20_000


def test_breakdown_read_back_is_the_decomposition(written):
    """The breakdown table read back, one row per configuration, holds the values
    decompose.breakdown_wide computes from the runs and speedups tables."""
    tab = written / "tables"
    runs, sp = pd.read_csv(tab / "runs.csv"), pd.read_csv(tab / "speedups.csv")
    wide = decompose.wide_from_long(pd.read_csv(tab / "speedup_breakdown.csv"))
    expected = decompose.breakdown_wide(runs, sp, PEAKS)[list(wide.columns)]
    pd.testing.assert_frame_equal(wide, expected, check_dtype=False)


def test_report_imports_no_reader_and_figures_list_needs_no_matplotlib():
    report = os.path.join(ROOT, "fusionlab", "analysis", "report")
    for path in glob.glob(os.path.join(report, "**", "*.py"), recursive=True):
        tree = ast.parse(open(path).read())
        imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert not [m for m in imported if m.startswith("fusionlab.analysis.readers")], path
        if path.endswith(os.path.join("figures", "__init__.py")):
            assert not [m for m in imported if m.startswith("matplotlib") or m.startswith("fusionlab")], path


@pytest.mark.slow
def test_regenerating_gpu_results_on_any_machine_plans_the_gpu_figures(report, tmp_path):
    """GPU runs copied without their profiles (run.json, metrics.json, kernels.csv of two
    H200 fixtures) or Nsight Compute reports, regenerated here (a CPU machine in CI): the
    plan draws the figures of GPU runs too (launch overhead, idle breakdown, over-fusion),
    from the runs' device; a kept traffic.json is used, a run without one is 'not run'."""
    import subprocess
    import sys
    res = tmp_path / "results"
    for name in ("mlp_eager", "mlp_compile"):
        model, variant = name.rsplit("_", 1)
        d = res / "runs" / "nsys" / model / variant / "inference_float32" / "bs128" / "r0"
        d.mkdir(parents=True)
        src = os.path.join(ROOT, "tests", "data", "nsys2025_h200", name)
        shutil.copy(os.path.join(src, "run.json"), d / "run.json")
        run_metrics.main(str(d / "run.json"), report(f"nsys2025_h200/{name}"), "nsys", str(d / "metrics.json"),
                         str(d / "kernels.csv"))
        # the ncu step's record, its report not copied; eager's traffic files kept, compile's not made
        (d / "ncu.json").write_text(json.dumps({"status": "ok", "reason": None, "bytes": {
            "status": "ok", "reason": None, "report": "ncu_bytes.ncu-rep", "passes": 1}}))
        if variant == "eager":
            (d / "traffic.json").write_text(json.dumps({"ncu_status": "ok"}))
    (tmp_path / "sweep.yaml").write_text(f"models: [mlp]\nvariants: [compile]\nbatch_sizes: [128]\nresults: {res}\n")
    p = subprocess.run([sys.executable, "-m", "snakemake", "-n", "regenerate", "--cores", "1", "--configfile",
                        str(tmp_path / "sweep.yaml"), "--config", "regenerate=1"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    for rule in ("figure_launch_overhead", "figure_idle_breakdown", "figure_over_fusion"):
        assert rule in p.stdout, rule
    assert "1 run folder(s) have no traffic.json and none can be read here" in p.stderr
    assert "1 run folder(s) have no .ncu-rep report: their measured traffic" in p.stderr
    assert "rule ncu_traffic" not in p.stdout


def test_the_roofline_note_goes_to_the_corner_with_the_fewest_points():
    """The red note of a point above a roof: in the lower right unless points are there,
    then the lower left."""
    from fusionlab.analysis.report.figures.roofline import free_corner_text
    fig, ax = style.plt.subplots()
    ax.set_xlim(0, 10); ax.set_ylim(0, 10)
    points = [(9.0, 0.5), (8.5, 0.8), (9.5, 0.3)]
    ax.scatter(*zip(*points))
    t = free_corner_text(ax, "a note of some length", points)
    assert (t.get_ha(), t.get_va()) == ("left", "bottom") and len(ax.texts) == 1
    t.remove()
    assert free_corner_text(ax, "a note", []).get_ha() == "right"
    style.plt.close(fig)
