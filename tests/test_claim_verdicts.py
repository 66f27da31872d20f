"""The reproduction rubric (analysis.report.reproduction.verdict) at its edges: each
verdict at and just past every bound it names, the interval where it decides, and the
numbers its reasons print. The verdicts are compared as the words a reader sees."""
import math

import pytest

from fusionlab.analysis.report.reproduction import verdict as V

EPS = 1e-6


def test_the_four_verdicts_are_these_words():
    assert V.VERDICTS == ("holds", "does not hold", "not tested", "not measurable on this device")


@pytest.mark.parametrize("m", [None, "x", float("nan"), 0.0, -1.0])
def test_a_ratio_without_a_positive_value_is_not_tested(m):
    assert V.ratio(m, 2.0, 1.5) == ("not tested", "no measured ratio")


def test_a_ratio_holds_inside_the_band_edges_included():
    # published 2x within 1.5x: the band is 1.333..-3x
    assert V.ratio(3.0, 2.0, 1.5)[0] == "holds"
    assert V.ratio(2.0 / 1.5, 2.0, 1.5)[0] == "holds"
    assert V.ratio(3.0 + EPS, 2.0, 1.5)[0] == "does not hold"
    assert V.ratio(2.0 / 1.5 - EPS, 2.0, 1.5)[0] == "does not hold"
    v, why = V.ratio(2.5, 2.0, 1.5)
    assert v == "holds" and why == "2.5x (no interval: one process) is inside 1.33-3x (2x within 1.5x)"


def test_a_ratio_holds_only_where_its_interval_meets_the_band():
    a = 2.0 / 1.5
    assert V.ratio(1.4, 2.0, 1.5, lo=1.0, hi=a)[0] == "holds"                 # touches the lower edge
    assert V.ratio(2.9, 2.0, 1.5, lo=3.0, hi=3.5)[0] == "holds"               # touches the upper edge
    v, why = V.ratio(1.4, 2.0, 1.5, lo=1.0, hi=a - EPS)
    assert v == "does not hold" and "lies outside it" in why and "[1, 1.33]" in why
    v, why = V.ratio(2.9, 2.0, 1.5, lo=3.0 + EPS, hi=3.5)
    assert v == "does not hold" and "lies outside it" in why
    # inside, or reaching past the band
    assert V.ratio(2.0, 2.0, 1.5, lo=1.5, hi=2.5)[1] == "2x [1.5, 2.5] is inside 1.33-3x (2x within 1.5x)"
    assert V.ratio(2.0, 2.0, 1.5, lo=1.2, hi=2.5)[1].endswith("; its interval reaches past the band")
    assert V.ratio(2.0, 2.0, 1.5, lo=1.5, hi=3.2)[1].endswith("; its interval reaches past the band")
    assert V.ratio(2.0, 2.0, 1.5, lo=a, hi=3.0)[1].endswith("(2x within 1.5x)")
    # half an interval is none
    assert V.ratio(2.0, 2.0, 1.5, lo=1.0, hi=None)[1] == V.ratio(2.0, 2.0, 1.5)[1]
    assert V.ratio(2.0, 2.0, 1.5, lo=float("nan"), hi=5.0)[1] == V.ratio(2.0, 2.0, 1.5)[1]


def test_a_ratio_outside_says_how_far_and_whether_the_direction_agrees():
    v, why = V.ratio(4.0, 2.0, 1.5)
    assert v == "does not hold"
    assert why == "4x (no interval: one process) is outside 1.33-3x (2x within 1.5x): 0.5x off; " \
                  "faster than the reference, as published"
    assert V.ratio(0.25, 0.5, 1.5)[1].endswith("2x off; slower than the reference, as published")
    assert V.ratio(0.5, 2.0, 1.5)[1].endswith(": 4x off")                      # directions differ
    assert V.ratio(1.0, 2.0, 1.2)[1].endswith(": 2x off")                      # 1x has no direction
    assert V.ratio(1.5, 1.1, 1.2)[1].endswith(": 0.733x off")                  # published within the tolerance of 1


def test_kernel_counts_within_the_tolerance():
    pub = {"eager": 10, "compile": 4}
    assert V.count({"eager": 10, "compile": 4}, pub) == (
        "holds", "10 -> 4 kernels per iteration against the published 10 -> 4")
    assert V.count({"eager": 10, "compile": 5}, pub) == (
        "does not hold", "10 -> 5 kernels per iteration against the published 10 -> 4 (the variant launches fewer, "
        "as published)")
    assert V.count({"eager": 4, "compile": 10}, pub)[1].endswith("10 -> 4")
    assert V.count({"eager": 12, "compile": 5}, pub, tolerance=1.25)[0] == "holds"     # 12.5 and 3.2-5 bounds
    assert V.count({"eager": 12.5, "compile": 3.2}, pub, tolerance=1.25)[0] == "holds"
    assert V.count({"eager": 12.6, "compile": 4}, pub, tolerance=1.25)[0] == "does not hold"
    assert V.count({"eager": 10, "compile": 3.1}, pub, tolerance=1.25)[0] == "does not hold"
    assert V.count({"eager": 10}, pub) == ("not tested", "no kernel count")
    assert V.count({"compile": 4}, pub) == ("not tested", "no kernel count")


