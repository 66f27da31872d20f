"""The package: the `fusionlab` command, layers that never import upward, no import cycle
between modules, and no module over MAX_LINES lines."""
import ast
import os
import subprocess
import sys

import pytest

from conftest import ROOT

PKG = os.path.join(ROOT, "fusionlab")
# what each layer may import from the package (core -> experiments (what can run) -> jobs
# (one job's process around it) -> runner -> plan (a sweep's plan); core -> analysis; bench,
# the benchmarks' library, over all but the plan)
ALLOWED = {"core": {"core"}, "experiments": {"core", "experiments"}, "jobs": {"core", "experiments", "jobs"},
           "runner": {"core", "experiments", "jobs", "runner"},
           "plan": {"core", "experiments", "jobs", "plan"},
           "analysis": {"core", "analysis"}, "bench": {"core", "experiments", "jobs", "runner", "analysis", "bench"}}
# inside fusionlab/analysis the data flows readers -> run -> sweep -> report: what each
# sub-package may import from analysis (__main__, the front end, may import all of them)
ANALYSIS_LAYERS = ("readers", "run", "sweep", "report")
ANALYSIS_ALLOWED = {layer: set(ANALYSIS_LAYERS[:i + 1]) for i, layer in enumerate(ANALYSIS_LAYERS)}
MAX_LINES = 450
LONG_REASON = "Over 450 lines:"   # a module's docstring that says why it is longer


def imported_modules(path):
    """Every fusionlab module path named by an import in the file (function-level imports
    included: ast.walk sees them); `from fusionlab.x import y` names fusionlab.x.y where
    that is a module, else fusionlab.x."""
    tree = ast.parse(open(path).read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            base = node.module or ""
            names = [f"{base}.{a.name}" if module_file(f"{base}.{a.name}") else base for a in node.names]
        else:
            names = []
        yield from (n for n in names if n == "fusionlab" or n.startswith("fusionlab."))


def package_imports(path):
    for n in imported_modules(path):
        if n.startswith("fusionlab."):
            yield n.split(".")[1]


def module_file(name: str) -> str | None:
    """The file of module `name` (a package's __init__.py), or None."""
    base = os.path.join(ROOT, *name.split("."))
    for p in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(p):
            return p
    return None


def modules():
    """Module name -> file, for every module of fusionlab/."""
    out = {}
    for dirpath, _, files in os.walk(PKG):
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(dirpath, f), ROOT)[:-3].split(os.sep)
                out[".".join(rel[:-1] if rel[-1] == "__init__" else rel)] = os.path.join(dirpath, f)
    return out


def test_layers_never_import_upward():
    bad = []
    for layer, allowed in ALLOWED.items():
        for dirpath, _, files in os.walk(os.path.join(PKG, layer)):
            for f in files:
                if f.endswith(".py"):
                    path = os.path.join(dirpath, f)
                    bad += [(os.path.relpath(path, ROOT), m) for m in package_imports(path) if m not in allowed]
    assert not bad


def test_analysis_layers_never_import_upward():
    """readers -> run -> sweep -> report: each imports only its own layer and lower ones
    (readers no other analysis layer); function-level imports count."""
    bad = []
    for layer, allowed in ANALYSIS_ALLOWED.items():
        for dirpath, _, files in os.walk(os.path.join(PKG, "analysis", layer)):
            for f in (f for f in files if f.endswith(".py")):
                path = os.path.join(dirpath, f)
                for m in imported_modules(path):
                    parts = m.split(".")
                    if parts[:2] == ["fusionlab", "analysis"] and len(parts) > 2 and parts[2] not in allowed:
                        bad.append((os.path.relpath(path, ROOT), m))
    assert not bad


def test_no_import_cycle():
    """The graph of fusionlab's modules (an edge per import, function-level ones included;
    importing a module imports its packages' __init__ too) has no cycle."""
    mods = modules()
    graph = {}
    for name, path in mods.items():
        deps = set()
        for m in imported_modules(path):
            while m and m not in mods:
                m = m.rpartition(".")[0]
            if m and m != name:
                deps.add(m)
        graph[name] = deps
    state, cycle = {}, []

    def visit(n, stack):
        state[n] = "open"
        stack.append(n)
        for d in sorted(graph[n]):
            if state.get(d) == "open":
                cycle.append(stack[stack.index(d):] + [d])
            elif d not in state:
                visit(d, stack)
        stack.pop()
        state[n] = "done"

    for n in sorted(graph):
        if n not in state:
            visit(n, [])
    assert not cycle, " -> ".join(cycle[0])


def test_no_module_over_450_lines_without_its_reason():
    """A module over MAX_LINES lines says why in its docstring (LONG_REASON ...)."""
    long = {}
    for path in modules().values():
        rel = os.path.relpath(path, ROOT).replace(os.sep, "/")
        with open(path) as f:
            text = f.read()
        n = text.count("\n")
        if n > MAX_LINES and LONG_REASON not in (ast.get_docstring(ast.parse(text)) or ""):
            long[rel] = n
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_fusionlab_command_lists_its_subcommands():
    p = subprocess.run([sys.executable, "-m", "fusionlab.cli", "--help"], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0
    for cmd in ("run", "analyse", "diff", "compare", "list"):
        assert f"fusionlab {cmd}" in p.stdout


@pytest.mark.parametrize("cmd", ["run", "analyse", "diff", "compare", "list", "progress", "audit", "restore"])
def test_every_subcommand_helps_under_its_own_name(cmd, capsys):
    """`fusionlab SUB --help`: exit status 0, usage under `fusionlab SUB` and SUB's line
    from the command's table; in-process (argparse exits with SystemExit)."""
    from fusionlab import cli
    assert cmd in cli.COMMANDS and len(cli.COMMANDS) == 8, "a new subcommand: add it to this test"
    try:
        rc = cli.main([cmd, "--help"])
    except SystemExit as e:
        rc = e.code
    out = capsys.readouterr().out
    assert rc in (0, None)
    assert out.startswith(f"usage: fusionlab {cmd} ") and "python -m" not in out
    assert "\n\n" in out and out.split("\n\n")[1].strip(), "no description under the usage"


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


def test_catalog_is_the_registrys_own_metadata():
    """What the Snakefile reads (computed in a child process, cached by the sources' hash)
    is what the registry holds."""
    from fusionlab.experiments import catalog
    assert catalog.from_registry() == catalog.load()


DRY_RUN = """
import sys
from snakemake.cli import main
try:
    main(["-n", "all", "--configfile", "config/smoke.yaml", "--config", "results=%s", "--quiet"])
except SystemExit as e:
    code = e.code
print("HEAVY", sorted(m for m in ("torch", "matplotlib") if m in sys.modules), "EXIT", code)
"""


@pytest.mark.slow
def test_dag_builds_without_torch_or_matplotlib(tmp_path):
    p = subprocess.run([sys.executable, "-c", DRY_RUN % (tmp_path / "r")], capture_output=True, text=True, cwd=ROOT)
    assert "HEAVY [] EXIT 0" in p.stdout, p.stdout[-2000:] + p.stderr[-2000:]
