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


def test_the_outputs_page_lists_every_figure_record():
    """docs/outputs.md's figure table is the one the figure records make
    (`python -m fusionlab.analysis.report.figures`): a row for every figure, each once,
    with when it is drawn and what it shows."""
    from fusionlab.analysis.report.figures import FIGURES, docs_table
    page = open(os.path.join(ROOT, "docs", "outputs.md"), encoding="utf-8").read()
    block = page.split("<!-- figures: python -m fusionlab.analysis.report.figures -->\n")[1].split("\n<!-- /figures -->")[0]
    rows = re.findall(r"^\| `(\w+)` \|", block, flags=re.M)
    assert sorted(set(FIGURES) - set(rows)) == [], "figures without a row in docs/outputs.md"
    assert sorted(rows) == sorted(FIGURES), "rows of docs/outputs.md's figure table that are no figure, or twice"
    assert block == docs_table(), "docs/outputs.md's figure table is stale: python -m fusionlab.analysis.report.figures"
