"""The gap ledger's host side (analysis.sweep.gap_host) at its edges, against numbers
worked out by hand: number and or_zero of none and of text, us_text at 1 ms, _pct at 0
and 0.5%, each host cost of a dynamo record (frames without an entry or a code, one graph
call, graphs on the CPU, launches costlier than the graphs, a process count of 1), the
training loop's cost from the frames where the sum is missing, the exposed share at 0
host costs and at no exposed time, eager's host time from its launches, the CUDA graph
skip, and the merge of a configuration's processes (medians, the first's counts, repeat
order, a failed run, timing.json before run.json)."""
import json
import math

import pytest

from fusionlab.analysis.sweep import gap_host as gh

CUDA_E = {"launches_per_iter": 8, "host_per_launch_us": 5.0}


def test_number_or_zero_and_text_at_their_edges():
    assert gh.number("2.5") == 2.5 and gh.number(3) == 3.0
    assert math.isnan(gh.number(None)) and math.isnan(gh.number("x")) and math.isnan(gh.number([1]))
    assert gh.or_zero(None) == 0.0 and gh.or_zero("nan") == 0.0 and gh.or_zero("-2") == -2.0
    assert gh.us_text(999.4) == "999 us" and gh.us_text(1000.0) == "1 ms" and gh.us_text(-1000.0) == "-1 ms"
    assert gh.us_text(-999.0) == "-999 us" and gh.us_text(12345.0) == "12.3 ms"
    assert gh._pct(0.0) == "0%" and gh._pct(0.001) == "<1%" and gh._pct(0.005) == "0%"
    assert gh._pct(0.5) == "50%" and gh._pct(1.0) == "100%"


def _dyn(**guards):
    """Two graph breaks, frames: forward (entry 0, 2 us), a resumed frame (entry 1, 3 us), a
    frame whose lookup found no entry (100 us, not counted), a frame without a code (0.5
    us); 3 graph calls of 110 us in all; the windows' compile 40 us and missed lookups 7 us."""
    g = {"frames": [{"code": "forward (/x/m.py:1)", "entry": 0, "lookup_us": 2.0},
                    {"code": "torch_dynamo_resume_in_forward_at_9 (/x/m.py:9)", "entry": 1, "lookup_us": 3.0},
                    {"code": "missed (/x/m.py:5)", "entry": None, "lookup_us": 100.0},
                    {"entry": 0, "lookup_us": 0.5}],
         "missed_lookup_us_per_iter": 7.0, "graph_calls_per_iter": 3, "graph_host_us_per_iter": 110.0, **guards}
    return {"repeats": 2, "windows": {"recompiles": 1}, "windows_compile_us_per_iter": 40.0, "guards": g,
            "total": {"graph_breaks": 2, "recompiles": 4, "recompile_limit_hits": 0,
                      "graph_break_sites": [{"file": "/a/b/m.py", "line": 7}, {"file": None, "line": 9}],
                      "graph_break_reasons": [{"reason": "r" * 100}, {"reason": "short"}],
                      "recompile_guards": {"forward": "0/1: x == 1  # x += 1", "other": "y == 2"}}}


def test_host_costs_of_a_record_by_hand():
    """launches 10 x 5 = 50 us; each graph's wrapper (110 - 50) / 3 = 20 us; guards the
    frames with an entry, not resumed: 2 + 0.5; graph breaks the resumed frame's 3 us and
    2 more wrappers, 43 us; recompiles 40 + 7 = 47 us."""
    c = gh.host_costs({"launches_per_iter": 10, "device": "cuda"}, CUDA_E, _dyn(), False)
    assert c == {
        "launches": (50.0, "10 launches against eager's 8 at 5 us each"),
        "guards": (2.5, "2 frame(s), 2.5 us cache lookup (median of 2 processes)"),
        "wrapper": (20.0, "110 us in 3 compiled graph call(s) per iteration (median of 2 processes)"),
        "graph_breaks": (43.0, f"2 graph break(s) at m.py:7, ?:9 ({'r' * 80}; short), 3 graphs per iteration"),
        "recompiles": (47.0, "4 recompiles (1 in the windows); failed guard: 0/1: x == 1")}


