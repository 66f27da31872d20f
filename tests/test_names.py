"""Every module, function and file the docs, docstrings and comments name exists: a dotted
name of the package (`analysis.run.stream`, `fusionlab.plan.sweep.validate`; a name
followed by a call is code, not a reference) resolves to a module and, past it, to a name
defined or imported there; a repository path (`fusionlab/...`, `workflow/...`, `docs/...`,
`benchmarks/...`, `tests/...`, `config/...`) exists. Recipe placeholders start with my_."""
import os
import re

from conftest import ROOT

TOP = ("core", "experiments", "jobs", "plan", "runner", "analysis", "bench")
DOTTED = re.compile(r"(?<![\w./-])((?:fusionlab\.)?(?:%s)(?:\.[A-Za-z_][A-Za-z0-9_]*)+)(?![\w(])" % "|".join(TOP))
PATH = re.compile(r"(?<![\w./-])((?:fusionlab|workflow|benchmarks|tests|config|docs)/[\w./-]*\w)")
SUFFIXES = ("py", "md", "json", "csv", "yaml", "txt", "sqlite", "png", "svg", "log", "tsv", "gz", "html", "rst", "smk")
GENERATED = {"benchmarks/results/gpu-tests/last-pass.json"}   # written by benchmarks/gpu/gpu_tests.sh on a pass
SKIP_DIRS = (os.sep + "results", os.sep + "data", "__pycache__")


def module_file(parts: list) -> str | None:
    base = os.path.join(ROOT, *parts)
    for p in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(p):
            return p
    return None


def resolves(name: str) -> bool:
    parts = name.split(".")
    if parts[0] != "fusionlab":
        parts = ["fusionlab"] + parts
    for i in range(len(parts), 1, -1):
        f = module_file(parts[:i])
        if f:
            rest = parts[i:]
            if not rest:
                return True
            word = re.escape(rest[0])
            if f.endswith("__init__.py"):   # past a package: a name it defines or imports, not a word of its docstring
                word = rf"(?:def |class |import [^\n]*)\b{word}\b|\b{word}\s*="
            return re.search(rf"\b{word}\b" if not f.endswith("__init__.py") else word, open(f).read()) is not None
    return False


def texts():
    for top in ("fusionlab", "workflow", "benchmarks", "docs", "tests"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            if any(s in dirpath for s in SKIP_DIRS):
                continue
            for f in files:
                if f.endswith((".py", ".md", ".smk", ".rst", ".yaml", ".sh")):
                    yield os.path.join(dirpath, f)
    for f in ("README.md", "CONTRIBUTING.md", "Snakefile", "config.yaml"):
        yield os.path.join(ROOT, f)


def unresolved() -> list:
    bad = []
    for path in texts():
        with open(path, errors="replace") as f:
            for n, line in enumerate(f, 1):
                for m in DOTTED.finditer(line):
                    name = m.group(1)
                    if name.rsplit(".", 1)[-1] not in SUFFIXES and not resolves(name):
                        bad.append(f"{os.path.relpath(path, ROOT)}:{n}: {name}")
                for m in PATH.finditer(line):
                    p = m.group(1)
                    if line[m.end():m.end() + 1] in ("*", "{"):   # a pattern of paths
                        continue
                    if not (set(p) & set("*{}<>$") or "/my_" in p or p in GENERATED or os.path.exists(os.path.join(ROOT, p))):
                        bad.append(f"{os.path.relpath(path, ROOT)}:{n}: {p}")
    return bad


def test_every_named_module_function_and_file_exists():
    assert unresolved() == []
