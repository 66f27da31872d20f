"""The repeats' statistics (analysis.sweep.stats) against oracles written here from their
definitions: the coefficient of variation, the percentile bootstrap of a median and of a
ratio of medians (numpy's generator, seeded), exact on small inputs; their edge cases."""
import math

import numpy as np
import pytest

from fusionlab.analysis.sweep import stats

X = [1.0, 1.2, 0.9, 1.5, 1.1]
Y = [2.0, 2.2, 2.1, 1.9]


def test_cv_is_the_sample_std_over_the_mean():
    assert stats.cv(X) == pytest.approx(np.std(X, ddof=1) / np.mean(X), rel=1e-12)
    assert stats.cv([2.0, None, 4.0]) == pytest.approx(math.sqrt(2) / 3, rel=1e-12)    # missing repeats left out
    assert math.isnan(stats.cv([1.0])) and math.isnan(stats.cv([1.0, -1.0])) and math.isnan(stats.cv([]))


def test_median_ci_is_the_percentile_bootstrap():
    n = 300
    # one (n, len) draw per call: the same numbers as drawing resample by resample
    rng = np.random.default_rng(0)
    b = np.median(np.asarray(X)[rng.integers(0, len(X), size=(n, len(X)))], axis=1)
    assert stats.median_ci(X, n=n) == (float(np.quantile(b, 0.025)), float(np.quantile(b, 0.975)))
    rng = np.random.default_rng(5)
    b = np.median(np.asarray(X)[rng.integers(0, len(X), size=(n, len(X)))], axis=1)
    assert stats.median_ci(X, n=n, seed=5, level=0.8) == (float(np.quantile(b, 0.1)), float(np.quantile(b, 0.9)))
    assert stats.median_ci(X) == stats.median_ci(X, n=2000, seed=0, level=0.95)
    assert all(math.isnan(v) for v in stats.median_ci([1.0]))
    assert stats.median_ci([1.0, np.nan, 2.0], n=50) == stats.median_ci([1.0, 2.0], n=50)


def test_ratio_ci_resamples_both_sides_independently():
    n = 300
    rng = np.random.default_rng(0)
    num = np.median(np.asarray(Y)[rng.integers(0, len(Y), size=(n, len(Y)))], axis=1)
    den = np.median(np.asarray(X)[rng.integers(0, len(X), size=(n, len(X)))], axis=1)
    r = num / den
    assert stats.ratio_ci(Y, X, n=n) == (float(np.quantile(r, 0.025)), float(np.quantile(r, 0.975)))
    assert stats.ratio_ci(Y, X) == stats.ratio_ci(Y, X, n=2000, seed=0, level=0.95)
    lo, hi = stats.ratio_ci(Y, X, n=n, level=0.5)
    assert (lo, hi) == (float(np.quantile(r, 0.25)), float(np.quantile(r, 0.75)))
    # one repeat on one side only still has an interval (the other side's spread); on both, none
    assert not math.isnan(stats.ratio_ci([2.0], X, n=50)[0]) and not math.isnan(stats.ratio_ci(Y, [1.0], n=50)[0])
    assert all(math.isnan(v) for v in stats.ratio_ci([2.0], [1.0]))
    assert all(math.isnan(v) for v in stats.ratio_ci([], X)) and all(math.isnan(v) for v in stats.ratio_ci(Y, []))


def test_the_crossing_is_linear_in_log2():
    assert stats._cross((128, 0.5), (512, 1.5)) == pytest.approx(256.0)
    assert stats._cross((100, 0.9), (400, 1.3)) == pytest.approx(2 ** (math.log2(100) + 0.25 * 2))
    assert stats._num(256.0) == "256" and stats._num(2.5) == "2.5"


def test_a_speedup_of_exactly_one_beats_eager_and_missing_values_are_skipped():
    start, stop, note = stats.crossover([8, 16, 32], [0.9, 1.0, None])
    assert start == 16.0 and math.isnan(stop)
    assert note == "starts to beat eager between batch 8 and 16 and still beats it at batch 16"
    assert stats.crossover([8, 16], [None, float("nan")])[2] == "no successful runs"
    assert stats.crossover([16, 8], [1.2, 0.5])[2] == "starts to beat eager between batch 8 and 16 and still beats " \
                                                      "it at batch 16"            # sorted by the swept value
    assert stats.crossover([8, 16], [1.0, 1.0])[2] == "beats eager at every swept batch (from 8)"
    assert stats.spans([8, 16, 32, 64], [1.2, 0.8, 1.1, 0.7]) == \
        f"8-{stats._cross((8, 1.2), (16, 0.8)):.0f}, {stats._cross((16, 0.8), (32, 1.1)):.0f}-" \
        f"{stats._cross((32, 1.1), (64, 0.7)):.0f}"
    # a CI that ends at 1 is a tie; one that stops short of it is not
    assert stats.ties([8, 16, 32], [0.9, 1.0, 1.01], [1.0, 1.2, 1.2]) == [8.0, 16.0]
    assert stats.crossover([8, 16], [1.2, 1.3], lo=[1.1, 1.2], hi=[1.3, 1.4])[2] == \
        "beats eager at every swept batch (from 8)"
    # half of the intervals given: no ties named
    assert stats.crossover([8, 16], [0.9, 1.2], lo=[0.8, 0.9])[2] == stats.crossover([8, 16], [0.9, 1.2])[2]
    assert stats.crossover([8, 16], [0.9, 1.2], hi=[1.1, 1.3])[2] == stats.crossover([8, 16], [0.9, 1.2])[2]