def test_host_costs_without_launch_counts_processes_or_breaks():
    d = _dyn()
    d.pop("repeats")
    d["total"] = {"recompile_limit_hits": 2}
    d["windows"] = {}
    for v, e in (({}, CUDA_E), ({"launches_per_iter": 10}, {"launches_per_iter": 8}),
                 ({"launches_per_iter": 10}, {"host_per_launch_us": 5.0})):
        c = gh.host_costs(v, e, d, False)
        assert c["launches"] == (0.0, "no launch counts (the CPU backend, or no trace)")
        # nothing inside the graphs: each of the 3 calls 110 / 3 us
        assert c["wrapper"][0] == pytest.approx(110 / 3)
        assert c["guards"][1] == "2 frame(s), 2.5 us cache lookup"   # no process count
        # no graph break counted, but a resumed frame: its lookup and the other 2 wrappers
        assert c["graph_breaks"] == (pytest.approx(3 + 2 * 110 / 3), "0 graph break(s), 3 graphs per iteration")
        assert c["recompiles"] == (47.0, "0 recompiles (0 in the windows), recompile limit hit 2x: the frame "
                                         "then runs eager")
    one = {**_dyn(), "repeats": 1}
    assert gh.host_costs({}, {}, one, False)["guards"][1] == "2 frame(s), 2.5 us cache lookup"


def test_graph_breaks_with_one_call_or_no_resumed_frame():
    frames = [{"code": "forward", "entry": 0, "lookup_us": 2.0}]
    v = {"launches_per_iter": 10}
    # one graph call: no wrapper after the first, only the resumed frames' lookups (none)
    c = gh.host_costs(v, CUDA_E, _dyn(graph_calls_per_iter=1, frames=frames), False)
    assert c["wrapper"][0] == 60.0 and c["graph_breaks"][0] == 0.0
    # no graph break and no resumed frame: 0 though there are 3 calls
    d = _dyn(frames=frames)
    d["total"]["graph_breaks"] = 0
    assert gh.host_costs(v, CUDA_E, d, False)["graph_breaks"][0] == 0.0
    d["total"]["graph_breaks"] = 1   # a break counted without a resumed frame: the 2 later wrappers
    assert gh.host_costs(v, CUDA_E, d, False)["graph_breaks"][0] == 40.0


def test_wrapper_on_the_cpu_and_past_the_graphs_time():
    # on the CPU the operators (kernel_ms) run inside the call: (110 - 20) / 3 = 30 us
    c = gh.host_costs({"launches_per_iter": 10, "device": "cpu", "kernel_ms": 0.02}, CUDA_E, _dyn(), False)
    assert c["wrapper"][0] == pytest.approx(30.0)
    assert gh.host_costs({"device": "cpu", "kernel_ms": 0.5}, {}, _dyn(), False)["wrapper"][0] == 0.0
    # 30 launches x 5 us = 150 us, more than the graphs' 110: no wrapper, not a negative one
    assert gh.host_costs({"launches_per_iter": 30}, CUDA_E, _dyn(), False)["wrapper"][0] == 0.0
    # no graph call, or no graph time: the wrapper is not measured
    c = gh.host_costs({}, {}, _dyn(graph_calls_per_iter=0), False)
    assert math.isnan(c["wrapper"][0]) and c["wrapper"][1] == "no compiled graph call timed"
    assert c["graph_breaks"][0] == 3.0   # the resumed frame's lookup alone
    d = _dyn()
    del d["guards"]["graph_calls_per_iter"]
    assert gh.host_costs({}, {}, d, False)["wrapper"][1] == "no compiled graph call timed"
    d = _dyn()
    del d["guards"]["graph_host_us_per_iter"]
    assert math.isnan(gh.host_costs({}, {}, d, False)["wrapper"][0])
    assert gh.host_costs({"launches_per_iter": 1}, CUDA_E, None, False) == {
        "launches": (5.0, "1 launches against eager's 8 at 5 us each")}


