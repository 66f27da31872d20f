"""Invariants of the numbers a user reads, over generated inputs (hypothesis), each checked
on the product's own functions against a plain oracle written here:

- GPU busy time (analysis.run.metrics over a Trace) is the length of the union of the
  range's kernel intervals, clipped to the range, for kernels that overlap on several
  streams; it never exceeds the range, and the idle shares add up to 1 minus the busy one;
- a paired speedup and its intervals (runner.timing, core.ratios) are unchanged by a common
  slowdown of both sides, and swapping the sides inverts them;
- the repeats' intervals (analysis.sweep.stats) scale with the data, and a ratio's
  interval is unchanged by a common factor;
- a headline verdict (analysis.sweep.headline.verdict) is "inconclusive" exactly when the
  speedup's interval holds 1.
"""
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fusionlab.analysis.readers.trace import Trace
from fusionlab.analysis.run import metrics
from fusionlab.analysis.sweep import stats
from fusionlab.analysis.sweep.headline import verdict
from fusionlab.core import ranges as R
from fusionlab.core.ratios import median_ratio_ci
from fusionlab.runner import timing

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---- busy time is the union of the kernel intervals ------------------------------------------

TID = (4242 << 24) | 7          # one thread of one process (stream.PID_SHIFT keeps the pid)
WINDOW = (1_000, 3_000)         # the measure range, ns

# a kernel: its launch call's start, then its start after the call and its duration, and its
# stream; launch calls before the range (negative offsets) launch kernels that belong to no
# range; a kernel starts before the range ends (it may end after it)
kernel = st.tuples(st.integers(-400, 1_990), st.integers(0, 600), st.integers(1, 900), st.integers(0, 3)).map(
    lambda k: (k[0], min(k[1], WINDOW[1] - WINDOW[0] - 3 - k[0]), k[2], k[3]))


def trace_of(kernels) -> Trace:
    rows, api = [], []
    for i, (launch, delay, dur, stream) in enumerate(kernels):
        ls = WINDOW[0] + launch
        s = ls + 2 + delay
        rows.append(dict(name=f"k{i % 3}", start=s, end=s + dur, tid=TID, launch_start=ls, launch_end=ls + 2,
                         launch_name="cudaLaunchKernel", stream=stream, full_name=f"k{i % 3}"))
        api.append(dict(name="cudaLaunchKernel", start=ls, end=ls + 2, tid=TID, is_launch=True))
    ranges = pd.DataFrame([dict(name=R.MEASURE, domain=R.DOMAIN, start=WINDOW[0], end=WINDOW[1], tid=TID)])
    return Trace(source="generated", backend="nsys", device="cuda", ranges=ranges,
                 api=pd.DataFrame(api, columns=["name", "start", "end", "tid", "is_launch"]),
                 kernels=pd.DataFrame(rows, columns=["name", "start", "end", "tid", "launch_start", "launch_end",
                                                     "launch_name", "stream", "full_name"]))


def union_in_window(kernels) -> int:
    """Oracle: the nanoseconds of the window during which a kernel launched inside it runs,
    counted one nanosecond at a time."""
    covered = np.zeros(WINDOW[1] - WINDOW[0], dtype=bool)
    for launch, delay, dur, _ in kernels:
        if launch < 0:
            continue
        s = launch + 2 + delay
        covered[max(s, 0):max(min(s + dur, len(covered)), 0)] = True
    return int(covered.sum())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(kernel, max_size=14))
def test_busy_time_is_the_union_of_kernel_intervals_in_the_window(kernels):
    m = metrics.range_metrics(trace_of(kernels), R.MEASURE)
    span = WINDOW[1] - WINDOW[0]
    union = union_in_window(kernels)
    launched = sum(1 for k in kernels if k[0] >= 0)
    assert m["kernels"] == launched
    if not launched:
        return
    assert m["gpu_busy_per_iter_ms"] * 1e6 == pytest.approx(union, abs=1e-6)
    assert m["gpu_busy_fraction"] == pytest.approx(union / span, abs=1e-12)
    assert 0 <= m["gpu_busy_fraction"] <= 1
    # summed durations: the union when no two kernels overlap, never less
    summed = sum(k[2] for k in kernels if k[0] >= 0)
    assert m["gpu_time_per_iter_ms"] * 1e6 == pytest.approx(summed, abs=1e-6)
    idle = m["idle_host_wait_frac"] + m["idle_kernel_wait_frac"] + m["idle_other_frac"]
    assert idle + m["gpu_busy_fraction"] == pytest.approx(1.0, abs=1e-12)
    assert min(m["idle_host_wait_frac"], m["idle_kernel_wait_frac"], m["idle_other_frac"]) >= 0


def test_busy_time_counts_overlap_once():
    # two streams, one kernel inside another, a third after a gap: 400 ns busy, not 550
    k = [(0, 98, 300, 0), (10, 138, 150, 1), (600, 0, 100, 0)]
    m = metrics.range_metrics(trace_of(k), R.MEASURE)
    assert m["gpu_busy_per_iter_ms"] * 1e6 == pytest.approx(400)
    assert m["gpu_time_per_iter_ms"] * 1e6 == pytest.approx(550)
    assert m["gpu_busy_fraction"] == pytest.approx(400 / 2000)


