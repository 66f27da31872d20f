"""The reproduction rubric (analysis.report.reproduction.verdict) as a table: the point
inside or outside the band, the interval inside, outside or straddling either edge, for
ratio, bound, ordering and scaling verdicts alike; the intervals (interval.py) by hand."""
import math

import pytest

from fusionlab.analysis.report.reproduction import interval as I
from fusionlab.analysis.report.reproduction import verdict as V

H, F, X, T = V.HOLDS, V.FAILS, V.INCONCLUSIVE, V.NOT_TESTED
EPS = 1e-9


def ci(lo, hi):
    return I.Interval(lo, hi, "95% t-interval over 5 processes")


# band of ratio(., 2.0, 1.5): [1.333.., 3.0]
A, B = 2.0 / 1.5, 3.0
RATIO = [
    (2.0, None, H),                       # point inside, no interval
    (A, None, H), (B, None, H),           # the edges are inside
    (A - EPS, None, F), (B + EPS, None, F),
    (2.0, ci(1.5, 2.5), H),               # interval inside
    (2.0, ci(A, B), H),                   # interval exactly the band
    (2.0, ci(1.2, 2.5), X),               # point inside, interval straddling the lower edge
    (2.0, ci(1.5, 3.2), X),               # point inside, interval straddling the upper edge
    (1.2, ci(1.0, 1.5), X),               # point outside, interval straddling the lower edge
    (3.5, ci(2.9, 4.0), X),               # point outside, interval straddling the upper edge
    (1.2, ci(1.0, A - EPS), F),           # interval wholly below
    (3.5, ci(B + EPS, 4.0), F),           # interval wholly above
    (1.0, ci(0.5, 5.0), X),               # interval holding the whole band
]


@pytest.mark.parametrize("m,interval,verdict", RATIO)
def test_ratio_rubric(m, interval, verdict):
    assert V.ratio(m, 2.0, 1.5, interval)[0] == verdict


@pytest.mark.parametrize("m,interval,verdict", [
    (1.0, ci(0.9, 1.1), H), (1.1, None, H), (1.1 + EPS, None, F), (1.0, ci(1.05, 1.2), X),
    (1.3, ci(1.1 + EPS, 1.5), F)])
def test_at_most_rubric(m, interval, verdict):
    assert V.at_most(m, 1.1, interval)[0] == verdict


def test_an_open_band_and_the_text_range():
    assert V.ratio(1.2, None, 1.0, ci(1.06, 1.3), band=(1.05, math.inf))[0] == H
    assert V.ratio(1.0, None, 1.0, ci(0.98, 1.02), band=(1.05, math.inf))[0] == F
    assert V.ratio(1.05, None, 1.0, ci(1.0, 1.1), band=(1.05, math.inf))[0] == X
    v, why = V.ratio(2.5, 2.45, 1.0, ci(2.1, 2.9), band=(2, 3))
    assert v == H and why == "2.5x [2.1, 2.9] (95% t-interval over 5 processes) lies within 2-3x (the text's range)"


def test_reasons_say_what_the_interval_is():
    assert V.ratio(2.5, 2.0, 1.5)[1] == "2.5x (one process: no interval) lies within 1.33-3x (2x within 1.5x)"
    v, why = V.ratio(4.0, 2.0, 1.5, I.Interval(3.5, 4.5, "range of 3"))
    assert v == F and why == "4x [3.5, 4.5] (range of 3) lies outside 1.33-3x (2x within 1.5x): 0.5x off"
    assert V.ratio(None, 2.0, 1.5) == (T, "no measured ratio")


def test_more_at_the_larger_configuration():
    assert V.greater(1.0, 1.5, "a", "b", ci(0.9, 1.1), ci(1.2, 1.8))[0] == H
    assert V.greater(1.0, 1.5, "a", "b", ci(0.9, 1.3), ci(1.2, 1.8))[0] == X
    assert V.greater(1.0, 0.8, "a", "b", ci(0.9, 1.1), ci(0.7, 0.9))[0] == F
    assert V.greater(None, 0.8, "a", "b") == (T, "a not measured")


