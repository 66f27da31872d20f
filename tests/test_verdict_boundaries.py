"""The reproduction rubric (analysis.report.reproduction.verdict) and its intervals
(interval.py) at their boundaries, against numbers worked out by hand: a point or an
interval's end exactly on a band's edge or just past it, counts and bytes at their
tolerance, a launch ratio of exactly 1, orderings whose intervals touch, a log-log line of
known R^2, compound verdicts of no parts, NaN and non-numbers read as not measured; each
reason word for word."""
import math

import pytest
from scipy.stats import t as student_t

from fusionlab.analysis.report.reproduction import interval as I
from fusionlab.analysis.report.reproduction import verdict as V

H, F, X, T, D = V.HOLDS, V.FAILS, V.INCONCLUSIVE, V.NOT_TESTED, V.NOT_ON_DEVICE
ONE = "(one process: no interval)"


def ci(lo, hi, label="range of 3"):
    return I.Interval(lo, hi, label)


# --- judge, within, ratio, at_most, at_least ---------------------------------------------

@pytest.mark.parametrize("lo,hi,verdict", [
    (1.0, 2.0, H),      # the band itself: both edges inside
    (1.0, 1.0, H), (2.0, 2.0, H),
    (0.5, 1.0, X),      # reaching the lower edge from below: across it, not outside
    (2.0, 3.0, X),      # from the upper edge upwards
    (0.5, 0.999, F), (2.001, 3.0, F),
    (0.5, 3.0, X),      # holding the whole band
])
def test_judge_at_the_edges(lo, hi, verdict):
    assert V.judge(lo, hi, 1.0, 2.0) == verdict


@pytest.mark.parametrize("measured", [None, "n/a", float("nan"), "nan", [1.0]])
def test_no_number_is_not_tested(measured):
    assert V.within(measured, 1.0, 2.0, what=" of x") == (T, "no measured value of x")
    assert V.ratio(measured, 2.0, 1.5) == (T, "no measured ratio")
    assert V.greater(measured, 1.0, "small", "large") == (T, "small not measured")
    assert V.greater(1.0, measured, "small", "large") == (T, "large not measured")


def test_within_reads_a_number_written_as_text_and_says_its_band():
    assert V.within("1.5", 1.23456, 3.45678) == (H, f"1.5x {ONE} lies within 1.23-3.46x")
    assert V.within(4, 1.0, 3.0, unit=" ms", what=" (p50)") == (F, f"4 ms {ONE} (p50) lies outside 1-3 ms")
    v, why = V.within(2.0, 1.0, 3.0, ci(0.5, 2.5), band_text="the band")
    assert (v, why) == (X, "2x [0.5, 2.5] (range of 3) straddles an edge of the band")


def test_ratio_band_from_the_published_value_and_tolerance():
    # [2 / 1.25, 2 x 1.25] = [1.6, 2.5]
    assert V.ratio(1.6, 2.0, 1.25) == (H, f"1.6x {ONE} lies within 1.6-2.5x (2x within 1.25x)")
    assert V.ratio(2.5, 2.0, 1.25)[0] == H
    assert V.ratio(1.59, 2.0, 1.25) == (F, f"1.59x {ONE} lies outside 1.6-2.5x (2x within 1.25x): 1.26x off")
    assert V.ratio(4.0, 2.0, 1.25)[1].endswith("(2x within 1.25x): 0.5x off")
    assert V.ratio(2.0, 2.0, 1.25, ci(1.5, 2.4), what=" (p50)") == (
        X, "2x [1.5, 2.4] (range of 3) (p50) straddles an edge of 1.6-2.5x (2x within 1.25x)")
    assert V.ratio(0.0, 2.0, 1.25) == (T, "no measured ratio")      # no ratio is 0 or less
    assert V.ratio(-2.0, 2.0, 1.25) == (T, "no measured ratio")
    assert V.ratio(1e-9, 1e-9, 1.0)[0] == H