def test_kendall_tau():
    assert V.kendall_tau(["a", "b", "c"], ["a", "b", "c"]) == 1.0
    assert V.kendall_tau(["a", "b", "c"], ["c", "b", "a"]) == -1.0
    assert V.kendall_tau(["a", "b", "c"], ["b", "a", "c"]) == pytest.approx(1 / 3)
    assert V.kendall_tau(["a", "x", "b"], ["a", "b"]) == 1.0                  # items of both only
    assert math.isnan(V.kendall_tau(["a"], ["a"]))


def test_an_ordering_holds_unless_a_pair_is_swapped_beyond_the_spread():
    pub = {"eager": 3.0, "compile": 2.0, "triton": 1.0}
    assert V.ordering({"eager": 3.0}, pub) == ("not tested", "fewer than two of the implementations measured")
    v, why = V.ordering({"eager": 3.0, "compile": 2.0, "triton": 1.0}, pub)
    assert v == "holds" and why == "measured triton < compile < eager (Kendall tau +1.00 against the published order)"
    # within 2% of each other (the default spread): tied, so not swapped
    assert V.ordering({"compile": 1.0, "triton": 1.039}, pub)[0] == "holds"
    v, why = V.ordering({"compile": 1.0, "triton": 1.05}, pub)
    assert v == "does not hold" and why.endswith("swapped beyond the timing spread: triton 1.05 ms after compile 1 ms")
    assert V.ordering({"compile": 1.0, "triton": 1.05}, pub, spread={"triton": 0.04})[0] == "holds"
    assert V.ordering({"compile": 1.0, "triton": 1.05}, pub, spread={"compile": 0.04})[0] == "holds"
    assert V.ordering({"compile": 1.0, "triton": 1.2}, pub, spread={"compile": 0.04})[0] == "does not hold"
    assert V.ordering({"compile": 1.0, "triton": 1.05, "other": 0.5}, pub)[1].startswith("measured compile < triton")


def test_at_most_a_bound():
    assert V.at_most(None, 1.1) == ("not tested", "no measured value")
    assert V.at_most(1.1, 1.1) == ("holds", "1.1x (no interval: one process) is at most 1.1x")
    assert V.at_most(1.1 + EPS, 1.1)[0] == "does not hold"
    assert V.at_most(1.0, 1.1, lo=1.1, hi=1.3)[0] == "holds"
    v, why = V.at_most(1.0, 1.1, lo=1.1 + EPS, hi=1.3, what=" on the GPU")
    assert v == "does not hold" and why == "1x [1.1, 1.3] on the GPU is above 1.1x"


def test_more_at_the_larger_configuration():
    assert V.greater(None, 2.0, "small", "large") == ("not tested", "small not measured")
    assert V.greater(1.0, None, "small", "large") == ("not tested", "large not measured")
    assert V.greater(1.0, 1.0, "at 8", "at 64")[0] == "does not hold"
    assert V.greater(1.0, 1.2, "at 8", "at 64") == (
        "holds", "1.2x (no interval: one process) at 64 is more than 1x at 8")
    assert V.greater(1.0, 1.2, "at 8", "at 64", lo=0.9, hi=1.0)[0] == "does not hold"
    assert V.greater(1.0, 1.2, "at 8", "at 64", lo=0.9, hi=1.0 + EPS)[0] == "holds"
    assert V.greater(1.0, 1.2, "a", "b", lo=0.9, hi=1.5)[1] == "1.2x [0.9, 1.5] b is not more than 1x a".replace(
        "is not more than", "is more than")


def test_launch_bound():
    assert V.launch(None, 1.0, 0.5)[0] == "not tested"
    assert V.launch(5.0, 0.0, 0.5)[0] == "not tested"
    assert V.launch(5.0, 5.0, 0.9)[0] == "does not hold"                      # a ratio of 1
    assert V.launch(5.0 + EPS, 5.0, 0.5) == (
        "holds", "launch call 5 us / kernel 5 us = 1x; 50% of kernels shorter than their launch (at least 50% needed)")
    assert V.launch(6.0, 5.0, 0.5 - EPS)[0] == "does not hold"
    assert V.launch(6.0, 5.0, None) == ("does not hold", "launch call 6 us / kernel 5 us = 1.2x")
    assert V.launch(6.0, 5.0, 0.3, bound=0.3)[0] == "holds"


