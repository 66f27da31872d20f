"""Every figure is a function of the written tables alone (tables/*.csv and
device/peaks.json, as the tables rule writes them): drawn from those files copied into an
empty folder, with the sweep layer's table builders made to fail; and the report layer
imports no reader."""
import ast
import glob
import json
import os
import shutil

import pandas as pd
import pytest

from conftest import ROOT

from fusionlab.analysis.report import figures, plots
from fusionlab.analysis.run import run_metrics
from fusionlab.analysis.sweep import decompose, overfusion, scaling, stats, tables

FIXTURES = ("mlp_eager", "mlp_compile", "pointwise_heavy_eager", "pointwise_heavy_compile")
PEAKS = {"copy_bandwidth_Bps": 4.0e12, "matmul_flops": 5.0e13, "device": "cuda"}
# every sweep-layer function that builds a table or a statistic from runs
BUILDERS = {tables: ("runs_table", "long_table", "speedups", "crossover", "kernels_table", "build",
                     "host_slowdown", "compile_cost", "along_axes"),
            decompose: ("breakdown_wide", "breakdown", "side", "wide_from_long"),
            scaling: ("table", "fit", "bootstrap_k"),
            overfusion: ("kernel_resources", "fused", "bandwidth"),
            stats: ("median_ci", "ratio_ci", "crossover", "spans")}


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
        open(metric_files[-1], "w").write(json.dumps(m))
    costs = pd.DataFrame([{"model": m, "batch": 128, "mode": "inference", "dtype": "float32", "size": "default",
                           "flops": 2e9, "flops_pointwise": 1e6, "bytes_unfused": 4e8, "bytes_fused": 1e8}
                          for m in ("mlp", "pointwise_heavy")])
    costs.to_csv(build / "costs.csv", index=False)
    (build / "peaks.json").write_text(json.dumps(PEAKS))
    out = {k: str(build / f"{k}.csv") for k in ("runs", "long", "speedups", "crossover", "kernels",
                                                "breakdown", "scaling", "kernel_resources")}
    tables.build(metric_files, kernel_files, str(build / "costs.csv"), str(build / "peaks.json"), out)
    res = tmp_path / "results"
    (res / "tables").mkdir(parents=True)
    (res / "device").mkdir()
    names = {"long": "metrics_long", "breakdown": "speedup_breakdown"}
    for k, path in out.items():
        shutil.copy(path, res / "tables" / f"{names.get(k, k)}.csv")
    shutil.copy(build / "peaks.json", res / "device" / "peaks.json")
    shutil.rmtree(build)
    return res


def _refuse(name):
    def refuse(*_a, **_k):
        raise AssertionError(f"a figure computed a table ({name}) instead of reading the written one")
    return refuse


def test_every_figure_from_the_written_tables_alone(written, tmp_path, monkeypatch):
    for module, names in BUILDERS.items():
        for name in names:
            monkeypatch.setattr(module, name, _refuse(f"{module.__name__}.{name}"))
    read, real = [], pd.read_csv
    monkeypatch.setattr(pd, "read_csv", lambda path, *a, **k: read.append(str(path)) or real(path, *a, **k))
    tab = written / "tables"
    t = plots.load_tables(tab / "runs.csv", tab / "speedups.csv", tab / "crossover.csv",
                          written / "device" / "peaks.json", tab / "scaling.csv", tab / "kernel_resources.csv",
                          tab / "speedup_breakdown.csv")
    assert {os.path.dirname(p) for p in read} == {str(tab)}
    assert t["peaks"] == PEAKS
    # the figures draw data, not their empty states
    assert len(t["breakdown"]) == 2 and set(t["breakdown"]["model"]) == {"mlp", "pointwise_heavy"}
    assert t["runs"]["arithmetic_intensity"].notna().all() and t["kernel_resources"]["theoretical_occupancy"].notna().any()
    models = sorted(set(t["runs"]["model"]))
    assert plots.FIGURES.keys() == figures.FIGURES.keys()
    for fig, (_, scope, _) in plots.FIGURES.items():
        scopes = models if scope == "model" else [plots.SWEEP]
        outputs = {s: (str(tmp_path / f"{fig}_{s}.png"), str(tmp_path / f"{fig}_{s}.svg")) for s in scopes}
        plots.render(fig, t, outputs)
        for png, svg in outputs.values():
            assert os.path.getsize(png) > 1000 and os.path.getsize(svg) > 1000, (fig, png)


def test_breakdown_read_back_is_the_decomposition(written):
    """The breakdown table read back, one row per configuration, holds the values
    decompose.breakdown_wide computes from the runs and speedups tables."""
    tab = written / "tables"
    runs, sp = pd.read_csv(tab / "runs.csv"), pd.read_csv(tab / "speedups.csv")
    wide = plots.breakdown_by_configuration(pd.read_csv(tab / "speedup_breakdown.csv"))
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
