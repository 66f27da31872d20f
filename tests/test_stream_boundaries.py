"""The streamed metrics (analysis.run.stream) on a trace small enough to work out by hand,
each kernel at an edge of a rule: a launch call starting exactly at the range's start or
just before it, one ending exactly at its end and one just after, a gap of exactly the
kernel-wait threshold (kernel wait) and one ns past it (other), a kernel queued right at
the previous one's end, one of another thread of the process (attribution process only)
and one of another process (neither), a kernel clipped by the range's end; touching
instances (two layers), a range with no kernels, the kernel-wait threshold given, and
the call at exactly SHORT_CALL_US. The pandas oracle (metrics_oracle) must agree with
every value, and the hand-worked ones are asserted on their own."""
import threading

import numpy as np
import pandas as pd
import pytest

import metrics_oracle
from fusionlab.analysis.readers.trace import Trace
from fusionlab.analysis.run import fields as F
from fusionlab.analysis.run import stream

A, B, C = (5 << 24) | 1, (5 << 24) | 2, (6 << 24) | 1    # two threads of process 5, one of process 6
# (start, end, launch_start, launch_end, tid, name)
KERNELS = [
    (1001, 1050, 999, 1000, A, "k0"),        # launched before the range: not its
    (1200, 2200, 1000, 1100, A, "k1"),       # launched at the range's start
    (2200, 3000, 1300, 1400, A, "k2"),       # queued at k1's end: no gap
    (3300, 4000, 3100, 3200, A, "k3"),       # launched after k2 ended: host wait 300
    (9000, 9500, 3500, 3600, A, "k4"),       # gap of exactly 5000 ns, launched before: kernel wait
    (14501, 15000, 3700, 3800, A, "k5"),     # gap of 5001 ns: other
    (15000, 16000, 4000, 4100, B, "k6"),     # another thread of the process
    (16000, 16500, 2000, 2100, C, "k9"),     # another process
    (20200, 20300, 20001, 20100, A, "k8"),   # launched after the range
    (21000, 22000, 19000, 20000, A, "k7"),   # launch call ending at the range's end; the kernel after it
]
RANGES = [("r", "d", 1000, 20000, A), ("s", "d", 1000, 5000, A), ("s", "d", 5000, 9000, A),
          ("quiet", "d", 30000, 31000, A)]


def trace(kernels=KERNELS, device="cuda") -> Trace:
    k = pd.DataFrame([{"name": n, "start": s, "end": e, "tid": t, "launch_start": ls, "launch_end": le,
                       "launch_name": "cudaLaunchKernel", "stream": 7, "full_name": f"void {n}()"}
                      for s, e, ls, le, t, n in kernels])
    api = pd.DataFrame([{"name": "cudaLaunchKernel", "start": ls, "end": le, "tid": t, "is_launch": True}
                        for _, _, ls, le, t, _ in kernels])
    ranges = pd.DataFrame([{"name": n, "domain": d, "start": s, "end": e, "tid": t} for n, d, s, e, t in RANGES])
    return Trace(source="hand", backend="nsys", device=device, ranges=ranges, api=api, kernels=k)


def same(old: dict, new: dict) -> None:
    assert list(old) == list(new)
    for key in old:
        for a in old[key]:
            o, n = old[key][a], new[key][a]
            assert list(o) == list(n), (key, a)
            for f in o:
                assert o[f] == n[f] or (o[f] != o[f] and n[f] != n[f]), (key, a, f, o[f], n[f])


TARGETS = [("r", "d"), ("s", "d"), ("quiet", "d")]


def test_each_rule_at_its_edge_by_hand_and_by_the_oracle():
    t = trace()
    new, _ = stream.views(t, TARGETS, F.ATTRIBUTIONS)
    old, _ = metrics_oracle.views(t, TARGETS, F.ATTRIBUTIONS)
    same(old, new)
    p, s = new["d:r"]["process"], new["d:r"]["same_thread"]
    # process: k1..k7 (k7's launch call ends at the range's end; the kernel is clipped to nothing)
    assert (p["kernels"], p["kernel_time_ms"], p["launch_calls"], p["launch_api_time_ms"]) == (7, 5499 / 1e6, 7, 1600 / 1e6)
    assert p["gpu_busy_fraction"] == 4499 / 19000
    assert (p["idle_host_wait_frac"], p["idle_kernel_wait_frac"], p["idle_other_frac"]) == (
        4300 / 19000, 5200 / 19000, 5001 / 19000)
    assert p["gpu_other_work_frac"] == 49 / 19000             # k0: the process's, in the window, not the range's
    assert p["gpu_span_per_iter_ms"] == (22000 - 1200) / 1e6 and p["iterations"] == 1
    assert (p["launch_api_us"], p["queue_us"], p["launch_delay_us"], p["short_kernel_share"]) == (0.1, 1.0, 1.0, 0.0)
    # same thread: k6 left out, so k7's gap is 5000 of host wait
    assert (s["kernels"], s["launch_calls"], s["launch_api_time_ms"]) == (6, 6, 1500 / 1e6)
    assert s["gpu_busy_fraction"] == 3499 / 19000
    assert (s["idle_host_wait_frac"], s["idle_kernel_wait_frac"], s["idle_other_frac"]) == (
        5300 / 19000, 5200 / 19000, 5001 / 19000)
    assert s["gpu_other_work_frac"] == 1049 / 19000
    q = new["d:quiet"]["process"]
    assert (q["kernels"], q["launch_calls"], q["idle_other_frac"], q["bound"]) == (0, 0, 1.0, F.NO_GPU_WORK)
    assert q["median_kernel_us"] is None and "launch_api_us" not in q


