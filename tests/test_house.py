"""Guides checked against the tree: the package's docstring and the README's Layout name
every layer (each sub-package of fusionlab/ and of fusionlab/analysis/), core's and plan's
docstrings every module of theirs; the README's two commands install what each needs (the
test extra with the test command alone), and CI runs the README's test command."""
import ast
import os
import re

import pytest

from conftest import ROOT

PKG = os.path.join(ROOT, "fusionlab")


def packages(folder: str) -> list[str]:
    return sorted(d for d in os.listdir(folder) if os.path.isfile(os.path.join(folder, d, "__init__.py")))


def modules(folder: str) -> list[str]:
    return sorted(f[:-3] for f in os.listdir(folder) if f.endswith(".py") and not f.startswith("__")) + packages(folder)


def docstring(folder: str) -> str:
    with open(os.path.join(folder, "__init__.py")) as f:
        return ast.get_docstring(ast.parse(f.read())) or ""


def readme_section(title: str) -> str:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        return f.read().split(f"\n## {title}\n")[1].split("\n## ")[0]


def test_the_package_docstring_and_the_readme_layout_name_every_layer():
    layout = readme_section("Layout")
    top = docstring(PKG)
    for name in packages(PKG):
        assert f"fusionlab.{name} " in top, f"fusionlab/__init__.py's docstring does not name fusionlab.{name}"
        assert f"`{name}/`" in layout, f"the README's Layout does not name {name}/"
    for name in packages(os.path.join(PKG, "analysis")):
        assert f"`{name}/`" in layout, f"the README's Layout does not name analysis/{name}/"


@pytest.mark.parametrize("package", ["core", "plan"])
def test_a_packages_docstring_names_every_module(package):
    doc = docstring(os.path.join(PKG, package))
    missing = [m for m in modules(os.path.join(PKG, package)) if not re.search(rf"\b{m}\b", doc)]
    assert missing == [], f"fusionlab/{package}/__init__.py's docstring does not name {missing}"


def test_the_main_command_installs_no_test_tools_and_ci_runs_the_readmes_test_command():
    section = readme_section("The two commands")
    main = next(line.strip() for line in section.splitlines() if "snakemake --cores 1 all" in line)
    test = next(line.strip() for line in section.splitlines() if "python -m pytest -q tests" in line)
    main_file = re.search(r"-r (\S+)", main).group(1)
    test_file = re.search(r"-r (\S+)", test).group(1)

    def requirements(name):
        with open(os.path.join(ROOT, name)) as f:
            return [line.strip() for line in f if line.strip() and not line.startswith("#")]
    assert requirements(main_file) == ["-e ."]
    assert requirements(test_file) == ["-e .[test]"]
    with open(os.path.join(ROOT, ".ci", "run")) as f:
        assert test in f.read().splitlines()


def test_no_layer_imports_the_top_level_modules():
    """fusionlab/cli.py and fusionlab/results.py sit over every layer: no module of a layer
    package imports them."""
    from test_package import imported_modules
    bad = []
    for dirpath, _, files in os.walk(PKG):
        if dirpath == PKG:
            continue
        for f in (f for f in files if f.endswith(".py")):
            path = os.path.join(dirpath, f)
            bad += [(os.path.relpath(path, ROOT), m) for m in imported_modules(path)
                    if m in ("fusionlab.cli", "fusionlab.results")]
    assert bad == []
