"""The roofs the per-kernel roofline uses (readers.ncu_report roof_*: Nsight Compute's
peak-sustained metrics x the unit's clock, core.ncu_passes.ROOFS) against NVIDIA's
published H100 SXM figures, on a report recorded on the H100 under the roofline pass's
settings (tests/data/ncu_h100_roofs, written by `python benchmarks/gpu/ncu_fixtures.py
roofs`); docs/ncu.md names the source and the tolerances."""
import csv
import os

import pytest

from fusionlab.analysis.readers import ncu_report
from fusionlab.core import ncu_passes

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "ncu_h100_roofs")
RAW = os.path.join(FIXTURE, "roofs_raw.csv")
needs_fixture = pytest.mark.skipif(not os.path.exists(RAW),
                                   reason="no roofs fixture: python benchmarks/gpu/ncu_fixtures.py roofs on an H100")

# NVIDIA H100 SXM5 datasheet: HBM3 3.35 TB/s, FP32 67 TFLOP/s, BF16 tensor 989 TFLOP/s dense
# (the 1,979 printed is with sparsity); (value, relative tolerance)
DATASHEET = {"roof_dram_Bps": (3.35e12, 0.10), "roof_fp32_flops": (67e12, 0.15),
             "roof_tensor_flops": (989e12, 0.15)}


def _text():
    with open(RAW) as f:
        return f.read()


@needs_fixture
def test_every_roof_metric_is_in_the_recorded_report():
    """The metric names are ncu 2025.3's own on the H100: each one the roofline pass asks
    for is a column of the report it wrote."""
    header = next(csv.reader(line for line in _text().splitlines() if not line.startswith("==")))
    missing = [m for m in ncu_passes.ROOF_METRICS if m not in header]
    assert not missing


@needs_fixture
@pytest.mark.parametrize("roof", sorted(DATASHEET))
def test_the_roofs_are_the_datasheets_within_the_tolerance(roof):
    rows = ncu_report.parse_raw_csv(_text())
    values = [r[roof] for r in rows if r[roof] == r[roof]]
    assert values, roof
    want, tol = DATASHEET[roof]
    for v in values:   # one per kernel: the same peaks, at the clock each kernel ran at
        assert v == pytest.approx(want, rel=tol), (roof, v / want)
