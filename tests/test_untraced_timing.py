"""fusionlab.bench.untraced_timing (benchmarks/untraced_timing.py): the two estimators of a process's paired speedup,
worked out by hand, and the windows table read from real timing.json records."""
import json
import pathlib

import pandas as pd
import pytest

from fusionlab.bench import untraced_timing as ut

DATA = pathlib.Path(__file__).resolve().parent / "data"


def _timing(tmp_path, repeat, variant_ms, eager_ms, probe_ms):
    d = tmp_path / "grid" / "runs" / "nsys" / "m" / "compile" / "inference_float32" / "bs8" / f"r{repeat}"
    d.mkdir(parents=True)
    (d / "timing.json").write_text(json.dumps({
        "model": "m", "variant": "compile", "batch": 8, "mode": "inference", "repeat": repeat,
        "timing": {"windows_ms": variant_ms, "eager_windows_ms": eager_ms, "host_probe_ms": probe_ms}}))


def test_paired_estimators_by_hand(tmp_path):
    # process 0: the host halves its speed after the first pair. Ratio of medians: eager
    # median 4 / variant median 2 = 2; pairs 2/1, 4/2, 4/2: median 2.
    # process 1: eager 3, 3, 6 over variant 1, 2, 2: ratio of medians 3 / 2 = 1.5, pair
    # ratios 3, 1.5, 3: median 3.
    _timing(tmp_path, 0, [1.0, 2.0, 2.0], [2.0, 4.0, 4.0], [0.1, 0.2, 0.2, 0.2])
    _timing(tmp_path, 1, [1.0, 2.0, 2.0], [3.0, 3.0, 6.0], [0.1, 0.1, 0.1, 0.1])
    w = ut.windows_table(str(tmp_path))
    assert len(w) == 2 * (3 + 3 + 4) and set(w["timed"]) == {"variant", "eager", "host_probe"}
    e = ut.paired_estimators(w).iloc[0]
    assert e["processes"] == 2
    assert e["ratio_of_medians"] == pytest.approx(1.75)        # median of 2 and 1.5
    assert e["median_of_pair_ratios"] == pytest.approx(2.5)    # median of 2 and 3
    assert e["ratio_of_medians_cv"] == pytest.approx(pd.Series([2.0, 1.5]).std() / 1.75)


def test_the_kept_windows_give_the_readme_table():
    """tests/data/sweeps/h200x2-untraced/windows.csv (2 x H200, grids f and g): the table in
    benchmarks/results/h200x2-untraced/README.md."""
    w = pd.read_csv(DATA / "sweeps" / "h200x2-untraced" / "windows.csv")
    e = ut.paired_estimators(w).set_index(["model", "batch"])
    pw = e.loc[("pointwise_heavy", 256)]
    assert (round(pw["ratio_of_medians"], 3), round(pw["ratio_of_medians_cv"], 3)) == (3.456, 0.115)
    assert (round(pw["median_of_pair_ratios"], 3), round(pw["median_of_pair_ratios_cv"], 3)) == (3.491, 0.097)
    lower = e["median_of_pair_ratios_cv"] < e["ratio_of_medians_cv"]
    assert lower.sum() == 4 and not lower.loc[("pointwise_heavy", 2048)]    # 0.1082 against 0.1077