def test_ratio_against_the_texts_range():
    assert V.ratio(3.0, None, 1.0, band=("2", "3")) == (H, f"3x {ONE} lies within 2-3x (the text's range)")
    # outside the text's range: no "off" without a published value, "off" with one
    assert V.ratio(4.0, None, 1.0, band=(2, 3)) == (F, f"4x {ONE} lies outside 2-3x (the text's range)")
    assert V.ratio(4.0, 2.0, 1.0, band=(2, 3)) == (F, f"4x {ONE} lies outside 2-3x (the text's range): 0.5x off")
    assert V.ratio(1.99, 2.0, 1.0, band=(2, 3))[0] == F
    assert V.ratio(2.5, 2.0, 1.0, ci(1.9, 2.6), band=(2, 3))[0] == X
    # an empty band is no band: the published value and tolerance decide
    assert V.ratio(2.5, 2.0, 1.25, band=())[0] == H


def test_at_most_and_at_least_at_their_bound():
    assert V.at_most(1.1, 1.1) == (H, f"1.1x {ONE} lies within at most 1.1x")
    assert V.at_most(0.0, 1.1)[0] == H and V.at_most(0.5, 1.1)[0] == H
    assert V.at_most(-0.5, 1.1)[0] == F                 # below 0: outside [0, bound]
    assert V.at_most(1.2, 1.1, ci(1.0, 1.3), " (p)") == (X, "1.2x [1, 1.3] (range of 3) (p) straddles an edge of "
                                                         "at most 1.1x")
    assert V.at_least(1.05, 1.05) == (H, f"1.05x {ONE} lies within at least 1.05x")
    assert V.at_least(1e6, 1.05)[0] == H
    assert V.at_least(1.0, 1.05) == (F, f"1x {ONE} lies outside at least 1.05x")
    assert V.at_least(1.2, 1.05, ci(1.0, 1.4), " (q)") == (X, "1.2x [1, 1.4] (range of 3) (q) straddles an edge of "
                                                           "at least 1.05x")
    assert V.at_least(1.2, 1.05, ci(1.05, 1.4))[0] == H


# --- greater ----------------------------------------------------------------------------

def test_greater_at_touching_intervals():
    # the larger one's interval starting exactly where the smaller one's ends: not above it
    assert V.greater(1.0, 2.0, "at 64", "at 1024", ci(0.5, 1.5), ci(1.5, 2.5)) == (
        X, "2x [1.5, 2.5] (range of 3) at 1024 overlaps 1x [0.5, 1.5] (range of 3) at 64")
    assert V.greater(1.0, 2.0, "at 64", "at 1024", ci(0.5, 1.49), ci(1.5, 2.5))[0] == H
    # the larger one's interval ending exactly where the smaller one's starts: at or below it
    assert V.greater(2.0, 1.0, "at 64", "at 1024", ci(1.5, 2.5), ci(0.5, 1.5)) == (
        F, "1x [0.5, 1.5] (range of 3) at 1024 lies at or below 2x [1.5, 2.5] (range of 3) at 64")
    assert V.greater(2.0, 1.0, "a", "b", ci(1.5, 2.5), ci(0.5, 1.51))[0] == X
    # points: equal values are at or below
    assert V.greater(1.0, 1.0, "a", "b") == (F, f"1x {ONE} b lies at or below 1x {ONE} a")
    assert V.greater(1.0, 1.01, "a", "b") == (H, f"1.01x {ONE} b lies above 1x {ONE} a")
    # one side's interval, the other's point
    assert V.greater(1.0, 1.2, "a", "b", None, ci(0.9, 1.5))[0] == X
    assert V.greater(1.0, 1.2, "a", "b", ci(0.5, 1.2), None)[0] == X
    assert V.greater(1.0, 1.2, "a", "b", ci(0.5, 1.19), None)[0] == H


# --- count ------------------------------------------------------------------------------

