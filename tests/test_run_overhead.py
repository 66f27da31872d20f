"""fusionlab.bench.run_overhead (benchmarks/run_overhead.py): the sweep replay (simulate_sweep) and the spans it reads,
with results worked out by hand."""
import pytest

from fusionlab.bench import run_overhead as ro


def _span(run, who, start, request, held, end, outside=0.0):
    return {"run": run, "who": who, "gpu": "g0", "start": start, "request": request,
            "held_from": held[0], "held_to": held[1], "end": end, "outside_s": outside}


SPANS = [
    # run a: untraced 1 s to the lock, holds it 2 s, 1 s after; nsys 2 s, 1 s, 2 s + 1 s of nsys's own
    _span("a", "untraced", 0.0, 1.0, (1.0, 3.0), 4.0),
    _span("a", "nsys", 10.0, 12.0, (12.0, 13.0), 15.0, outside=1.0),
    # run b (no nsys process: it timed out untraced): 1.5 s, 1 s, 1 s
    _span("b", "untraced", 0.5, 2.0, (3.0, 4.0), 5.0),
]


def test_one_in_flight_is_the_processes_end_to_end():
    # a.u 0-4, then a's nsys (ahead of b) 4-10, then b.u 10-13.5
    assert ro.simulate_sweep(SPANS, 1) == pytest.approx(13.5)


def test_two_in_flight_share_the_lock_first_come_first_served():
    # a.u holds 1-3, ends 4; b.u asks at 1.5, holds 3-4, ends 5; a.n 4: asks 6, holds 6-7, ends 10
    assert ro.simulate_sweep(SPANS, 2) == pytest.approx(10.0)
    # more in flight than processes changes nothing
    assert ro.simulate_sweep(SPANS, 8) == pytest.approx(10.0)


def test_mean_in_flight():
    spans = [_span("a", "untraced", 0.0, 0.0, (0.0, 1.0), 4.0), _span("b", "untraced", 2.0, 2.0, (2.0, 3.0), 4.0)]
    # alive at t = 0, 1, 2, 3 (4 is the end): 1, 1, 2, 2
    assert ro.mean_in_flight(spans) == pytest.approx(1.5)


def test_lock_spans_reads_the_records_and_skips_a_process_without_a_lock():
    rec = {"process_start_unix": 100.0, "process_end_unix": 110.0, "gpu_uuid": "u",
           "gpu_slot": {"wait_s": 2.0, "held_unix": [105.0, 107.0]}}
    row = {"run": "r", "time_untraced_s": 11.5, "profile_nsys_s": None,
           "_untraced_rec": rec, "_nsys_rec": {"process_start_unix": 1.0, "process_end_unix": 2.0, "gpu_slot": {}}}
    (s,) = ro.lock_spans([row])
    assert s == {"run": "r", "who": "untraced", "gpu": "u", "start": 100.0, "request": 103.0,
                 "held_from": 105.0, "held_to": 107.0, "end": 110.0, "outside_s": 1.5,
                 "imported": 100.0, "timing": (105.0, 105.0), "windows_ms": [], "probe_ms": None, "host": None}


def test_a_run_not_profiled_is_one_process_and_no_overlap(tmp_path):
    # its run.json is its timing.json plus profile_skipped (jobs.not_profiled):
    # the same lock span must not be read twice, as an overlap with itself
    import json
    d = tmp_path / "runs" / "nsys" / "m" / "v" / "inference_float32" / "bs1" / "r0"
    d.mkdir(parents=True)
    timing = {"status": "timeout", "process_start_unix": 0.0, "process_end_unix": 9.0, "gpu_uuid": "u",
              "gpu_slot": {"wait_s": 0.0, "held_unix": [1.0, 9.0]}}
    (d / "timing.json").write_text(json.dumps(timing))
    (d / "run.json").write_text(json.dumps({**timing, "profile_skipped": "not run under nsys"}))
    rows = ro.breakdown(str(tmp_path))
    assert [s["who"] for s in ro.lock_spans(rows)] == ["untraced"]
    assert ro.overlaps(rows) == []
    assert rows[0]["untraced_lock_held_s"] == 8.0 and rows[0]["nsys_lock_held_s"] is None
    assert ro.lock_by_gpu(rows) == {"u": (1, 8.0)}