def test_traffic_within_a_factor_either_way():
    assert V.traffic(None, 100, 1.1) == ("not tested", "no measured bytes")
    assert V.traffic(100, 0, 1.1, what="model") == ("not tested", "no model bytes")
    assert V.traffic(110, 100, 1.1) == (
        "holds", "measured 110 B against the formula's 100 B (1.1x; within 1.1x needed)")
    assert V.traffic(100, 110, 1.1)[0] == "holds"
    assert V.traffic(111, 100, 1.1)[0] == "does not hold"
    assert V.traffic(100, 111, 1.1)[0] == "does not hold"
    assert V.traffic(0, 100, 1.1)[0] == "does not hold"


def test_linear_fit_and_the_marginal_exponent():
    assert V.linear_fit([1, 2, 3, 4], [5, 8, 11, 14]) == pytest.approx((2.0, 3.0, 1.0))
    a, b, r2 = V.linear_fit([1, 2, 3], [1, 3, 2])
    assert (a, b) == pytest.approx((1.0, 0.5)) and r2 == pytest.approx(0.25)
    assert math.isnan(V.linear_fit([2, 2], [1, 3])[1])
    assert math.isnan(V.linear_fit([1, 2], [3, 3])[2])
    assert V.marginal_exponent([1, 2, 4, 8], [10 + 2 * x for x in [1, 2, 4, 8]]) == pytest.approx(1.0)
    # y = x^2: the increment over the fit's fixed part (-5; -10/3) across the largest half of x
    assert V.marginal_exponent([1, 2, 3, 4], [1, 4, 9, 16]) == pytest.approx(math.log(21 / 9) / math.log(2))
    assert V.marginal_exponent([1, 2, 3], [1, 4, 9]) == pytest.approx(math.log((9 + 10 / 3) / (4 + 10 / 3))
                                                                      / math.log(1.5))
    # a fixed part above the values: 0.9 of the smaller value instead
    a, b, _ = V.linear_fit([1, 2, 3, 4], [10, 10, 10, 10.5])
    assert a == pytest.approx(9.75) and V.marginal_exponent([1, 2, 3, 4], [10, 10, 10, 10.5]) == pytest.approx(
        math.log((10.5 - 9) / (10 - 9)) / math.log(2))
    assert math.isnan(V.marginal_exponent([1, 2, 2], [1, 2, 3]))


def test_time_linear_in_the_layers():
    x = [1, 2, 4, 8]
    assert V.scaling(x[:2], [1, 2], 0.9, 0.2) == ("not tested", "2 values of layers measured (at least 3 needed)")
    v, why = V.scaling(x, [1 + 0.5 * i for i in x], 0.99, 0.1)
    assert v == "holds" and why.startswith("t = 1 + 0.5 ms x layers, R^2 1.000 (at least 0.99 needed)")
    assert V.scaling(x, [10 - i for i in x], 0.5, 0.5)[0] == "does not hold"            # falling
    assert V.scaling(x, [1, 1.8, 4.4, 7.9], 0.9999, 0.5)[0] == "does not hold"         # R^2 short
    assert V.scaling(x, [i * i for i in x], 0.9, 0.1)[0] == "holds"                    # exponent 1.07
    assert V.scaling(x, [i * i for i in x], 0.9, 0.05)[0] == "does not hold"
    lin = [1 + 0.5 * i for i in x]
    assert V.scaling(x, lin, 0.99, 0.1, exponents=[1.05, 1.2])[0] == "holds"          # reaches the band
    assert V.scaling(x, lin, 0.99, 0.1, exponents=[1.15, 1.2])[0] == "does not hold"
    assert V.scaling(x, lin, 0.99, 0.1, exponents=[0.7, 0.85])[0] == "does not hold"
    assert V.scaling(x, lin, 0.99, 0.1, exponents=[1.2])[0] == "holds"                # one: no interval


def test_a_compound_claim():
    h, f, n, d = ("a", "holds", "."), ("b", "does not hold", "."), ("c", "not tested", "."), \
        ("d", "not measurable on this device", ".")
    assert V.compound([h, h]) == ("holds", "a: holds (.); a: holds (.)")
    assert V.compound([h, f, n])[0] == "does not hold"
    assert V.compound([h, n])[0] == "not tested"
    assert V.compound([d, d])[0] == "not measurable on this device"
    assert V.compound([d, h])[0] == "not tested"
    assert V.compound([])[0] == "not tested"