def test_count_within_its_tolerance():
    pub = {"eager": 5, "fused": 3}
    assert V.count({"eager": 5, "fused": 3}, pub) == (
        H, "5 -> 3 per iteration against the published 5 -> 3")
    assert V.count({"eager": 5, "fused": 4}, pub) == (
        F, "5 -> 4 per iteration against the published 5 -> 3 (the variant runs fewer, as published)")
    assert V.count({"eager": 5, "fused": 6}, pub) == (F, "5 -> 6 per iteration against the published 5 -> 3")
    assert V.count({"eager": 5, "fused": 5}, pub)[1] == "5 -> 5 per iteration against the published 5 -> 3"
    assert V.count({"eager": 4, "fused": 3}, pub)[0] == F           # the reference off by one
    assert V.count({"eager": 3, "fused": 5}, {"eager": 3, "fused": 5})[0] == H
    # fewer is said only where both the measured and the published variant run fewer
    assert V.count({"eager": 3, "fused": 6}, {"eager": 3, "fused": 5}) == (
        F, "3 -> 6 per iteration against the published 3 -> 5")
    assert V.count({"eager": 5, "fused": 6}, {"eager": 5, "fused": 5}) == (
        F, "5 -> 6 per iteration against the published 5 -> 5")
    assert V.count({"eager": 5, "fused": 4}, {"eager": 5, "fused": 5}) == (
        F, "5 -> 4 per iteration against the published 5 -> 5")
    # the 1e-9 slack at either end of [p / tolerance, p x tolerance]
    assert V.count({"a": 4 / 1.5 - 1e-9, "b": 4}, {"a": 4, "b": 4}, 1.5)[0] == H
    assert V.count({"a": 4 * 1.5 + 1e-9, "b": 4}, {"a": 4, "b": 4}, 1.5)[0] == H
    assert V.count({"a": 4, "b": 4 / 1.5 - 1e-8}, {"a": 4, "b": 4}, 1.5)[0] == F
    assert V.count({"a": 4, "b": 4 * 1.5 + 1e-8}, {"a": 4, "b": 4}, 1.5)[0] == F
    # tolerance 1.5 around 4: [2.667, 6]; the key order (reference first) from the published dict
    assert V.count({"a": 6, "b": 4}, {"a": 4, "b": 4}, 1.5)[0] == H
    assert V.count({"a": 2.7, "b": 4}, {"a": 4, "b": 4}, 1.5)[0] == H
    assert V.count({"a": 2.6, "b": 4}, {"a": 4, "b": 4}, 1.5)[0] == F
    assert V.count({"a": 6.01, "b": 4}, {"a": 4, "b": 4}, 1.5)[0] == F
    assert V.count({"a": 4, "b": 6.01}, {"a": 4, "b": 4}, 1.5)[0] == F
    assert V.count({"a": 4, "b": 2.6}, {"a": 4, "b": 4}, 1.5)[0] == F
    assert V.count({"eager": 5}, pub) == (T, "no kernel count")
    assert V.count({"fused": 3, "eager": float("nan")}, pub) == (T, "no kernel count")


# --- kendall_tau and ordering -----------------------------------------------------------

def test_kendall_tau_by_hand():
    assert V.kendall_tau(["a", "b", "c"], ["a", "b", "c"]) == 1.0
    assert V.kendall_tau(["c", "b", "a"], ["a", "b", "c"]) == -1.0
    # (a, b) swapped, (a, c) and (b, c) kept: (1 + 1 - 1) / 3
    assert V.kendall_tau(["b", "a", "c"], ["a", "b", "c"]) == pytest.approx(1 / 3)
    assert V.kendall_tau(["a", "z", "b"], ["a", "b"]) == 1.0       # items of one ordering only left out
    assert V.kendall_tau(["b", "z", "a"], ["a", "b", "y"]) == -1.0
    assert math.isnan(V.kendall_tau(["a"], ["a"])) and math.isnan(V.kendall_tau([], []))