def test_lock_by_gpu_counts_each_process_on_its_own_gpu():
    """A run's untraced process on one GPU and its nsys process on the other (each claims
    a GPU free to claim): each counts on its own GPU."""
    rows = [{"untraced_gpu_uuid": "g0", "untraced_lock_held_s": 2.0, "nsys_gpu_uuid": "g1", "nsys_lock_held_s": 1.0},
            {"untraced_gpu_uuid": "g1", "untraced_lock_held_s": 3.0, "nsys_gpu_uuid": None, "nsys_lock_held_s": None}]
    assert ro.lock_by_gpu(rows) == {"g0": (1, 2.0), "g1": (2, 4.0)}


def test_a_span_still_open_is_no_span_and_in_flight_must_be_positive(tmp_path):
    import json
    d = tmp_path / "runs" / "nsys" / "m" / "v" / "inference_float32" / "bs1" / "r0"
    d.mkdir(parents=True)
    rec = {"status": "ok", "process_start_unix": 0.0, "process_end_unix": 9.0, "gpu_uuid": "u",
           "gpu_slot": {"wait_s": 0.0, "held_unix": [1.0, None]}}
    (d / "run.json").write_text(json.dumps(rec))
    rows = ro.breakdown(str(tmp_path))
    assert rows[0]["nsys_lock_held_s"] is None and ro.lock_spans(rows) == [] and ro.overlaps(rows) == []
    for bad in ("0", "4,,6", "x"):
        with pytest.raises(SystemExit):
            ro.main([str(tmp_path), "--in-flight", bad])


def test_startup_beside_timing_splits_by_overlap():
    def rec(start, held, phases, windows=None):
        return {"process_start_unix": start, "process_end_unix": held[1] + 1, "phases_s": phases,
                "gpu_slot": {"wait_s": 0.0, "held_unix": held}, "timing": {"windows_ms": windows or []}}
    ph = {"startup": 0.0, "imports": 1.0, "build": 0.5, "check": 0.5, "warmup": 0.0, "timing": 1.0}
    # a: lock 2-5, timing 3-4; b starts up 3.5-6 (imports end 3.5, asks at 6): beside a's timing
    a = rec(0.0, [2.0, 5.0], ph, [1.0, 1.0, 1.5])
    b = rec(2.5, [6.0, 9.0], ph, [2.0, 2.0, 2.0])    # b's timing 7-8: nobody starts up then
    split = ro.startup_beside_timing([{"run": "a", "_untraced_rec": a, "_nsys_rec": None},
                                      {"run": "b", "_untraced_rec": b, "_nsys_rec": None}])
    assert split == {"beside": [1.5], "alone": [1.0]}


def test_startup_on_another_gpu_is_not_beside():
    def rec(start, held, uuid, windows):
        return {"process_start_unix": start, "process_end_unix": held[1] + 1, "gpu_uuid": uuid,
                "phases_s": {"imports": 1.0, "build": 0.5, "check": 0.5, "timing": 1.0},
                "gpu_slot": {"wait_s": 0.0, "held_unix": held}, "timing": {"windows_ms": windows}}
    a = rec(0.0, [2.0, 5.0], "g0", [1.0, 1.0, 1.5])   # timing 3-4
    b = rec(2.5, [6.0, 9.0], "g1", [2.0, 2.0, 2.0])   # starts up 3.5-6, on the other GPU
    split = ro.startup_beside_timing([{"run": "a", "_untraced_rec": a}, {"run": "b", "_untraced_rec": b}])
    assert split == {"beside": [], "alone": [1.5, 1.0]}


