"""Where an iteration's time goes (analysis.sweep.shares) against numbers worked out by
hand: each run's inputs (GPU busy time before the summed kernel time, the CPU backend's
operator time and no waits, text read as missing, no device column), and the split at its
edges: waits capped at the idle time left, negative ones read as 0, kernels longer than
the wall time, host time equal to the kernel time (GPU-bound), a wall time of 0, a run
without wall or kernel time, the CPU backend (no bound), launches 0 or missing."""
import math

import numpy as np
import pandas as pd
import pytest

from fusionlab.analysis.sweep import shares

COLUMNS = ["wall_ms", "kernel_ms", "host_ms", "kernel_wait_ms", "other_ms", "kernel_share", "host_share",
           "kernel_wait_share", "other_share", "bound", "host_per_launch_us"]


def _same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert (g is None and w is None) or (isinstance(w, float) and math.isnan(w) and math.isnan(g)) or g == \
            pytest.approx(w, abs=1e-12), (got, want)


def test_inputs_of_gpu_and_cpu_runs():
    runs = pd.DataFrame({"device": ["cuda", "cuda", "cpu"], "wall_time_per_iter_ms": [10.0, 10.0, "10"],
                         "gpu_busy_per_iter_ms": [6.0, None, 6.0], "gpu_time_per_iter_ms": [7.0, 7.0, 7.0],
                         "cpu_kernel_time_per_iter_ms": [1.0, 1.0, 4.0],
                         "idle_kernel_wait_per_iter_ms": [1.0, "x", 1.0], "idle_other_per_iter_ms": [0.5, None, 1.0],
                         "launch_calls_per_iter": [100, 0, None]}, index=[5, 7, 9])
    q = shares.inputs(runs)
    assert list(q.columns) == ["wall_ms", "kernel_ms", "kernel_wait_ms", "other_ms", "launches_per_iter", "cpu"]
    assert list(q.index) == [5, 7, 9] and list(q["cpu"]) == [False, False, True]
    _same(list(q["wall_ms"]), [10.0, 10.0, 10.0])
    _same(list(q["kernel_ms"]), [6.0, 7.0, 4.0])
    _same(list(q["kernel_wait_ms"]), [1.0, math.nan, 0.0])
    _same(list(q["other_ms"]), [0.5, math.nan, 0.0])
    _same(list(q["launches_per_iter"]), [100.0, 0.0, math.nan])
    bare = shares.inputs(pd.DataFrame({"device": ["CPU"], "gpu_time_per_iter_ms": [2.0]}, index=[3]))
    assert list(bare["cpu"]) == [False] and bare["kernel_ms"].iloc[0] == 2.0
    assert all(math.isnan(bare[c].iloc[0]) for c in ("wall_ms", "kernel_wait_ms", "other_ms", "launches_per_iter"))
    nodev = shares.inputs(pd.DataFrame({"gpu_busy_per_iter_ms": [2.0], "idle_other_per_iter_ms": [1.0]}, index=[4]))
    assert list(nodev["cpu"]) == [False] and nodev["other_ms"].iloc[0] == 1.0


def test_per_run_split_by_hand():
    """Idle 10 - 6 = 4: kernel wait 1, other 0.5, host 2.5 (25 us per launch of 100); a run
    without waits: host 3 of 10; a CPU run: host 10 - 4 = 6, no waits, no bound."""
    runs = pd.DataFrame({"device": ["cuda", "cuda", "cpu"], "wall_time_per_iter_ms": [10.0, 10.0, 10.0],
                         "gpu_busy_per_iter_ms": [6.0, None, 6.0], "gpu_time_per_iter_ms": [7.0, 7.0, 7.0],
                         "cpu_kernel_time_per_iter_ms": [1.0, 1.0, 4.0],
                         "idle_kernel_wait_per_iter_ms": [1.0, None, 1.0], "idle_other_per_iter_ms": [0.5, None, 1.0],
                         "launch_calls_per_iter": [100, 0, 50]}, index=[5, 7, 9])
    s = shares.per_run(runs)
    assert list(s.columns) == COLUMNS and list(s.index) == [5, 7, 9]
    _same(list(s.loc[5]), [10.0, 6.0, 2.5, 1.0, 0.5, 0.6, 0.25, 0.1, 0.05, "gpu", 25.0])
    _same(list(s.loc[7]), [10.0, 7.0, 3.0, 0.0, 0.0, 0.7, 0.3, 0.0, 0.0, "gpu", math.nan])
    _same(list(s.loc[9].drop("bound")), [10.0, 4.0, 6.0, 0.0, 0.0, 0.4, 0.6, 0.0, 0.0, 120.0])
    assert list(s["bound"][:2]) == ["gpu", "gpu"] and pd.isna(s["bound"].iloc[2])   # None, or NaN as text


