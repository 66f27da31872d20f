"""CONTRIBUTING.md's recipes, performed on a copy of the package with the guide's own code:
a model added as one file is in the catalog the Snakefile reads and runs; a kernel-duration
statistic added as one record is computed, listed among the tables' metrics, written into
the docs' table and equal to its oracle on a real export."""
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
    sys.path.insert(0, os.path.dirname(__file__))
    from test_metric_records import SQL   # noqa: F401  (the oracle's query: the same export)
    out = run(src, tmp_path, f"""
import numpy as np, sqlite3
from fusionlab.analysis.readers import nsys_sqlite
from fusionlab.analysis.run import kernel_stats, metrics
from fusionlab.analysis.sweep import tables
import sys; sys.path.insert(0, {os.path.dirname(__file__)!r})
from test_metric_records import sql_durations
m = metrics.range_metrics(nsys_sqlite.load({sqlite!r}), "measure")
stat = [s for s in kernel_stats.STATS if s.name == "max_kernel_us"][0]
print(m["max_kernel_us"] == stat.oracle(sql_durations({sqlite!r})), "max_kernel_us" in tables.METRICS,
      "| `max_kernel_us` | us |" in kernel_stats.docs_table())
""")
    assert out.split() == ["True", "True", "True"]


FIGURE = '''"""A test figure: kernels per iteration of each variant."""
import matplotlib.pyplot as plt

FIGURES = [{"name": "my_figure", "scope": "model", "category": "3. Kernels and fusion", "needs": "any",
            "caption": "Kernels per iteration of {model}.", "shows": "kernels per iteration"}]


def my_figure(tables, model):
    fig, ax = plt.subplots()
    return fig
'''


def test_add_a_figure_in_one_module(tmp_path):
    """A figure module is in the registry the Snakefile reads (without importing it), in
    the README's generated table, and drawn by report.plots."""
    src = scratch_package(tmp_path)
    with open(os.path.join(src, "fusionlab", "analysis", "report", "figures", "my_figure.py"), "w") as f:
        f.write(FIGURE)
    out = run(src, tmp_path, """
import sys

import pytest
from fusionlab.analysis.report import figures
assert "matplotlib" not in sys.modules
f = figures.FIGURES["my_figure"]
print(f.scope, f.draws, "| `my_figure` | kernels per iteration |" in figures.readme_table())
from fusionlab.analysis.report import plots
print(plots.FIGURES["my_figure"][1])
""")
    assert out.split() == ["model", "my_figure:my_figure", "True", "model"]