def test_ordering_reasons_word_for_word():
    pub = {"a": 1.0, "b": 2.0}
    assert V.ordering({"a": (1.0, None), "b": (2.0, None)}, pub) == (
        H, "measured a < b (Kendall tau +1.00 against the published order); every pair as published")
    assert V.ordering({"a": (3.0, None), "b": (2.0, None)}, pub) == (
        F, f"measured b < a (Kendall tau -1.00 against the published order); a < b: does not hold "
           f"(a 3 ms {ONE} slower than b 2 ms {ONE})")
    # intervals touching at 1.5: not separable either way
    v, why = V.ordering({"a": (1.0, ci(0.5, 1.5)), "b": (2.0, ci(1.5, 2.5))}, pub)
    assert (v, why) == (X, "measured a < b (Kendall tau +1.00 against the published order); a < b: inconclusive "
                           "(a 1 ms [0.5, 1.5] (range of 3) not separable from b 2 ms [1.5, 2.5] (range of 3))")
    assert V.ordering({"a": (1.0, ci(0.5, 1.49)), "b": (2.0, ci(1.5, 2.5))}, pub)[0] == H
    assert V.ordering({"a": (2.0, ci(1.5, 2.5)), "b": (1.0, ci(0.5, 1.5))}, pub)[0] == X
    assert V.ordering({"a": (2.0, ci(1.51, 2.5)), "b": (1.0, ci(0.5, 1.5))}, pub)[0] == F
    # equal points: neither faster
    assert V.ordering({"a": (2.0, None), "b": (2.0, None)}, pub)[0] == X


def test_ordering_goes_on_past_an_equal_pair_and_lists_each_pair_off():
    # x = y as published; z, published slowest, measured fastest: both x < z and y < z off
    pub = {"x": 1.0, "y": 1.0001, "z": 5.0}
    assert V.ordering({"x": (1.0, None), "y": (1.0, None), "z": (0.5, None)}, pub, [["x", "y"]]) == (
        F, f"measured z < x < y (Kendall tau -0.33 against the published order); "
           f"x < z: does not hold (x 1 ms {ONE} slower than z 0.5 ms {ONE}); "
           f"y < z: does not hold (y 1 ms {ONE} slower than z 0.5 ms {ONE})")


def test_ordering_leaves_out_the_unmeasured_and_the_unpublished():
    pub = {"a": 3.0, "b": 1.0, "c": 2.0}
    ms = {"a": (3.0, None), "b": (1.0, None), "c": (float("nan"), None), "d": (0.1, None)}
    assert V.ordering(ms, pub) == (
        H, "measured b < a (Kendall tau +1.00 against the published order); every pair as published")
    assert V.ordering({"a": (3.0, None), "c": (None, None), "d": (1.0, None)}, pub) == (
        T, "fewer than two of the implementations measured")
    assert V.ordering({}, pub)[0] == T
    # three measured, the published order b < c < a; measured b < a < c: tau (1 + 1 - 1) / 3
    # (b < c and b < a as published; c < a not)
    assert V.ordering({"a": (2.0, None), "b": (1.0, None), "c": (3.0, None)}, pub) == (
        F, f"measured b < a < c (Kendall tau +0.33 against the published order); c < a: does not hold "
           f"(c 3 ms {ONE} slower than a 2 ms {ONE})")