def test_ordering_pairs_and_equal_pairs():
    pub = {"aten": 1.1, "cuda": 1.84, "triton": 1.848, "manual": 8.1}
    eq = [["cuda", "triton"]]
    ms = {"aten": (1.0, ci(0.98, 1.02)), "cuda": (1.8, ci(1.78, 1.82)), "triton": (1.81, ci(1.79, 1.83)),
          "manual": (8.0, ci(7.9, 8.1))}
    assert V.ordering(ms, pub, eq)[0] == H
    # the text's "equal" pair 2.3x apart (the seed CUDA kernel in double): does not hold
    v, why = V.ordering({**ms, "cuda": (1.68, ci(1.67, 1.69)), "triton": (0.72, ci(0.71, 0.73))}, pub, eq)
    assert v == F and "cuda = triton: does not hold" in why
    # the ordered pair overlapping: inconclusive, never a swap from point estimates
    v, why = V.ordering({**ms, "aten": (1.79, ci(1.7, 1.85))}, pub, eq)
    assert v == X and "aten < cuda: inconclusive" in why
    assert V.ordering({**ms, "aten": (2.0, ci(1.9, 2.1))}, pub, eq)[0] == F
    # without the equal pair the same times are an inconclusive order
    assert V.ordering(ms, pub)[0] == X
    assert V.ordering({"aten": (1.0, None)}, pub)[0] == T


def test_scaling_rubric_from_every_point():
    x = [2, 3, 4, 5]
    assert V.loglog_slope(x, [0.5 * v for v in x]) == pytest.approx(1.0)
    assert V.loglog_slope([1, 2, 4], [1, 8, 64]) == pytest.approx(3.0)
    lin = [1.0 * v for v in x]
    assert V.scaling(x, lin, 1.0, 0.15, ci(0.95, 1.05))[0] == H
    assert V.scaling(x, lin, 1.0, 0.15, ci(0.8, 1.05))[0] == X
    assert V.scaling(x, lin, 1.0, 0.15, ci(1.2, 1.3))[0] == F
    assert V.scaling(x, [v ** 1.3 for v in x], 1.0, 0.15)[0] == F       # one process: the point decides
    assert V.scaling(x[:2], lin[:2], 1.0, 0.15)[0] == T
    # flat per-step times with a slow last point read 1.0-ish over all points, not 1.22
    steps, t = [2, 4, 6, 8, 10], [2 * 1.18, 4 * 1.16, 6 * 1.07, 8 * 1.15, 10 * 1.23]
    assert V.loglog_slope(steps, t) == pytest.approx(1.0, abs=0.03)


def test_compound_and_over_a_range():
    assert V.compound([("a", H, ""), ("b", X, "")])[0] == X
    assert V.compound([("a", F, ""), ("b", X, "")])[0] == F
    assert V.compound([("a", H, ""), ("b", T, "")])[0] == T
    v, why = V.over_range([("batch 64", H, "."), ("batch 1024", F, ".")], "batches")
    assert v == H and why.startswith("holds at batch 64 of the batches swept (1 of 2)")
    assert V.over_range([("a", F, "."), ("b", X, ".")], "sizes")[0] == X
    assert V.over_range([("a", F, "."), ("b", F, ".")], "sizes")[0] == F


def test_intervals_by_hand():
    t = I.t_interval([1.0, 2.0, 3.0], log=False)    # mean 2, sd 1, t(0.975, 2) = 4.3027
    assert (t.lo, t.hi) == pytest.approx((2 - 4.302653 / 3 ** 0.5, 2 + 4.302653 / 3 ** 0.5), rel=1e-6)
    assert t.label == "95% t-interval over 3 processes"
    g = I.t_interval([2.0, 8.0])                     # on logs: geometric mean 4
    assert math.sqrt(g.lo * g.hi) == pytest.approx(4.0)
    assert I.t_interval([1.0]) is None and I.t_interval([1.0, -1.0]) is None
    assert I.range_of([3, 1, 2]) == I.Interval(1, 3, "range of 3")
    w = I.ratio_interval([4.0, 4.0, 4.0], [2.0, 2.0, 2.0])
    assert (w.lo, w.hi) == pytest.approx((2.0, 2.0))
    assert I.spread([1.0, 1.0]) == 0.0 and I.geomean([1, 4]) == pytest.approx(2.0)