def test_touching_instances_are_two_layers_and_each_holds_its_own_kernels():
    t = trace()
    target = stream.Target(F.instances(t, "s", "d"), ["process"], [])
    assert [idx.tolist() for _, idx in target.layers] == [[0], [1]]
    assert target.window == (1000, 9000)
    apart = stream.Target(F.instances(trace(), "r", "d"), ["process"], [])
    assert len(apart.layers) == 1
    m = stream.views(t, [("s", "d")], ["process"])[0]["d:s"]["process"]
    assert (m["kernels"], m["instances"], m["iterations"], m["duration_ms"]) == (6, 2, 2, 8000 / 1e6)


def test_the_kernel_wait_threshold_given_moves_the_gap_of_5000_ns():
    t = trace()
    m = stream.views(t, [("r", "d")], ["process"], kernel_wait_us=4.999)[0]["d:r"]["process"]
    assert (m["idle_kernel_wait_frac"], m["idle_other_frac"]) == (200 / 19000, 10001 / 19000)
    m = stream.views(t, [("r", "d")], ["process"], kernel_wait_us=5.001)[0]["d:r"]["process"]
    assert (m["idle_kernel_wait_frac"], m["idle_other_frac"]) == (10201 / 19000, 0.0)


def test_a_kernel_shorter_than_a_call_of_exactly_50_us_is_short():
    # call 50,000 ns (SHORT_CALL_US), kernel 49,999 ns: short; a call 1 ns longer: not
    ks = [(100_000, 149_999, 50_000, 100_000, A, "a"), (200_000, 249_999, 150_000, 200_001, A, "b"),
          (300_000, 300_300, 250_000, 250_200, A, "c"), (300_300, 300_500, 250_300, 250_500, A, "d")]
    t = trace(ks)
    t.ranges = pd.DataFrame([{"name": "w", "domain": "d", "start": 0, "end": 400_000, "tid": A}])
    new, _ = stream.views(t, [("w", "d")], ["process"])
    old, _ = metrics_oracle.views(t, [("w", "d")], ["process"])
    same(old, new)
    assert new["d:w"]["process"]["short_kernel_share"] == 0.25     # a only; c and d: kernel >= call


def test_a_cpu_trace_has_no_busy_time_or_other_work():
    t = trace(device="cpu")
    new, _ = stream.views(t, [("r", "d")], ["process"])
    old, _ = metrics_oracle.views(t, [("r", "d")], ["process"])
    same(old, new)
    m = new["d:r"]["process"]
    assert m["gpu_busy_fraction"] is None and "gpu_other_work_frac" not in m and m["launch_calls"] is None


def test_no_target_or_a_range_not_there_reads_nothing():
    t = trace()
    assert stream.views(t, [], F.ATTRIBUTIONS) == ({}, {})
    out, _ = stream.views(t, [("nowhere", "d")], ["process"])
    assert out == {"d:nowhere": {"process": {"range": "nowhere", "domain": "d", "attribution": "process",
                                             "instances": 0}}}
    out, tables = stream.views(t, [], [], tables=[("nowhere", "d", "process")])
    assert out == {} and list(tables[("nowhere", "d", "process")].columns) == F.KERNEL_TABLE_COLUMNS


def test_the_kernel_table_of_a_range_by_hand():
    t = trace()
    _, tables = stream.views(t, [], [], tables=[("r", "d", "same_thread")])
    k = tables[("r", "d", "same_thread")]
    assert sorted(zip(k["name"], k["total_us"])) == [("k1", 1.0), ("k2", 0.8), ("k3", 0.7), ("k4", 0.5),
                                                     ("k5", 0.499), ("k7", 1.0)]
    assert k["calls"].tolist() == [1] * 6 and k["total_us"].tolist() == sorted(k["total_us"], reverse=True)
    old = metrics_oracle.kernel_table(t, "r", "d", "same_thread")
    pd.testing.assert_frame_equal(old.reset_index(drop=True), k.reset_index(drop=True), check_exact=True)