def test_ordering_equal_pairs_by_the_ratio_of_their_times():
    pub = {"x": 1.0, "y": 1.0001}
    # no interval on either side: the ratio's point 1.04 within [1 / 1.05, 1.05]
    assert V.ordering({"x": (1.04, None), "y": (1.0, None)}, pub, [["y", "x"]]) == (
        H, f"measured y < x (Kendall tau -1.00 against the published order); every pair as published")
    assert V.ordering({"x": (1.06, None), "y": (1.0, None)}, pub, [["x", "y"]]) == (
        F, f"measured y < x (Kendall tau -1.00 against the published order); x = y: does not hold "
           f"(1.06x {ONE} (x / y) lies outside equal within 1.05x)")
    assert V.ordering({"x": (2.0, None), "y": (2.1, None)}, pub, [["x", "y"]])[0] == H     # 0.952: inside
    assert V.ordering({"x": (2.0, None), "y": (2.11, None)}, pub, [["x", "y"]])[0] == F    # 0.948: outside
    assert V.ordering({"x": (1.0, None), "y": (1.06, None)}, pub, [["x", "y"]])[0] == F
    assert V.ordering({"x": (1.0, None), "y": (1.06, None)}, pub, [["x", "y"]], equal_tolerance=1.1)[0] == H
    # the ratio's interval from the two times' intervals: [x.lo / y.hi, x.hi / y.lo]
    v, why = V.ordering({"x": (1.0, ci(0.99, 1.01)), "y": (1.0, ci(0.9, 1.1))}, pub, [["x", "y"]])
    assert v == X and why.endswith(
        "x = y: inconclusive (1x [0.9, 1.12] (from the two times' intervals) (x / y) straddles an edge of "
        "equal within 1.05x)")
    v, why = V.ordering({"x": (1.0, None), "y": (1.0, ci(0.98, 1.02))}, pub, [["x", "y"]], equal_tolerance=1.03)
    assert v == H    # [1 / 1.02, 1 / 0.98] = [0.980, 1.020] within [0.971, 1.03]
    v, why = V.ordering({"x": (1.0, ci(0.96, 1.0)), "y": (1.0, None)}, pub, [["x", "y"]], equal_tolerance=1.03)
    assert v == X and "[0.96, 1] (from the two times' intervals)" in why


# --- launch and traffic -----------------------------------------------------------------

def test_launch_bound_at_a_ratio_of_one_and_at_the_share():
    assert V.launch(3.0, 2.0, 0.5) == (
        H, "launch call 3 us / kernel 2 us = 1.5x; 50% of kernels shorter than their launch (at least 50% needed)")
    assert V.launch(3.0, 2.0, 0.49)[0] == F
    assert V.launch(2.0, 2.0, 1.0) == (
        F, "launch call 2 us / kernel 2 us = 1x; 100% of kernels shorter than their launch (at least 50% needed)")
    assert V.launch(2.02, 2.0, 1.0)[0] == H
    assert V.launch(3.0, 2.0, None) == (F, "launch call 3 us / kernel 2 us = 1.5x")
    assert V.launch(3.0, 2.0, 0.7, bound=0.75) == (
        F, "launch call 3 us / kernel 2 us = 1.5x; 70% of kernels shorter than their launch (at least 75% needed)")
    assert V.launch(3.0, 2.0, 0.0, bound=0.0)[0] == H
    no = (T, "no launch or kernel durations (needs an nsys trace of a GPU run)")
    assert V.launch(None, 2.0, 1.0) == no and V.launch(3.0, None, 1.0) == no
    assert V.launch(3.0, 0.0, 1.0) == no and V.launch(3.0, -1.0, 1.0) == no
    assert V.launch(0.0, 2.0, 1.0)[0] == F
    assert V.launch(1.0, 0.5, 0.5) == (
        H, "launch call 1 us / kernel 0.5 us = 2x; 50% of kernels shorter than their launch (at least 50% needed)")


def test_traffic_within_its_factor_either_way():
    assert V.traffic(150, 100, 1.5) == (
        H, "measured 150 B against the formula's 100 B (1.5x; within 1.5x needed)")
    assert V.traffic(100, 150, 1.5)[0] == H                          # 1.5x fewer bytes: also within
    assert V.traffic(151, 100, 1.5)[0] == F and V.traffic(66, 100, 1.5)[0] == F
    assert V.traffic(123456, 100000, 2.0, what="cold")[1] == (
        "cold 1.235e+05 B against the formula's 1e+05 B (1.23x; within 2x needed)")
    assert V.traffic(0, 100, 1.5) == (F, "measured 0 B against the formula's 100 B (0x; within 1.5x needed)")
    assert V.traffic(0, 100, math.inf)[0] == H                       # f = inf, at most inf
    assert V.traffic(0.5, 1.0, 2.0)[0] == H and V.traffic(0.5, 1.0, 1.9)[0] == F   # below 1 B: 2x fewer
    assert V.traffic(None, 100, 2.0) == (T, "no measured bytes")
    assert V.traffic(100, 0, 2.0, what="steady") == (T, "no steady bytes")
    assert V.traffic(100, None, 2.0)[0] == T


