"""The user documentation: README.md and docs/ link only to files that exist, the README
stays short, and neither names internal issue numbers or paths outside the repository."""
import glob
import os
import re

import pytest

from conftest import ROOT

PAGES = [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "CONTRIBUTING.md"),
         os.path.join(ROOT, "benchmarks", "results", "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def relative_links(path):
    """(target, anchor) of every relative Markdown link in a page."""
    for target in LINK.findall(open(path, encoding="utf-8").read()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        file, _, anchor = target.partition("#")
        yield file, anchor


def anchors(path):
    """GitHub's anchors of a Markdown file's headings."""
    out = set()
    for line in open(path, encoding="utf-8"):
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: os.path.relpath(p, ROOT))
def test_relative_links_resolve(page):
    bad = []
    for file, anchor in relative_links(page):
        target = os.path.normpath(os.path.join(os.path.dirname(page), file))
        if not os.path.exists(target):
            bad.append(file)
        elif anchor and target.endswith(".md") and anchor not in anchors(target):
            bad.append(f"{file}#{anchor}")
    assert not bad, bad


def test_readme_is_short():
    assert sum(1 for _ in open(PAGES[0], encoding="utf-8")) < 300


@pytest.mark.parametrize("page", PAGES, ids=lambda p: os.path.relpath(p, ROOT))
def test_no_issue_numbers_or_outside_paths(page):
    text = open(page, encoding="utf-8").read()
    assert not re.search(r"\bissues? [0-9]", text, re.I)
    assert "../shared" not in text and "/work/" not in text


def test_readme_lists_every_figure_record():
    """The README's figure table is the figure records' (report.figures.REGISTRY): each
    figure once, with what its record says it shows; docs/outputs.md names each."""
    from fusionlab.analysis.report.figures import REGISTRY
    readme = open(os.path.join(ROOT, "README.md")).read()
    rows = re.findall(r"^\| `([a-z_]+)` \| (.+) \|$", readme[readme.index("| figure | shows |"):], flags=re.M)
    listed = {name: shows for name, shows in rows if name != "fusion_map.html"}
    assert listed == {f.name: f.shows for f in REGISTRY}
    outputs = open(os.path.join(ROOT, "docs", "outputs.md")).read()
    assert all(f"`{f.name}`" in outputs for f in REGISTRY)
