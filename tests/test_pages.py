"""The front page, report.html and a model's page, from a results folder of a real H100
sweep's tables (tests/data/real_models_rmsnorm_mlp) with one figure drawn beside them."""
import os
import re
import shutil

from fusionlab.analysis.report import html, pages, style

DATA = os.path.join(os.path.dirname(__file__), "data", "real_models_rmsnorm_mlp")
MD = """# fusionlab sweep: rmsnorm_mlp

- **rmsnorm_mlp**: compile beats eager.

> **Data quality**
>
> - Some runs were timed while the host ran slow: see 'Data quality' below.

## Time per iteration

| model | ms |
|---|---|
| rmsnorm_mlp | 1.5 |

## Data quality

- fine
"""


def _results(tmp_path):
    res = tmp_path / "r"
    os.makedirs(res / "tables")
    for f in ("runs.csv", "headline.csv", "kernels.csv"):
        shutil.copy(os.path.join(DATA, f), res / "tables" / f)
    os.makedirs(res / "figures" / "headline")
    fig, _ = style.figure()
    fig.savefig(res / "figures" / "headline" / "rmsnorm_mlp.png", dpi=20)
    style.plt.close(fig)
    (res / "figures" / "headline" / "rmsnorm_mlp.rst").write_text("Time per iteration of rmsnorm_mlp.\n")
    return res


def test_front_page_shows_setup_contents_links_and_figures(tmp_path):
    res = _results(tmp_path)
    pages.write(str(res), MD, str(res / "summary.html"), str(res / "report.html"),
                {"rmsnorm_mlp": str(res / "pages" / "rmsnorm_mlp.html")})
    page = (res / "summary.html").read_text()
    # the setup block names every size axis of the model and the device
    assert "NVIDIA H100 80GB HBM3" in page and re.search(r"rmsnorm_mlp \(batch 16/64; hidden \d+, seq \d+\)", page)
    # every in-page link has its anchor; the banner's 'see ... below' is a link
    anchors = set(re.findall(r"id='([^']+)'", page))
    assert {h[1:] for h in re.findall(r"href='(#[^']+)'", page)} <= anchors
    assert "see <a href='#data-quality'>Data quality</a> below" in page
    assert "href='pages/rmsnorm_mlp.html'" in page and "href='tables/headline.csv'" in page
    assert "<img src='figures/headline/rmsnorm_mlp.png'" in page and "Time per iteration of rmsnorm_mlp." in page
    assert page.index("<h2 id='figures'>") < page.index("<h2 id='time-per-iteration'>")
    # report.html: the same page with the image inside it
    report = (res / "report.html").read_text()
    assert "src='data:image/png;base64," in report and "src='figures/" not in report


def test_a_model_page_has_its_figures_and_top_kernels_by_their_demangled_names(tmp_path):
    res = _results(tmp_path)
    pages.write(str(res), MD, str(res / "summary.html"), None, {"rmsnorm_mlp": str(res / "pages" / "rmsnorm_mlp.html")})
    page = (res / "pages" / "rmsnorm_mlp.html").read_text()
    assert "src='../figures/headline/rmsnorm_mlp.png'" in page and "href='../summary.html'" in page
    top = pages.top_kernels(pages._read(str(res), "kernels.csv"), "rmsnorm_mlp")
    assert len(top) and top["class"].notna().all()
    name = top["kernel (demangled)"].iloc[0].strip("`")
    assert html.inline(name) in page and "Top kernels" in page


def test_every_anchor_names_one_place():
    from fusionlab.analysis.report.html import unique_ids
    assert unique_ids("<h3 id='bert'>a</h3><h3 id='gpt2'>b</h3><h3 id='bert'>c</h3><h3 id='bert'>d</h3>") == (
        "<h3 id='bert'>a</h3><h3 id='gpt2'>b</h3><h3 id='bert-2'>c</h3><h3 id='bert-3'>d</h3>")