def test_a_failure_of_the_background_pass_is_raised_in_the_caller():
    ran = []

    def bad():
        raise KeyError("launch pass")
    with pytest.raises(KeyError, match="launch pass"):
        stream._both(bad, lambda: ran.append(1))
    assert ran == [1]
    stream._both(lambda: ran.append(2), lambda: ran.append(3))
    assert sorted(ran) == [1, 2, 3]
    names = []
    stream._both(lambda: names.append(threading.current_thread().name), lambda: None)
    assert names == ["fusionlab-launch-pass"]   # the thread a profiler or a stack dump shows


def test_segmented_running_max_at_the_edges():
    assert stream._segmented_cummax(np.array([], np.int64), np.array([], bool)).tolist() == []
    x, first = np.array([3, 1, 4, 1, 5, 2], np.int64), np.array([True, False, False, True, False, False])
    assert stream._segmented_cummax(x, first).tolist() == [3, 3, 4, 1, 5, 5]
    assert stream._segmented_cummax(x - 10, first).tolist() == [-7, -7, -6, -9, -5, -5]
    # seg x span just below and at 2**62: the lifted path and the loop agree
    big = np.array([0, 2 ** 61 - 1, 0, 5], np.int64)
    assert stream._segmented_cummax(big, np.array([True, False, True, False])).tolist() == [0, 2 ** 61 - 1, 0, 5]
    big = np.array([0, 2 ** 62, 0, 5], np.int64)
    assert stream._segmented_cummax(big, np.array([True, False, True, False])).tolist() == [0, 2 ** 62, 0, 5]


def test_the_busy_at_queries_are_each_instances_ends_by_process():
    t = trace()
    targets = [stream.Target(F.instances(t, "s", "d"), ["process"], []),
               stream.Target(F.instances(t, "r", "d"), ["process"], [])]
    q = stream._queries(targets)
    assert list(q) == [5] and sorted(q[5].tolist()) == [1000, 1000, 5000, 5000, 9000, 20000]


def test_a_kernel_starting_as_its_call_returns_is_queued_for_0_ns():
    # gaps from call end to kernel start: 0, 0 and 3000 ns: the queue's median is 0; a gap below 0 is left out
    ks = [(1100, 1200, 1000, 1100, A, "a"), (2100, 2200, 2000, 2100, A, "b"), (6100, 6200, 3000, 3100, A, "c"),
          (6300, 6400, 6250, 6350, A, "d")]
    t = trace(ks)
    t.ranges = pd.DataFrame([{"name": "w", "domain": "d", "start": 0, "end": 10_000, "tid": A}])
    new, _ = stream.views(t, [("w", "d")], ["process"])
    old, _ = metrics_oracle.views(t, [("w", "d")], ["process"])
    same(old, new)
    m = new["d:w"]["process"]
    assert (m["queue_us"], m["launch_delay_us"]) == (0.0, 0.0)     # delays 0, 0, 3000 and 0 (-50 clipped)


def test_chunks_of_one_row_whose_call_starts_at_a_window_edge(monkeypatch):
    # a call starting at the range's start, and a call of 0 ns at its end: both the range's, each in a chunk of
    # its own (the chunk's calls all at the window's edge)
    from fusionlab.analysis.readers import trace as T
    monkeypatch.setattr(T, "CHUNK", 1)
    ks = [(20, 30, 0, 10, A, "a"), (1100, 1200, 1000, 1000, A, "b")]
    t = trace(ks)
    t.ranges = pd.DataFrame([{"name": "w", "domain": "d", "start": 0, "end": 1000, "tid": A}])
    new, _ = stream.views(t, [("w", "d")], ["process"])
    old, _ = metrics_oracle.views(t, [("w", "d")], ["process"])
    same(old, new)
    assert (new["d:w"]["process"]["kernels"], new["d:w"]["process"]["launch_calls"]) == (2, 2)


def test_chunks_of_one_row_keep_the_latest_end_and_every_attribution(monkeypatch):
    from fusionlab.analysis.readers import trace as T
    monkeypatch.setattr(T, "CHUNK", 1)
    ks = [(20, 900, 0, 10, A, "long"), (100, 200, 50, 60, A, "short")]   # the last kernel ends first
    t = trace(ks)
    t.ranges = pd.DataFrame([{"name": "w", "domain": "d", "start": 0, "end": 1000, "tid": A}])
    m = stream.views(t, [("w", "d")], ["process"])[0]["d:w"]["process"]
    assert m["gpu_span_per_iter_ms"] == 880 / 1e6
    # the hand trace a row at a time: a chunk of another thread's kernel only (k6) is the process's alone
    t = trace()
    new, _ = stream.views(t, TARGETS, F.ATTRIBUTIONS)
    old, _ = metrics_oracle.views(t, TARGETS, F.ATTRIBUTIONS)
    same(old, new)
    assert (new["d:r"]["process"]["kernels"], new["d:r"]["same_thread"]["kernels"]) == (7, 6)