def test_idle_shares_add_up_when_a_kernel_starts_after_the_range():
    # launched inside the range (no synchronize at its end), run after it: the range's idle
    # shares still add up to 1 - its busy share (0 here)
    m = metrics.range_metrics(trace_of([(1399, 600, 1, 0)]), R.MEASURE)
    idle = m["idle_host_wait_frac"] + m["idle_kernel_wait_frac"] + m["idle_other_frac"]
    assert m["gpu_busy_fraction"] == 0 and idle == pytest.approx(1.0, abs=1e-12)


# ---- paired speedups: unchanged by a common slowdown ------------------------------------------

window_ms = st.floats(0.01, 100.0, allow_nan=False)
pairs = st.integers(2, 9).flatmap(lambda n: st.tuples(st.lists(window_ms, min_size=n, max_size=n),
                                                        st.lists(window_ms, min_size=n, max_size=n)))
factor = st.floats(0.05, 50.0, allow_nan=False)


@FAST
@given(pairs, factor)
def test_a_paired_speedup_ignores_a_common_slowdown(p, c):
    v, e = p
    sv, se = [c * x for x in v], [c * x for x in e]
    assert timing.paired_speedup(sv, se) == pytest.approx(timing.paired_speedup(v, e), rel=1e-9)
    for ci in (timing.pair_ratio_ci, lambda a, b: median_ratio_ci(a, b, resamples=200)):
        assert ci(sv, se) == pytest.approx(ci(v, e), rel=1e-9)
    assert timing.ci_half_width(sv, se) == pytest.approx(timing.ci_half_width(v, e), rel=1e-6, abs=1e-9)


@FAST
@given(pairs)
def test_swapping_the_sides_inverts_a_paired_speedup_and_its_intervals(p):
    v, e = p
    s = timing.paired_speedup(v, e)
    assert timing.paired_speedup(e, v) == pytest.approx(1 / s, rel=1e-9)
    for ci in (timing.pair_ratio_ci, lambda a, b: median_ratio_ci(a, b, resamples=200)):
        lo, hi = ci(v, e)
        assert lo <= hi
        assert ci(e, v) == pytest.approx((1 / hi, 1 / lo), rel=1e-9)
    lo, hi = timing.pair_ratio_ci(v, e)
    # the t interval centres on the pairs' geometric mean ratio
    gm = math.exp(sum(math.log(b / a) for a, b in zip(v, e)) / len(v))
    assert lo <= gm * (1 + 1e-12) and gm <= hi * (1 + 1e-12)
    assert math.sqrt(hi / lo) - 1 == pytest.approx(timing.ci_half_width(v, e), rel=1e-12)


# ---- the repeats' intervals scale with the data -----------------------------------------------

repeats = st.lists(st.floats(0.01, 100.0, allow_nan=False), min_size=2, max_size=8)


@FAST
@given(repeats, repeats, factor)
def test_repeat_intervals_scale_with_the_data(num, den, c):
    lo, hi = stats.median_ci(num, n=200)
    assert lo <= float(np.median(num)) * (1 + 1e-12) and float(np.median(num)) <= hi * (1 + 1e-12)
    assert stats.median_ci([c * x for x in num], n=200) == pytest.approx((c * lo, c * hi), rel=1e-9)
    r = stats.ratio_ci(num, den, n=200)
    assert r[0] <= r[1]
    assert stats.ratio_ci([c * x for x in num], [c * x for x in den], n=200) == pytest.approx(r, rel=1e-9)
    assert stats.ratio_ci([c * x for x in num], den, n=200) == pytest.approx((c * r[0], c * r[1]), rel=1e-9)


# ---- a verdict is inconclusive exactly when the interval holds 1 ------------------------------

positive = st.floats(0.05, 20.0, allow_nan=False)
near_one = st.sampled_from([1.0, math.nextafter(1.0, 0.0), math.nextafter(1.0, 2.0)])


@FAST
@given(st.one_of(positive, near_one), st.one_of(positive, near_one), st.one_of(positive, near_one))
def test_a_verdict_is_inconclusive_exactly_when_the_interval_holds_one(s, a, b):
    lo, hi = min(a, b), max(a, b)
    v = verdict(s, lo, hi)
    assert (v == "inconclusive") == (lo <= 1 <= hi)
    assert (v == "faster") == (lo > 1) and (v == "slower") == (hi < 1)
    # where the interval is known the verdict follows it, not the point estimate
    assert verdict(1 / s, lo, hi) == v
    assert verdict(np.nan, lo, hi) == "" and verdict(s, np.nan, np.nan) == "1 repeat"


@FAST
@given(st.lists(st.tuples(positive, positive), min_size=1, max_size=6))
def test_ties_are_the_values_whose_interval_holds_one(cis):
    values = list(range(1, len(cis) + 1))
    lo, hi = [min(c) for c in cis], [max(c) for c in cis]
    assert stats.ties(values, lo, hi) == [float(x) for x, a, b in zip(values, lo, hi) if a <= 1 <= b]