def test_the_training_loops_cost_at_its_edges():
    g = {"frames": [{"entry": 0, "lookup_us": 2.0}, {"entry": None, "lookup_us": 100.0},
                    {"entry": 1, "lookup_us": None}],
         "missed_lookup_us_per_iter": 7.0, "iteration_host_us_per_iter": 300.0}
    # the found lookups from the frames (2 us), 7 missed: 300 - 100 - 9 = 191 us
    assert gh.loop_cost(g, 100.0, " (n)") == (
        191.0, "191 us of the iteration's 300 us host time outside the compiled forward (100 us) and the cache "
               "lookups (9 us): backward, loss, optimizer step (n)")
    assert gh.loop_cost({**g, "lookup_us_per_iter": 3.0}, 100.0) == (
        190.0, "190 us of the iteration's 300 us host time outside the compiled forward (100 us) and the cache "
               "lookups (10 us): backward, loss, optimizer step")
    assert gh.loop_cost({**g, "iteration_host_us_per_iter": 109.0}, 100.0)[0] == 0.0
    us, text = gh.loop_cost({}, 100.0)
    assert math.isnan(us) and text == "the iteration's host time not recorded"
    train = {"mode": "train", "launches_per_iter": 10}
    c = gh.host_costs(train, CUDA_E, _dyn(iteration_host_us_per_iter=300.0), False)
    # the lookups of the frames with an entry, 5.5 us, and 7 missed: 300 - 110 - 12.5
    assert c["loop"][0] == 177.5 and c["loop"][1].endswith("optimizer step (median of 2 processes)")
    for d in (_dyn(iteration_host_us_per_iter=300.0, graph_calls_per_iter=0), _dyn()):
        assert "loop" not in gh.host_costs(train, CUDA_E, d, False)
    d = _dyn(iteration_host_us_per_iter=300.0)
    del d["guards"]["graph_host_us_per_iter"]
    assert "loop" not in gh.host_costs(train, CUDA_E, d, False)


def test_skipped_cuda_graphs_take_the_launches_and_wrapper():
    d = _dyn()
    d["total"]["cudagraph_skips"] = 2
    c = gh.host_costs({"launches_per_iter": 10}, CUDA_E, d, True)
    assert "launches" not in c and "wrapper" not in c
    assert c["cudagraph_skipped"] == (70.0, "2 graphs skipped (reason not logged): 10 launches against eager's 8 "
                                            "at 5 us each; 110 us in 3 compiled graph call(s) per iteration "
                                            "(median of 2 processes)")
    d["cudagraph_skip_reasons"] = ["a" * 150, "b" * 150]
    c = gh.host_costs({"launches_per_iter": 10}, CUDA_E, {**d, "guards": {**d["guards"], "graph_calls_per_iter": 0}},
                      True)
    # no wrapper measured (NaN): the launches alone
    assert c["cudagraph_skipped"] == (50.0, f"2 graphs skipped ({'a' * 150}; {'b' * 48}): 10 launches against "
                                            f"eager's 8 at 5 us each; no compiled graph call timed")
    assert "cudagraph_skipped" not in gh.host_costs({}, {}, d, False)


