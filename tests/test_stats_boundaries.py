"""The crossover notes and spans of analysis.sweep.stats against values worked out by hand
(crossings at exact powers of 2 in log2): a start and a stop inside the sweep, two
intervals (the last one returned, both named), a speedup of exactly 1 at the smallest
value, never beating eager, the axis's name in each note, ties named after the note, and
the spans' short form."""
import math

from fusionlab.analysis.sweep import stats


def test_a_start_and_a_stop_inside_the_sweep():
    # (8, 0.5) to (32, 1.5): halfway in log2, 16; (32, 1.5) to (128, 0.5): 64
    assert stats._cross((8, 0.5), (32, 1.5)) == 16.0 and stats._cross((32, 1.5), (128, 0.5)) == 64.0
    assert stats.crossover([128, 8, 32], [0.5, 0.5, 1.5], axis="dim") == (
        16.0, 64.0, "starts to beat eager between dim 8 and 32, stops between dim 32 and 128")
    assert stats.spans([8, 32, 128], [0.5, 1.5, 0.5]) == "16-64"


def test_two_intervals_the_last_returned_both_named():
    start, stop, note = stats.crossover([8, 32, 128, 512], [1.5, 0.5, 1.5, 1.5])
    assert start == 64.0 and math.isnan(stop)
    assert note == ("beats eager from batch 8, stops between batch 8 and 32; starts to beat eager between batch 32 "
                    "and 128 and still beats it at batch 512")
    assert stats.spans([8, 32, 128, 512], [1.5, 0.5, 1.5, 1.5]) == "8-16, 64+"


def test_exactly_one_at_the_smallest_value_and_never():
    # a speedup of 1 beats eager; crossing back below 1 right after it: t = 0, at 8 itself
    assert stats.crossover([8, 16], [1.0, 0.5]) == (8.0, 8.0, "beats eager from batch 8, stops between batch 8 and 16")
    start, stop, note = stats.crossover([16.5, 8], [0.9, 0.5], axis="seq")
    assert math.isnan(start) and math.isnan(stop)
    assert note == "does not beat eager at any swept seq (8 to 16.5)"
    assert stats.spans([8, 16], [0.5, 0.9]) == "" and stats.spans([8, 16], [1.0, 1.3]) == "8+"
    assert stats.spans([], []) == ""
    start, stop, note = stats.crossover([4, 8], [1.2, 1.5], axis="dim")
    assert start == 4.0 and math.isnan(stop) and note == "beats eager at every swept dim (from 4)"


def test_ties_are_named_after_the_note():
    start, stop, note = stats.crossover([8, 16, 32], [1.2, 1.3, 1.4], axis="seq", lo=[0.9, 1.1, 1.0],
                                        hi=[1.3, 1.4, 1.5])
    assert start == 8.0 and math.isnan(stop)
    assert note == ("beats eager at every swept seq (from 8); not distinguishable from eager (95% CI includes 1) at "
                    "seq 8, 32")
    assert stats.ties([8, 2.5], [math.nan, 0.5], [1.2, 1.5]) == [2.5]
    assert stats.ties([8], [0.9], [math.nan]) == [] and stats.ties([8], [1.0 + 1e-12], [2.0]) == []
    assert stats.ties([8], [0.5], [1.0 - 1e-12]) == []
    # no tie: the note as it is
    assert stats.crossover([8, 16], [1.2, 1.3], lo=[1.1, 1.2], hi=[1.3, 1.4])[2] == (
        "beats eager at every swept batch (from 8)")


def test_cv_and_intervals_of_two_repeats():
    # [2, 4]: sample std sqrt(2), mean 3
    assert stats.cv([2.0, 4.0]) == math.sqrt(2) / 3
    assert math.isnan(stats.cv([3.0, -3.0, 0.0]))
    lo, hi = stats.median_ci([2.0, 4.0], n=400)
    assert (lo, hi) == (2.0, 4.0)   # the medians of two resampled values: 2, 3 or 4
    lo, hi = stats.ratio_ci([4.0, 4.0], [2.0, 2.0], n=50)
    assert (lo, hi) == (2.0, 2.0)
    assert stats.ratio_ci([4.0], [2.0, 2.0], n=50) == (2.0, 2.0)
    assert stats.ratio_ci([4.0, 4.0], [2.0], n=50) == (2.0, 2.0)


def test_the_interval_is_seeded_and_numbers_are_written_whole():
    import numpy as np
    x = [1.0, 1.2, 0.9, 1.5, 1.1]
    # 4 resamples: their quantiles depend on the draws (with many, on the 5 values alone)
    rng = np.random.default_rng(3)
    b = np.median(np.asarray(x)[rng.integers(0, 5, size=(4, 5))], axis=1)
    assert stats.median_ci(x, n=4, seed=3) == (float(np.quantile(b, 0.025)), float(np.quantile(b, 0.975)))
    assert len({stats.median_ci(x, n=4, seed=s) for s in range(6)}) > 1
    assert stats._num(1048576.0) == "1048576" and stats._num(2.5) == "2.5" and stats._num(1e-7) == "1e-07"
    # never beating eager: the note names the first and the last swept value
    assert stats.crossover([8, 16, 32], [0.5, 0.6, 0.7])[2] == "does not beat eager at any swept batch (8 to 32)"