def test_probe_by_company_counts_the_processes_alive_on_the_host():
    def rec(start, held, probe, host="h"):
        return {"process_start_unix": start, "process_end_unix": held[1] + 1, "versions": {"host": host},
                "phases_s": {"imports": 1.0, "build": 0.5, "check": 0.5, "timing": 1.0},
                "gpu_slot": {"wait_s": 0.0, "held_unix": held},
                "timing": {"windows_ms": [1.0], "host_probe_median_ms": probe}}
    a = rec(0.0, [2.0, 5.0], 0.14)          # timing 3-4: b (alive 2.5-10) beside it
    b = rec(2.5, [6.0, 9.0], 0.07)          # timing 7-8: a ended at 6; c is on another host
    c = rec(6.5, [7.0, 9.0], 0.09, host="other")   # timing 8-9: b alive, but on another host
    got = ro.probe_by_company([{"run": r, "_untraced_rec": x} for r, x in (("a", a), ("b", b), ("c", c))])
    assert got == {0: [0.07, 0.09], 1: [0.14]}


def test_a_sweep_on_two_gpus_is_replayed_as_if_on_one(tmp_path, capsys):
    """Two runs measured at once on two GPUs (lock 1-3 s each, processes 0-4 s): on one
    GPU with one in flight they run end to end, 8 s; with two, the second waits for the
    lock, 2 s, and ends at 6 s."""
    import json
    for run, gpu in (("r0", "g0"), ("r1", "g1")):
        d = tmp_path / "runs" / "nsys" / "m" / run / "inference_float32" / "bs1" / "r0"
        d.mkdir(parents=True)
        rec = {"status": "timeout", "process_start_unix": 0.0, "process_end_unix": 4.0, "gpu_uuid": gpu,
               "gpu_slot": {"wait_s": 0.0, "held_unix": [1.0, 3.0]}}
        (d / "timing.json").write_text(json.dumps(rec))
        (d / "run.json").write_text(json.dumps({**rec, "profile_skipped": "not run under nsys"}))
    assert ro.main([str(tmp_path), "--in-flight", "1,2"]) == 0
    out = capsys.readouterr().out
    assert "on 2 GPUs" in out and "  K=1: 8 s" in out and "  K=2: 6 s" in out
    assert "GPU g0: 1 measuring processes, lock held 2 s" in out


def test_gpu_waits_split_the_claim_from_the_lock_and_count_who_recorded_each():
    """A record from before claims had a wait (claim_wait_s absent) counts toward the lock
    only (hand-summed)."""
    rows = [{"untraced_claim_wait_s": 30.0, "untraced_lock_wait_s": 0.5},
            {"untraced_claim_wait_s": 0.2, "untraced_lock_wait_s": 4.0},
            {"untraced_claim_wait_s": None, "untraced_lock_wait_s": 600.0},
            {}]
    assert ro.gpu_waits(rows) == {"claim": (30.2, 2), "lock": (604.5, 3)}


def test_phase_shares_sum_the_processes_that_ran_their_check():
    """Two untraced processes that ran their check and one stopped before it: the phases of
    the two summed, each with its share of their total (worked out by hand)."""
    def row(**phases):
        return {f"untraced_{p}_s": phases.get(p) for p in ro.PHASES}
    rows = [row(imports=4.0, gpu_wait=10.0, check=2.0, timing=4.0),
            row(imports=4.0, gpu_wait=30.0, check=20.0, timing=6.0),
            row(imports=4.0, gpu_wait=8.0)]
    s = ro.phase_shares(rows)
    assert s["processes"] == 2
    assert s["gpu_wait"] == (40.0, 0.5) and s["check"] == (22.0, 0.275) and s["imports"] == (8.0, 0.1)
    assert s["build"] == (0.0, 0.0)
    assert ro.phase_shares([rows[2]]) == {"processes": 0, **{p: (0.0, None) for p in ro.PHASES}}