def test_host_terms_share_and_eagers_host_time():
    v = {"launches_per_iter": 10, "host_ms": 0.0762}   # costs 50 + 2.5 + 20 + 43 + 47 = 162.5 us
    t = gh.host_terms(v, {**CUDA_E, "host_ms": 0.01}, _dyn(), False)
    share = 76.2 / 162.5
    assert t["guards"] == (pytest.approx(2.5 * share / 1e3), "2 frame(s), 2.5 us cache lookup (median of 2 "
                                                             "processes); 47% exposed")
    assert t["launches"] == (pytest.approx(50 * share / 1e3 - 0.01),
                             "10 launches against eager's 8 at 5 us each; the variant's host costs 162 us, its "
                             "exposed host time 76.2 us: 47% exposed; less eager's exposed host time 10 us")
    # exposed exactly the costs: each counted whole; eager's host time from its launches, 8 x 5 us
    t = gh.host_terms({**v, "host_ms": 0.1625}, CUDA_E, _dyn(), False)
    assert t["wrapper"][0] == pytest.approx(0.02) and t["wrapper"][1].endswith("; 100% exposed")
    assert t["launches"][0] == pytest.approx(0.05 - 0.04) and t["launches"][1].endswith("host time 40 us")
    # no exposed time measured: whole, and said so
    t = gh.host_terms({"launches_per_iter": 10}, CUDA_E, _dyn(), False)
    assert t["guards"] == (0.0025, "2 frame(s), 2.5 us cache lookup (median of 2 processes); exposure not "
                                   "measured (no exposed host time)")
    assert t["launches"][1] == ("10 launches against eager's 8 at 5 us each; exposure not measured (no exposed host "
                                "time); less eager's exposed host time 40 us")
    # no host cost at all (no launch counts, no record): share 1, no division by 0
    t = gh.host_terms({"host_ms": 0.05}, {"host_ms": 0.01}, None, False)
    assert t == {"launches": (-0.01, "no launch counts (the CPU backend, or no trace); the variant's host costs 0 us, "
                                     "its exposed host time 50 us: 100% exposed; less eager's exposed host time 10 us")}
    # a wrapper not measured (NaN) counts 0 in the costs: 50 + 2.5 + 3 + 47 = 102.5 us, half exposed
    t = gh.host_terms({"launches_per_iter": 10, "host_ms": 0.05125}, CUDA_E, _dyn(graph_calls_per_iter=0), False)
    assert t["guards"][0] == pytest.approx(0.00125) and math.isnan(t["wrapper"][0])
    d = _dyn()
    d["total"]["cudagraph_skips"] = 1
    t = gh.host_terms({"launches_per_iter": 10}, CUDA_E, d, True)
    assert t["cudagraph_skipped"][0] == pytest.approx(0.07 - 0.04)
    assert t["cudagraph_skipped"][1].endswith("exposure not measured (no exposed host time); less eager's exposed "
                                              "host time 40 us")


def test_merged_takes_medians_and_the_first_records_counts():
    one = {"guards": {}}
    assert gh.merged([one]) is one
    recs = [{"total": {"recompiles": k}, "windows_compile_us_per_iter": w,
             "guards": {"graph_host_us_per_iter": gu, "lookup_us_per_iter": 1.0 + k,
                        "frames": [{"code": "f", "lookup_us": fl}]}}
            for k, w, gu, fl in ((1, 10.0, 100.0, 2.0), (2, None, 300.0, 4.0), (3, 30.0, 200.0, 9.0))]
    recs[1]["guards"]["missed_lookup_us_per_iter"] = 5.0   # not in the first: not added
    m = gh.merged(recs)
    assert m["repeats"] == 3 and m["total"] == {"recompiles": 1} and m["windows_compile_us_per_iter"] == 20.0
    assert m["guards"] == {"graph_host_us_per_iter": 200.0, "lookup_us_per_iter": 3.0,
                           "frames": [{"code": "f", "lookup_us": 4.0}]}
    assert recs[0]["guards"]["graph_host_us_per_iter"] == 100.0 and "repeats" not in recs[0]   # a copy
    recs[2]["guards"]["frames"] = [{"code": "g", "lookup_us": 9.0}]   # other frames: the first's lookup kept
    assert gh.merged(recs)["guards"]["frames"] == [{"code": "f", "lookup_us": 2.0}]
    two = gh.merged([{"windows_compile_us_per_iter": "x"}, {}])
    assert two["repeats"] == 2 and math.isnan(two["windows_compile_us_per_iter"]) and two["guards"] == {}
    assert gh._median([1, "3", None, float("nan")]) == 2.0


def _run(tmp_path, name, metrics, **files):
    d = tmp_path / name
    d.mkdir()
    (d / "metrics.json").write_text(json.dumps(metrics))
    for f, rec in files.items():
        (d / f"{f}.json").write_text(json.dumps(rec))
    return str(d / "metrics.json")