# --- linear_fit, loglog_slope, scaling -------------------------------------------------

def test_linear_fit_by_hand():
    # mean x 1, mean y 1, sxx 2, sxy 1: b 0.5, a 0.5; residuals -0.5, 1, -0.5: R^2 1 - 1.5 / 2
    assert V.linear_fit([0, 1, 2], [0, 2, 1]) == (0.5, 0.5, 0.25)
    assert V.linear_fit([1, 2, 3], [3, 5, 7]) == (1.0, 2.0, 1.0)
    a, b, r2 = V.linear_fit([0, 1, 2], [3, 3, 3])                  # no spread of y: no R^2
    assert (a, b) == (3.0, 0.0) and math.isnan(r2)
    # a line far from the origin: the sums are centred, so the slope stays exact (1 / 2 and
    # 1 / (2 / 3)) where uncentred sums would lose it to rounding at 1e8
    assert V.linear_fit([1e8, 1e8 + 1, 1e8 + 2], [0, 1, 1])[1] == pytest.approx(0.5, rel=1e-12)
    assert V.linear_fit([0, 1, 1], [1e8, 1e8 + 1, 1e8 + 2])[1] == pytest.approx(1.5, rel=1e-12)
    a, b, r2 = V.linear_fit([1, 1], [1, 2])                        # no spread of x: no slope
    assert math.isnan(a) and math.isnan(b) and math.isnan(r2)


def test_loglog_slope_needs_two_points_above_zero():
    assert V.loglog_slope([1, 2], [3, 12]) == pytest.approx(2.0)
    assert V.loglog_slope([2, 4], [8, 2]) == pytest.approx(-2.0)
    for x, y in (([1], [1]), ([0, 1], [1, 2]), ([1, 2], [0, 1]), ([-1, 2], [1, 2]), ([1, 2], [1, -2])):
        assert math.isnan(V.loglog_slope(x, y))


def test_scaling_reason_and_r_squared_by_hand():
    # log x 0, a, 2a; log y 0, 2a, 2a (a = ln 2): slope 1, R^2 1 - (2/3) / (8/3) = 0.75
    v, why = V.scaling([4, 1, 2, 8], [4, 1, 4, None], 1.0, 0.15)
    assert (v, why) == (H, f"log-log slope over 1, 2, 4 layers: 1 {ONE} lies within 1 +- 0.15 "
                           f"(R^2 of the log-log line 0.750)")
    v, why = V.scaling([1, 2, 4, "nan"], [1, 4, 4, 2.0], 1.2, 0.2, ci(0.8, 1.1), axis="steps")
    assert (v, why) == (X, "log-log slope over 1, 2, 4 steps: 1 [0.8, 1.1] (range of 3) straddles an edge of "
                           "1.2 +- 0.2 (R^2 of the log-log line 0.750)")
    assert V.scaling([1, 2, 4], [1, 4, 4], 1.0, 0.15, ci(0.85, 1.15))[0] == H
    assert V.scaling([1, 2, 4], [1, 4, 4], 2.0, 0.5)[0] == F
    assert V.scaling([1, 2, 4], [1, 4, 4], 1.5, 0.5)[0] == H         # the edge 1.0 inside
    assert V.scaling([1, 2, None], [1, 2, 3], 1.0, 0.1) == (T, "2 values of layers measured (at least 3 needed)")
    assert V.scaling([], [], 1.0, 0.1, axis="steps") == (T, "0 values of steps measured (at least 3 needed)")
    assert V.scaling([2, 2, 2], [1, 2, 3], 1.0, 0.1) == (T, "no log-log slope over layers")
    assert V.scaling([1, 2, 3], [0, 2, 3], 1.0, 0.1, axis="sizes") == (T, "no log-log slope over sizes")


