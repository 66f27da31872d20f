"""CONTRIBUTING.md's recipes, performed on a copy of the package with the guide's own code,
each checked everywhere its record should reach: a model added as one file is in the
catalog the Snakefile reads and runs; a kernel-duration statistic added as one record is
computed, written into metrics.json and the runs table, listed among the tables' metrics,
in the docs' table and equal to its oracle on a real export; a kernel class added as one
record classifies, orders the class tables, colours figure kernel_classes, decides tensor
FLOP counting and is in the docs' table; a figure added as one module is in the registry
the Snakefile reads, drawn, captioned and in the docs' figure table."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import DATA, ROOT


def snippet(section: str) -> str:
    """The last python block of a CONTRIBUTING.md section."""
    with open(os.path.join(ROOT, "CONTRIBUTING.md")) as f:
        text = f.read()
    body = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", body, flags=re.S)[-1]


def scratch_package(tmp_path) -> str:
    dst = tmp_path / "src"
    shutil.copytree(os.path.join(ROOT, "fusionlab"), dst / "fusionlab",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return str(dst)


def run(src: str, tmp_path, code: str) -> str:
    env = dict(os.environ, PYTHONPATH=src, FUSIONLAB_CACHE_DIR=str(tmp_path / "cache"))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.mark.slow
def test_add_a_model_in_one_file(tmp_path):
    src = scratch_package(tmp_path)
    with open(os.path.join(src, "fusionlab", "experiments", "models", "my_model.py"), "w") as f:
        f.write(snippet("Add a model"))
    out = run(src, tmp_path, "from fusionlab.experiments import catalog; "
                             "print(catalog.default_batch('my_model'), catalog.modes('my_model'))")
    assert out.split() == ["512", "['inference',", "'train']"]
    env = dict(os.environ, PYTHONPATH=src, FUSIONLAB_CACHE_DIR=str(tmp_path / "cache"))
    p = subprocess.run([sys.executable, "-m", "fusionlab.runner", "--model", "my_model", "--variant", "eager",
                        "--batch", "2", "--device", "cpu", "--iters", "2", "--warmup", "1", "--windows", "1",
                        "--out", str(tmp_path / "run.json")], capture_output=True, text=True, env=env,
                       cwd=str(tmp_path))
    assert p.returncode == 0 and '"status": "ok"' in (tmp_path / "run.json").read_text(), p.stderr


def test_add_a_kernel_statistic_in_one_record(tmp_path, report):
    src = scratch_package(tmp_path)
    path = os.path.join(src, "fusionlab", "analysis", "run", "kernel_stats.py")
    with open(path) as f:
        text = f.read()
    record = snippet("Add a metric")
    text = text.replace("\n)\nNAMES = ", "\n" + record.rstrip() + "\n)\nNAMES = ", 1)
    with open(path, "w") as f:
        f.write(text)
    sqlite = report("nsys2025_h100_train/deep_gelu_mlp_eager")
    run_json, timing_json = (os.path.join(DATA, "nsys2025_h100_train", "deep_gelu_mlp_eager", f)
                             for f in ("run.json", "timing.json"))
    sys.path.insert(0, os.path.dirname(__file__))
    from test_metric_records import SQL   # noqa: F401  (the oracle's query: the same export)
    out = run(src, tmp_path, f"""
import numpy as np, sqlite3
from fusionlab.analysis.readers import nsys_sqlite
from fusionlab.analysis.run import kernel_stats, metrics
from fusionlab.analysis.sweep import tables
import sys; sys.path.insert(0, {os.path.dirname(__file__)!r})
from test_metric_records import sql_durations
from fusionlab.analysis.run import run_metrics
from fusionlab.core.io import write_json_atomic
m = metrics.range_metrics(nsys_sqlite.load({sqlite!r}), "measure")
stat = [s for s in kernel_stats.STATS if s.name == "max_kernel_us"][0]
want = stat.oracle(sql_durations({sqlite!r}))
row, _ = run_metrics.compute({run_json!r}, {sqlite!r}, "nsys", {timing_json!r})
write_json_atomic("metrics.json", row)
runs = tables.runs_table(["metrics.json"])
print(m["max_kernel_us"] == want, row["max_kernel_us"] == want, runs["max_kernel_us"].tolist() == [want],
      "max_kernel_us" in set(tables.long_table(runs)["metric"]),
      "| `max_kernel_us` | us |" in kernel_stats.docs_table())
