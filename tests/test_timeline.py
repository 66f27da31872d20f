"""One measured iteration read from a real Nsight Systems export (H200, mlp eager and
compile): its kernels are those nsys's own nvtx_kern_sum attributes to the `iteration`
ranges, one fifth of them per iteration; the timeline draws each of them."""
import gzip
import os
import shutil

import pandas as pd
import pytest

from fusionlab.analysis.readers import nsys_timeline
from fusionlab.analysis.report import legibility, style, timeline

DATA = os.path.join(os.path.dirname(__file__), "data", "nsys2025_h200")


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    out = {}
    for v in ("eager", "compile"):
        path = tmp_path_factory.mktemp(v) / "report.sqlite"
        with gzip.open(os.path.join(DATA, f"mlp_{v}", "report.sqlite.gz")) as src, open(path, "wb") as dst:
            shutil.copyfileobj(src, dst)
        out[v] = str(path)
    return out


@pytest.mark.parametrize("variant", ["eager", "compile"])
def test_one_iteration_holds_the_kernels_nsys_attributes_to_it(exports, variant):
    stats = pd.read_csv(os.path.join(DATA, f"mlp_{variant}", "nvtx_kern_sum.csv"))
    per_range = stats[stats["NVTX Range"] == "fusionlab:iteration"]
    it = nsys_timeline.iteration(exports[variant])
    assert it["n"] == 5 and per_range["Kern Inst"].sum() == 5 * len(it["kernels"])
    lo, hi = it["range"]
    assert (it["calls"]["start"] >= lo).all() and (it["calls"]["start"] < hi).all()
    assert set(it["nvtx"]["text"]) >= {"iteration", "measure"}


def test_the_timeline_draws_every_kernel_of_each_run(exports):
    runs = [(v, nsys_timeline.iteration(exports[v])) for v in ("eager", "compile")]
    fig = timeline.draw(runs)
    marks = pd.DataFrame(style.marks(fig))
    drawn = marks[marks["quantity"] == "duration_us"].groupby("variant").size().to_dict()
    assert drawn == {v: len(it["kernels"]) for v, it in runs}
    assert not legibility.texts_outside(fig)
    style.plt.close(fig)
