"""The kernel-duration statistics are records (analysis.run.kernel_stats): each is computed
by the streamed pass, checked against its own oracle on the durations a plain SQL query
selects from a real H100 export, listed in the tables' metrics and in docs/metrics.md."""
import os

import numpy as np
import pytest

from metrics_oracle import rows_in_measure_range
from conftest import ROOT
from fusionlab.analysis.readers import nsys_sqlite
from fusionlab.analysis.run import kernel_stats, metrics
from fusionlab.analysis.sweep import tables

FIXTURE = "nsys2025_h100_train/deep_gelu_mlp_eager"
SQL = """SELECT k.end - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k
JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
WHERE r.start >= :start AND r.end <= :end AND (r.globalTid >> 24) & 16777215 = :pid"""


def sql_durations(path: str) -> np.ndarray:
    """The oracle's input: the ns durations of the kernels whose launch call lies inside the
    measure range, by any thread of its process."""
    rows = rows_in_measure_range(path, SQL)
    return np.array([r[0] for r in rows], dtype=np.int64)


@pytest.mark.parametrize("stat", kernel_stats.STATS, ids=lambda s: s.name)
def test_each_statistic_against_its_oracle(report, stat):
    path = report(FIXTURE)
    durations = sql_durations(path)
    assert len(durations) == 170    # counted by hand (tests/data/README.md)
    m = metrics.range_metrics(nsys_sqlite.load(path), "measure")
    assert m[stat.name] == pytest.approx(stat.oracle(durations), rel=1e-12)


@pytest.mark.parametrize("stat", kernel_stats.STATS, ids=lambda s: s.name)
def test_each_statistic_is_a_table_metric_and_documented(stat):
    assert stat.name in tables.METRICS
    with open(os.path.join(ROOT, "docs", "metrics.md")) as f:
        doc = f.read()
    block = doc.split("<!-- kernel-stats")[1].split("<!-- /kernel-stats -->")[0]
    assert block.split("\n", 1)[1].strip() == kernel_stats.docs_table(), \
        "docs/metrics.md's table is stale: python -m fusionlab.analysis.run.kernel_stats"