""")
    assert out.split() == ["True"] * 5


def test_add_a_kernel_class_in_one_record(tmp_path):
    """The guide's record, first in RECORDS as it says: an NCCL kernel is in the new class,
    which leads the class order of tables/kernel_classes.csv and the summary's class table,
    colours its segment of figure kernel_classes, keeps its tensor instructions apart from
    FLOPs (mma False) and has its row in the docs' class table."""
    src = scratch_package(tmp_path)
    path = os.path.join(src, "fusionlab", "core", "kernel_class.py")
    with open(path) as f:
        text = f.read()
    assert text.count("\nRECORDS = (\n") == 1
    with open(path, "w") as f:
        f.write(text.replace("\nRECORDS = (\n", "\nRECORDS = (\n" + snippet("Add a kernel class"), 1))
    out = run(src, tmp_path, f"""
import pandas as pd
from matplotlib.colors import to_hex
from fusionlab.analysis.readers import ncu_report
from fusionlab.analysis.report import style, suite_text
from fusionlab.analysis.report.figures.kernel_classes import kernel_classes as draw
from fusionlab.analysis.sweep import suite
from fusionlab.core import kernel_class as K, ncu_passes
nccl = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"
print(K.kernel_class(nccl), K.CLASSES[0], K.COLOURS["communication"], K.MMA_CLASSES == ("attention", "matmul/convolution"))
row = ncu_report._row(0, nccl, "", {{ncu_passes.TENSOR_METRIC: 10.0}})
print(row["tensor_inst_not_mma"], row["flops_tensor"], "| `communication` | `#937860` | no |" in K.docs_table())
k = pd.read_csv({os.path.join(DATA, "real_models_h100", "kernels.csv")!r})
k = k[(k["model"] == "gpt2") & (k["variant"] == "eager")].copy()
k.loc[k["name"] == "vectorized_elementwise_kernel", ["name", "full_name"]] = [nccl, ""]
one = k[k["name"] == nccl].groupby(["batch", "mode", "dtype", "repeat"])["time_per_iter_us"].sum()
want = one.groupby(["batch", "mode", "dtype"]).median()
table = suite.kernel_classes(k)
print(table.groupby(["batch", "mode", "dtype"])["kernel_class"].first().eq("communication").all(),
      suite_text.classes_md(table)[4].split(" | ")[5])
fig = draw({{"kernels": k, "runs": k.iloc[:0]}}, "gpt2")
got = {{(m["batch"], m["mode"], m["dtype"]): m["value"] for m in style.marks(fig)
        if m["quantity"] == "kernel_classes.time_per_iter_us" and m.get("kernel_class") == "communication"}}
bars = [c for c in fig.axes[0].containers if c.get_label() == "communication"][0]
want = want.to_dict()
print(got.keys() == want.keys() and all(abs(got[c] - want[c]) <= 1e-12 * want[c] for c in want),
      to_hex(bars.patches[0].get_facecolor()))
""")
    assert out.split() == ["communication", "communication", "#937860", "True", "10.0", "0.0", "True",
                           "True", "communication", "True", "#937860"]


def test_add_a_figure_in_one_module(tmp_path):
    """The guide's module: in the registry the Snakefile reads (without importing it), with
    its files where the sweep's plan has something to draw, drawn by report.plots with the
    caption its template makes, and in the docs' generated figure table."""
    src = scratch_package(tmp_path)
    with open(os.path.join(src, "fusionlab", "analysis", "report", "figures", "my_figure.py"), "w") as f:
        f.write(snippet("Add a figure"))
    tabs = os.path.join(DATA, "real_models_h100")
    out = run(src, tmp_path, f"""
import sys

from fusionlab.analysis.report import figures
assert "matplotlib" not in sys.modules
f = figures.FIGURES["my_figure"]
plan = figures.plan([{{"model": "gpt2", "variant": "eager", "batch": 8, "sizes": {{}}}}], "cuda", "nsys")
print(f.scope, f.draws, figures.scopes("my_figure", plan), "| `my_figure` | per model | kernels per iteration |" in figures.docs_table())
from fusionlab.analysis.report import plots
t = plots.load_tables(*[{tabs!r} + "/" + n + ".csv" for n in ("runs", "speedups")],
                      headline_csv={tabs!r} + "/headline.csv", kernels_csv={tabs!r} + "/kernels.csv")
print(plots.FIGURES["my_figure"][1], plots.render("my_figure", t, {{"gpt2": ("f.png", "f.svg")}}, {{"gpt2": "f.rst"}}))
print(open("f.rst").read().split(" ")[:5])
""")
    assert out.splitlines() == ["model my_figure:my_figure ['gpt2'] True", "model []",
                                "['Kernels', 'per', 'iteration', 'of', 'gpt2.']"]
    assert (tmp_path / "f.png").stat().st_size > 1000