def _q(wall, kernel, kw=0.0, other=0.0, launches=10.0, **kw_):
    return pd.DataFrame({"wall_ms": [wall], "kernel_ms": [kernel], "kernel_wait_ms": [kw], "other_ms": [other],
                         "launches_per_iter": [launches], **{k: [v] for k, v in kw_.items()}})


@pytest.mark.parametrize("q, want", [
    # waits past the idle time: kernel wait capped at it, then other at what is left
    (_q(10.0, 6.0, 5.0, 2.0), [10.0, 6.0, 0.0, 4.0, 0.0, 0.6, 0.0, 0.4, 0.0, "gpu", 0.0]),
    (_q(10.0, 6.0, 3.0, 2.0), [10.0, 6.0, 0.0, 3.0, 1.0, 0.6, 0.0, 0.3, 0.1, "gpu", 0.0]),
    # negative waits read as 0
    (_q(10.0, 6.0, -1.0, -2.0), [10.0, 6.0, 4.0, 0.0, 0.0, 0.6, 0.4, 0.0, 0.0, "gpu", 400.0]),
    # kernels longer than the wall time: all of it kernel time, no idle time
    (_q(5.0, 6.0, 1.0, 1.0), [5.0, 5.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, "gpu", 0.0]),
    # host time equal to the kernel time: GPU-bound; past it: host-bound
    (_q(10.0, 5.0), [10.0, 5.0, 5.0, 0.0, 0.0, 0.5, 0.5, 0.0, 0.0, "gpu", 500.0]),
    (_q(10.0, 4.0, 1.0, launches=-1.0), [10.0, 4.0, 5.0, 1.0, 0.0, 0.4, 0.5, 0.1, 0.0, "host", math.nan]),
    # a wall time of 0: no shares
    (_q(0.0, 0.0), [0.0, 0.0, 0.0, 0.0, 0.0, math.nan, math.nan, math.nan, math.nan, "gpu", 0.0]),
    # no wall or no kernel time: no parts, shares or bound
    (_q(math.nan, 6.0, 1.0), [math.nan] * 9 + [None, math.nan]),
    (_q(10.0, math.nan, 1.0, 1.0), [10.0] + [math.nan] * 8 + [None, math.nan]),
    # the CPU backend (a median's 1.0 as true): no bound
    (_q(10.0, 2.0, cpu=1.0), [10.0, 2.0, 8.0, 0.0, 0.0, 0.2, 0.8, 0.0, 0.0, None, 800.0]),
    (_q(10.0, 2.0, cpu=False), [10.0, 2.0, 8.0, 0.0, 0.0, 0.2, 0.8, 0.0, 0.0, "host", 800.0]),
    # waits not measured: 0
    (_q(10.0, 6.0, math.nan, math.nan, launches=math.nan), [10.0, 6.0, 4.0, 0.0, 0.0, 0.6, 0.4, 0.0, 0.0, "gpu",
                                                            math.nan]),
])
def test_split_at_its_edges(q, want):
    s = shares.split(q)
    assert list(s.columns) == COLUMNS
    _same(list(s.iloc[0]), want)


def test_split_without_launch_or_cpu_columns_and_its_index():
    q = pd.DataFrame({"wall_ms": [10.0, 8.0], "kernel_ms": [2.0, 6.0], "kernel_wait_ms": [0.0, 1.0],
                      "other_ms": [0.0, 0.0]}, index=["a", "b"])
    s = shares.split(q)
    assert list(s.index) == ["a", "b"] and list(s["bound"]) == ["host", "gpu"]
    assert s["host_per_launch_us"].isna().all()
    assert (s[["kernel_ms", "host_ms", "kernel_wait_ms", "other_ms"]].sum(axis=1) == s["wall_ms"]).all()
    assert list(s[list(shares.SHARES.values())].sum(axis=1)) == [1.0, 1.0]
    assert np.array_equal(s["host_ms"].to_numpy(), [8.0, 1.0])