# --- compound and over_range ------------------------------------------------------------

def test_compound_of_every_kind():
    assert V.compound([]) == (T, "")
    assert V.compound([("a", H, "r"), ("b", H, "s")]) == (H, "a: holds (r); b: holds (s)")
    assert V.compound([("a", X, "r"), ("b", F, "s")])[0] == F
    assert V.compound([("a", D, "r"), ("b", D, "s")]) == (
        D, "a: not measurable on this device (r); b: not measurable on this device (s)")
    assert V.compound([("a", D, ""), ("b", T, "")])[0] == T
    assert V.compound([("a", D, ""), ("b", H, "")])[0] == T
    assert V.compound([("a", D, ""), ("b", X, "")])[0] == X
    assert V.compound([("a", T, "")])[0] == T


def test_over_range_of_every_kind():
    assert V.over_range([], "batches") == (T, "no batches measured")
    assert V.over_range([("b 1", F, "r"), ("b 2", H, "s"), ("b 3", H, "t")], "batches") == (
        H, "holds at b 2, b 3 of the batches swept (2 of 3); b 1: does not hold (r); b 2: holds (s); b 3: holds (t)")
    assert V.over_range([("b 1", F, "r"), ("b 2", X, "s")], "batches") == (
        X, "b 1: does not hold (r); b 2: inconclusive (s)")
    assert V.over_range([("b 1", F, "r"), ("b 2", T, "s")], "batches") == (
        F, "holds at none of the batches swept; b 1: does not hold (r); b 2: not tested (s)")
    assert V.over_range([("b 1", T, "r"), ("b 2", D, "s")], "batches") == (
        T, "b 1: not tested (r); b 2: not measurable on this device (s)")


# --- interval.py ------------------------------------------------------------------------

def test_interval_text():
    assert I.Interval(1.23456, 45.678, "range of 2").text() == "[1.23, 45.7] (range of 2)"


def test_t_quantiles_known_in_closed_form():
    assert I.t_quantile(0.5, 1) == pytest.approx(1.0)                 # the Cauchy's quartile, tan(pi / 4)
    assert I.t_quantile(0.5, 2) == pytest.approx(math.sqrt(2 / 3))    # t_2 at 0.75: 0.5 sqrt(2 / 0.75)
    assert I.t_quantile(0.95, 1) == pytest.approx(12.7062047361747)    # tan(0.475 pi)


def test_t_interval_by_hand():
    # two values, level 0.5: the half-width t(0.75, 1) x sd / sqrt 2 = 1 x sqrt 2 / sqrt 2 = 1
    t = I.t_interval([1.0, 3.0], level=0.5, log=False)
    assert (t.lo, t.hi) == pytest.approx((1.0, 3.0)) and t.label == "50% t-interval over 2 processes"
    t = I.t_interval([-3.0, -1.0], level=0.5, log=False)               # below 0 without logs: fine
    assert (t.lo, t.hi) == pytest.approx((-3.0, -1.0))
    # on logs 0 and 2: mean 1, half-width 1, back-transformed
    t = I.t_interval([1.0, math.e ** 2], level=0.5)
    assert (t.lo, t.hi) == pytest.approx((1.0, math.e ** 2))
    # the non-numbers and NaN left out, numbers written as text read
    t = I.t_interval([1.0, None, "x", float("nan"), "3.0"], level=0.5, log=False)
    assert (t.lo, t.hi) == pytest.approx((1.0, 3.0)) and t.label == "50% t-interval over 2 processes"
    t = I.t_interval([1.0, 2.0, 3.0], log=False)
    assert t.label == "95% t-interval over 3 processes"
    assert I.t_interval([0.0, 1.0]) is None and I.t_interval([2.0, -1.0]) is None
    assert I.t_interval([0.0, 1.0], level=0.5, log=False) is not None
    assert I.t_interval([5.0]) is None and I.t_interval([5.0], log=False) is None
    assert I.t_interval(None) is None and I.t_interval([None, float("nan"), 2.0]) is None


