"""fusionlab.results.open: one object over a results folder, on a recorded H100 sweep
(benchmarks/results/h100-real-models-part7, the real networks) read on the CPU."""
import os

import pytest

from conftest import ROOT
from fusionlab import results

PART7 = os.path.join(ROOT, "benchmarks", "results", "h100-real-models-part7")
MODELS = ["bert", "gpt2", "llama_block", "resnet50", "rmsnorm_mlp", "vit"]


@pytest.fixture(scope="module")
def part7():
    return results.open(PART7)


def test_its_tables(part7):
    assert {"runs", "headline", "speedups", "suite", "fusion_ledger"} <= set(part7.tables)
    assert len(part7.runs) == 127 and len(part7.headline) == 120 and len(part7.suite) == 7
    assert part7.runs is part7.table("runs")   # read once
    assert sorted(set(part7.ledger["model"])) == MODELS
    with pytest.raises(results.ResultsError, match=r"no table kernels \(tables/kernels.csv or .csv.gz\); tables "
                                                   r"there: costs, crossover, fusion_ledger"):
        part7.table("kernels")


def test_its_figures_marks_are_the_headlines_numbers(part7):
    assert list(part7.figures) == ["headline"] and list(part7.figures["headline"]) == MODELS
    bert = part7.figures["headline"]["bert"]
    assert bert.png.endswith("figures/headline/bert.png") and bert.caption.endswith("bert.rst")
    marks = part7.figure_data("headline", "bert")
    bars = marks[(marks["mark"] == "bar") & (marks["quantity"] == "wall_ms")]
    h = part7.headline[part7.headline["model"] == "bert"]
    assert len(bars) and set(bars["value"].round(9)) <= set(h["wall_ms"].round(9))
    with pytest.raises(results.ResultsError, match="no data of figure headline for all; figures there: headline/bert"):
        part7.figure_data("headline")


def test_its_peaks_summary_and_audit(part7, tmp_path):
    """The audit is `fusionlab audit`'s (tests/test_audit.py checks it on recorded sweeps):
    here, on a folder with no headline table, its one violation."""
    assert part7.peaks["copy_bandwidth_Bps"] > 1e12
    assert part7.summary.startswith("# fusionlab sweep: bert, gpt2, llama_block")
    empty = results.open(str(tmp_path))
    assert empty.tables == [] and empty.figures == {} and empty.peaks == {} and empty.summary == ""
    # the tables the audit needs, each missing (audit_inputs), then nothing to audit against
    assert [v.split(": ", 1)[1] for v in empty.audit().violations] == [
        "missing: the audit needs it (build the tables again: snakemake tables)"] * 3 + [
        "no readable tables/headline.csv: nothing to audit against"]


def test_not_a_folder(tmp_path):
    with pytest.raises(results.ResultsError, match="^no results folder .*missing$"):
        results.open(str(tmp_path / "missing"))
