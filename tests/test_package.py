"""The package: the `fusionlab` command, and layers that never import upward."""
import ast
import os
import subprocess
import sys

from conftest import ROOT

PKG = os.path.join(ROOT, "fusionlab")
# what each layer may import from the package (the data flows core -> experiments -> analysis)
ALLOWED = {"core": {"core"}, "experiments": {"core", "experiments"}, "analysis": {"core", "analysis"}}


def package_imports(path):
    tree = ast.parse(open(path).read())
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        for n in names:
            if n.startswith("fusionlab."):
                yield n.split(".")[1]


def test_layers_never_import_upward():
    bad = []
    for layer, allowed in ALLOWED.items():
        for dirpath, _, files in os.walk(os.path.join(PKG, layer)):
            for f in files:
                if f.endswith(".py"):
                    path = os.path.join(dirpath, f)
                    bad += [(os.path.relpath(path, ROOT), m) for m in package_imports(path) if m not in allowed]
    assert not bad


def test_fusionlab_command_lists_its_subcommands():
    p = subprocess.run([sys.executable, "-m", "fusionlab.cli", "--help"], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0
    for cmd in ("run", "analyse", "diff", "compare", "list"):
        assert f"fusionlab {cmd}" in p.stdout


def test_analyse_does_not_load_torch(report):
    code = ("import sys; from fusionlab.cli import main; rc = main(['analyse', sys.argv[1]]); "
            "assert 'torch' not in sys.modules, 'torch loaded'; sys.exit(rc)")
    p = subprocess.run([sys.executable, "-c", code, report("nsys2025_h200/mlp_eager")],
                       capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr[-2000:]
    assert '"fusionlab:measure"' in p.stdout


def test_list_shows_models_and_support():
    p = subprocess.run([sys.executable, "-m", "fusionlab.cli", "list", "--device", "cpu"],
                       capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0
    assert "pointwise_heavy" in p.stdout and "cuda_graph" in p.stdout and "none" in p.stdout


def test_catalog_matches_the_registry():
    """catalog.json (what the Snakefile reads) is the registry's own metadata; after adding a
    model or variant: python -m fusionlab.experiments.catalog --write."""
    from fusionlab.experiments import catalog
    assert catalog.from_registry() == catalog.load(), \
        "catalog.json is stale: run python -m fusionlab.experiments.catalog --write"


DRY_RUN = """
import sys
from snakemake.cli import main
try:
    main(["-n", "all", "--configfile", "config/smoke.yaml", "--config", "results=%s", "--quiet"])
except SystemExit as e:
    code = e.code
print("HEAVY", sorted(m for m in ("torch", "matplotlib") if m in sys.modules), "EXIT", code)
"""


def test_dag_builds_without_torch_or_matplotlib(tmp_path):
    p = subprocess.run([sys.executable, "-c", DRY_RUN % (tmp_path / "r")], capture_output=True, text=True, cwd=ROOT)
    assert "HEAVY [] EXIT 0" in p.stdout, p.stdout[-2000:] + p.stderr[-2000:]