def test_ratio_interval_by_hand():
    e = math.e
    # logs 1, 3 over logs 0, 2: difference 1, variances 2 / 2 each, se sqrt 2, Welch df
    # (1 + 1)^2 / (1 / 1 + 1 / 1) = 2; t(0.75, 2) sqrt 2 = 2 / sqrt 3
    w = I.ratio_interval([e, e ** 3], [1.0, e ** 2], level=0.5)
    h = 2 / math.sqrt(3)
    assert (w.lo, w.hi) == pytest.approx((math.exp(1 - h), math.exp(1 + h)))
    assert w.label == "50% Welch t-interval over 2 + 2 processes"
    # logs 1, 3 over logs 0, 1, 2: difference 1, va 2 / 2 = 1, vb 1 / 3, Welch df
    # (4 / 3)^2 / (1 / 1 + (1 / 9) / 2) = 32 / 19
    w = I.ratio_interval([e, e ** 3], [1.0, e, e ** 2])
    h = student_t.ppf(0.975, 32 / 19) * math.sqrt(4 / 3)
    assert (w.lo, w.hi) == pytest.approx((math.exp(1 - h), math.exp(1 + h)))
    assert w.label == "95% Welch t-interval over 2 + 3 processes"
    # the same the other way round: the reciprocal interval
    w = I.ratio_interval([1.0, e, e ** 2], [e, e ** 3])
    assert (w.lo, w.hi) == pytest.approx((math.exp(-1 - h), math.exp(-1 + h)))
    # logs 0, 1 over logs 0, 0.5, 1: difference 0, va 1 / 4, vb 1 / 12 (their sum below 1),
    # Welch df (1 / 3)^2 / ((1 / 4)^2 / 1 + (1 / 12)^2 / 2) = 32 / 19
    w = I.ratio_interval([1.0, e], [1.0, e ** 0.5, e])
    h = student_t.ppf(0.975, 32 / 19) * math.sqrt(1 / 3)
    assert (w.lo, w.hi) == pytest.approx((math.exp(-h), math.exp(h)))
    # no spread at all: the point ratio, with the values at or below 0 left out
    w = I.ratio_interval([4.0, 0.0, 4.0, -1.0, "x"], [2.0, 2.0])
    assert (w.lo, w.hi) == (2.0, 2.0) and w.label == "95% Welch t-interval over 2 + 2 processes"
    assert I.ratio_interval([4.0, 0.0], [2.0, 2.0]) is None and I.ratio_interval([4.0, 4.0], [2.0]) is None
    assert I.ratio_interval(None, [2.0, 2.0]) is None


def test_range_geomean_and_spread():
    assert I.range_of([2, "x", float("nan"), 1, None]) == I.Interval(1.0, 2.0, "range of 2")
    assert I.range_of([-1.0, -1.0]) == I.Interval(-1.0, -1.0, "range of 2")
    assert I.range_of([5.0]) is None and I.range_of([]) is None
    assert I.geomean([0, -1, 4, 1, None]) == pytest.approx(2.0)
    assert I.geomean([3.0]) == pytest.approx(3.0)
    assert I.geomean([0, -1]) is None and I.geomean(None) is None
    assert I.spread([1.0, 3.0]) == pytest.approx(math.sqrt(2) / 2)    # sd sqrt 2 over mean 2
    assert I.spread([2.0, 2.0, "x"]) == 0.0
    assert I.spread([5.0]) is None and I.spread([-1.0, 1.0]) is None and I.spread([-3.0, -1.0]) is None