def test_dynamo_records_by_repeat_status_and_file(tmp_path):
    cfg = {"model": "m", "batch": 8, "mode": "inference", "dtype": "bf16", "backend": "nsys", "device": "cuda",
           "variant": "compile"}
    dyn = lambda k: {"total": {"k": k}, "windows_compile_us_per_iter": float(k)}   # noqa: E731
    files = [_run(tmp_path, "a", {**cfg, "repeat": "x"}, timing={"dynamo": dyn(9)}),
             _run(tmp_path, "b", {**cfg, "repeat": 10}, timing={"dynamo": None}, run={"dynamo": dyn(10)}),
             _run(tmp_path, "c", {**cfg, "repeat": 2, "size": ""}, timing={"dynamo": dyn(2)}, run={"dynamo": dyn(0)}),
             _run(tmp_path, "d", {**cfg, "repeat": 1, "status": "failed"}, timing={"dynamo": dyn(1)}),
             _run(tmp_path, "e", {**cfg, "repeat": 3, "status": "ok"}),
             _run(tmp_path, "f", {**cfg, "repeat": 4, "size": "s1"}, timing={"dynamo": dyn(4)}),
             _run(tmp_path, "g", {**cfg}, run={"dynamo": dyn(11)})]
    got = gh.dynamo_records(files)
    key = ("m", "8", "default", "inference", "bf16", "nsys", "cuda", "compile")
    # repeats 2, 10 (run.json), then the ones without a number: "None" before "x" as text
    assert got[key]["total"] == {"k": 2} and got[key]["repeats"] == 4
    assert got[key]["windows_compile_us_per_iter"] == 9.5   # the median of 2, 10, 11, 9
    assert got[key[:2] + ("s1",) + key[3:]] == dyn(4) and len(got) == 2
    assert gh.dynamo_records([]) == {}
    # repeats that are no numbers: in the order of their text, whatever the files' order and paths
    other = {**cfg, "model": "n"}
    two = [_run(tmp_path, "a1", {**other, "repeat": "r1"}, timing={"dynamo": dyn(1)}),
           _run(tmp_path, "p0", {**other, "repeat": "r0"}, timing={"dynamo": dyn(0)})]
    assert gh.dynamo_records(two)[("n",) + key[1:]]["total"] == {"k": 0}


def test_host_costs_under_a_microsecond_are_shared_too():
    # one launch at eager's 0.5 us, 0.25 us exposed: half of it
    t = gh.host_terms({"launches_per_iter": 1, "host_ms": 0.00025}, {"launches_per_iter": 1, "host_per_launch_us": 0.5,
                                                                    "host_ms": 0.0}, None, False)
    assert t["launches"][0] == pytest.approx(0.00025) and "50% exposed" in t["launches"][1]


def test_a_skipped_cuda_graph_names_the_exposed_share_and_eagers_time():
    d = _dyn()
    d["total"]["cudagraph_skips"] = 1
    # costs 70 (launches and wrapper) + 2.5 + 43 + 47 = 162.5 us, all exposed at 200 us
    t = gh.host_terms({"launches_per_iter": 10, "host_ms": 0.2}, {**CUDA_E, "host_ms": 0.01234}, d, True)
    assert t["cudagraph_skipped"][1].endswith("; the variant's host costs 162 us, its exposed host time 200 us: 100% "
                                              "exposed; less eager's exposed host time 12.3 us")
    assert t["guards"][1].endswith("(median of 2 processes); 100% exposed")


def test_a_long_failed_guard_is_cut_at_100_characters_and_no_skip_count_is_none():
    d = _dyn()
    d["total"]["recompile_guards"] = {"f": "g" * 150 + "  # x"}
    assert gh.host_costs({}, {}, d, False)["recompiles"][1].endswith("; failed guard: " + "g" * 100)
    d = _dyn()
    d["total"].pop("cudagraph_skips", None)   # no count of skipped graphs: none skipped
    c = gh.host_costs({"launches_per_iter": 10}, CUDA_E, d, True)
    assert "cudagraph_skipped" not in c and c["launches"][0] == 50.0
