"""The training loop's own parts (the loss, the optimizer step, zero_grad) as places of their
own (analysis.run.attribution.LOOP, runner.timing.train_iteration's ranges): hand-built
profiles where launches inside the loop's ranges land on "(loss)" / "(optimizer step)" (by
the launching thread's range), real CPU training runs under torch.profiler whose loss and
optimizer-step kernels land there, and the timed loops that open no range."""
import contextlib
import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from conftest import ROOT

from fusionlab.analysis.readers import torch_trace
from fusionlab.analysis.readers.inductor_logs import Graph, Node
from fusionlab.analysis.readers.trace import KERNEL_COLUMNS, RANGE_COLUMNS, Trace
from fusionlab.analysis.report.figures import attribution_icicle as icicle
from fusionlab.analysis.run import attribution as A
from fusionlab.analysis.run import attribution_split as S
from fusionlab.analysis.sweep import attribution as SW
from fusionlab.core import ranges as R
from fusionlab.runner import timing

SOURCES = {R.LOSS: "timing.py:71", R.OPTIMIZER_STEP: "timing.py:77"}


def _trace(ranges, kernels) -> Trace:
    """MEASURE and one ITERATION over 0-1000 (thread 1), ATTRIBUTE over 2000-3000; ranges
    (name, domain, start, end, tid); kernels (name, duration, launch start, tid)."""
    rng = [(R.MEASURE, R.DOMAIN, 0, 1000, 1), (R.ITERATION, R.DOMAIN, 0, 1000, 1),
           (R.ATTRIBUTE, R.DOMAIN, 2000, 3000, 1), *ranges]
    k = pd.DataFrame([(n, ls + 5, ls + 5 + d, t, ls, ls + 2, "cudaLaunchKernel", 7, n) for n, d, ls, t in kernels],
                     columns=KERNEL_COLUMNS)
    return Trace("synthetic", "nsys", "cuda", pd.DataFrame(rng, columns=RANGE_COLUMNS), kernels=k)


# op ranges of the op record's iteration, and the loop's ranges around the loss and the step
RANGES = [("aten::addmm", R.OP_DOMAIN, 2000, 2100, 1), ("aten::mm", R.OP_DOMAIN, 2300, 2350, 2),
          ("aten::mean", R.OP_DOMAIN, 2210, 2250, 1), ("aten::_foreach_add_", R.OP_DOMAIN, 2400, 2500, 1),
          (R.LOSS, R.DOMAIN, 2210, 2260, 1), (R.OPTIMIZER_STEP, R.DOMAIN, 2390, 2510, 1)]
RECORD = {"root": "M", "ops": [
    {"op": "aten::addmm", "phase": "forward", "module": "fc", "source": "m.py:3", "seq": 0, "node": None},
    {"op": "aten::mean", "phase": "forward", "module": None, "source": "", "seq": 1, "node": None},
    {"op": "aten::mm", "phase": "backward", "module": "fc", "source": "m.py:3", "seq": 0, "node": "AddmmBackward0"},
    {"op": "aten::_foreach_add_", "phase": "forward", "module": None, "source": "", "seq": 2, "node": None}]}
# measured iteration: gemm 100 + 30 ns, reduce 10, foreach 50, fill 5 (thread 2); the op
# record's: the same launches, the reduce at the loss range's first ns, the fill on thread 2
# inside the step range's span (not its thread)
KERNELS = [("gemm", 100, 10, 1), ("gemm", 30, 100, 2), ("reduce", 10, 200, 1), ("foreach", 50, 300, 1),
           ("fill", 5, 310, 2),
           ("gemm", 100, 2010, 1), ("gemm", 30, 2310, 2), ("reduce", 10, 2210, 1), ("foreach", 50, 2410, 1),
           ("fill", 5, 2420, 2)]


def _got(rows) -> dict:
    return {(r.module, r.source, r.op, r.phase, r.kernel, r.rule): r.time_us for r in rows.itertuples()}


def test_eager_launches_inside_the_loss_and_step_ranges_land_on_the_loop_parts():
    m = A.measured(_trace(RANGES, KERNELS))
    assert list(m.loop_ranges["name"]) == [R.LOSS, R.OPTIMIZER_STEP]
    rows = A.eager(m, RECORD, SOURCES)
    assert _got(rows) == pytest.approx({
        ("fc", "m.py:3", "aten::addmm", "forward", "gemm", "launch"): 0.1,
        ("fc", "m.py:3", "aten::mm", "backward", "gemm", "launch"): 0.03,
        (A.LOSS, "timing.py:71", "aten::mean", "loss", "reduce", "loop range"): 0.01,
        (A.OPTIMIZER_STEP, "timing.py:77", "aten::_foreach_add_", "step", "foreach", "loop range"): 0.05,
        # launched by thread 2 while thread 1 was in the step range: not the step's
        (A.UNATTRIBUTED, "", "", "", "fill", "outside op ranges"): 0.005})
    assert rows["time_us"].sum() == pytest.approx(m.total_us)
    assert A.coverage(rows) == pytest.approx({"module": 0.13 / 0.195, "source": 0.13 / 0.195, "loop": 0.06 / 0.195})


def test_without_the_loop_ranges_the_loss_and_step_stay_outside_the_model():
    rows = A.eager(A.measured(_trace(RANGES[:4], KERNELS)), RECORD)
    outside = rows[rows["module"] == A.OUTSIDE]
    assert set(outside["kernel"]) == {"reduce", "foreach"} and A.coverage(rows)["loop"] == 0.0


def test_eager_without_an_op_record_still_places_the_loop_parts():
    rows = A.eager(A.measured(_trace(RANGES[4:], KERNELS)), None)
    assert _got(rows) == pytest.approx({
        (A.LOSS, "", "", "loss", "reduce", "loop range"): 0.01,
        (A.OPTIMIZER_STEP, "", "", "step", "foreach", "loop range"): 0.05,
        (A.UNATTRIBUTED, "", "", "", "gemm", "no op record"): 0.13,
        (A.UNATTRIBUTED, "", "", "", "fill", "no op record"): 0.005})


def _graph() -> Graph:
    """A forward graph: an extern mm, a generated kernel, and an extern non-matmul call (a
    library call of class other, which would take an unplaced library kernel by `library`)."""
    post = {"a": Node("a", "placeholder", [], "f32", ("4", "8")), "mm": Node("mm", "mm", ["a", "a"], "f32", ("4", "8")),
            "relu": Node("relu", "relu", ["mm"], "f32", ("4", "8")),
            "srt": Node("srt", "sort", ["relu"], "f32", ("4", "8"))}
    meta = {n: {"module": "L['self'].fc", "source": "m.py:3"} for n in ("mm", "relu", "srt")}
    return Graph("g0", [("extern_kernels.mm:0", ["mm"]), ("triton_poi_fused_relu_0:1", ["relu"]),
                        ("aten.sort:2", ["srt"])], post, {}, {}, kind="forward", meta=meta)


def test_compiled_loop_launches_take_precedence_over_library_and_no_provenance():
    # one iteration: gemm, relu (generated), sort (library), the loss's reduce, the step's
    # foreach and a generated kernel the step's range holds (its provenance keeps it)
    launches = pd.DataFrame({"launch_start": [10, 20, 30, 40, 50, 60], "launch_end": [11, 21, 31, 41, 51, 61],
                             "tid": 1, "duration": [4.0, 1.0, 1.0, 1.0, 3.0, 1.0],
                             "name": ["gemm", "triton_poi_fused_relu_0", "sort_kernel", "reduce", "foreach",
                                      "triton_poi_fused_relu_0"]})
    loop = pd.DataFrame({"name": [R.LOSS, R.OPTIMIZER_STEP], "start": [40, 50], "end": [45, 70], "tid": [1, 1]})
    per_iter = {"gemm": 4.0, "triton_poi_fused_relu_0": 2.0, "sort_kernel": 1.0, "reduce": 1.0, "foreach": 3.0}
    m = A.Measured(per_iter, launches, pd.DataFrame(columns=A.RANGE_FRAME), 1, loop)
    graphs = [_graph()]
    rows, rest, left = A.split_loop(m, SOURCES, S.listed(graphs))
    assert set(rest) == {"gemm", "triton_poi_fused_relu_0", "sort_kernel"} and len(left) == 4
    out = A.finish(rows + S.compiled(rest, graphs, left), m.total_us)
    got = out.groupby(["module", "kernel", "rule"])["time_us"].sum().to_dict()
    assert got == pytest.approx({("fc", "gemm", "sequence"): 4.0, ("fc", "triton_poi_fused_relu_0", "bytes"): 2.0,
                                 ("fc", "sort_kernel", "sequence"): 1.0,
                                 (A.LOSS, "reduce", "loop range"): 1.0, (A.OPTIMIZER_STEP, "foreach", "loop range"): 3.0})
    # without the loop's ranges the order put the step's and the loss's kernels on the
    # graph's one library call of their class (the sort's), wrongly
    plain = A.finish(S.compiled(per_iter, graphs, launches), m.total_us)
    wrong = plain[plain["kernel"].isin(["reduce", "foreach"])]
    assert set(zip(wrong["module"], wrong["op"], wrong["rule"])) == {("fc", "aten::sort", "sequence")}


def test_sweep_coverage_movers_and_icicle_keep_the_loop_apart():
    rows = []
    for variant, times in (("eager", {"a": 10.0, A.OPTIMIZER_STEP: 5.0, A.LOSS: 1.0}),
                           ("compile", {"a": 4.0, A.OPTIMIZER_STEP: 5.0, A.UNATTRIBUTED: 1.0})):
        rows += [{"run": variant, "model": "m", "variant": variant, "batch": 1, "size": "", "mode": "train",
                  "dtype": "bfloat16", "repeat": 0, "backend": "nsys", "device": "cuda", "module": module,
                  "source": "m.py:1" if module == "a" else "", "op": "", "phase": "", "kernel": "k", "time_us": t,
                  "share": None, "rule": "launch"} for module, t in times.items()]
    table = pd.DataFrame(rows)
    cov = SW.coverage(table).set_index("run")
    assert cov.loc["eager", ["module_share", "source_share", "loop_share"]].tolist() == pytest.approx(
        [10 / 16, 10 / 16, 6 / 16])
    assert cov.loc["compile", "loop_share"] == pytest.approx(0.5)
    assert list(SW.movers(table)["module"]) == ["a"]   # the loop's parts are no mover
    # the icicle draws them beside the model, not inside its box
    tree = icicle.tree(table[table["variant"] == "eager"])
    assert tree == {"": 10.0, "a": 10.0, A.OPTIMIZER_STEP: 5.0, A.LOSS: 1.0}
    assert [(p, row, x) for p, row, x, _, _ in icicle.layout(tree)] == [("", 0, 0.0), ("a", 1, 0.0),
                                                                        (A.LOSS, 0, 10.0), (A.OPTIMIZER_STEP, 0, 11.0)]


# the real runs: mlp_small training with SGD on the CPU under torch.profiler; the eager run's
# process counts the loop's ranges it opened and the iterations it ran (RANGE_SPY)
RANGE_SPY = """
import collections, json, sys, torch
from fusionlab.runner import cli, experiment
opened, zero_grads = collections.Counter(), [0]
call = experiment.Ranges.__call__
def spy(self, name):
    opened[name] += 1
    return call(self, name)
experiment.Ranges.__call__ = spy
zg = torch.nn.Module.zero_grad
def counted(self, *a, **k):
    zero_grads[0] += 1
    return zg(self, *a, **k)
torch.nn.Module.zero_grad = counted
rc = cli.main(sys.argv[2:])
json.dump({"opened": opened, "zero_grads": zero_grads[0]}, open(sys.argv[1], "w"))
sys.exit(rc)
"""
ITERS = 2


def _run(tmp, variant: str, spy: bool = False) -> str:
    d = tmp / variant
    d.mkdir()
    args = ["--model", "mlp_small", "--variant", variant, "--mode", "train", "--optimizer", "sgd", "--batch", "2",
            "--warmup", "1", "--warmup-min-s", "0", "--iters", str(ITERS), "--windows", "2", "--device", "cpu", "--profiler", "torch",
            "--trace", str(d / "trace.json"), "--out", str(d / "run.json")]
    cmd = [sys.executable, "-c", RANGE_SPY, str(d / "spy.json")] if spy else [sys.executable, "-m", "fusionlab.runner"]
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp / "inductor_cache"), "PYTHONPATH": ROOT}
    p = subprocess.run(cmd + args, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0 and json.loads((d / "run.json").read_text())["status"] == "ok", p.stderr[-3000:]
    return str(d)


def _check_loop_rows(d: str) -> pd.DataFrame:
    run = json.loads(open(os.path.join(d, "run.json")).read())
    assert set(run["loop_sources"]) == set(R.LOOP)
    assert all(s.startswith(timing.__file__) for s in run["loop_sources"].values())
    rows = A.attribute(os.path.join(d, "run.json"), os.path.join(d, "trace.json"))
    loss, step = rows[rows["module"] == A.LOSS], rows[rows["module"] == A.OPTIMIZER_STEP]
    # the loss's mean and the SGD update's add_ (CPU kernels are their aten ops)
    assert "aten::mean" in set(loss["kernel"]) and set(loss["phase"]) == {"loss"}
    assert set(step["kernel"]) & {"aten::add_", "aten::_foreach_add_"} and set(step["phase"]) == {"step"}
    assert set(loss["source"]) == {run["loop_sources"][R.LOSS]}
    assert set(step["source"]) == {run["loop_sources"][R.OPTIMIZER_STEP]}
    assert set(rows.loc[rows["module"].isin(A.LOOP_MODULES), "rule"]) == {"loop range"}
    lost = rows[rows["module"].isin([A.UNATTRIBUTED, A.OUTSIDE]) & (rows["phase"] != "backward")]
    # nothing of the loss's forward or the step is left unplaced (the loss's backward seed,
    # ones_like, runs in backward(), outside the loss range)
    assert not set(lost["kernel"]) & (set(loss["kernel"]) | set(step["kernel"]))
    assert rows["time_us"].sum() == pytest.approx(A.measured(torch_trace.load(os.path.join(d, "trace.json"))).total_us)
    c = A.coverage(rows)
    assert c["loop"] > 0 and c["module"] + c["loop"] <= 1.0 + 1e-9
    return rows


def test_real_eager_training_run_places_the_loss_and_step_and_times_no_range(tmp_path):
    pytest.importorskip("nvtx")
    d = _run(tmp_path, "eager", spy=True)
    rows = _check_loop_rows(d)
    assert {"aten::mean"} <= set(rows.loc[rows["module"] == A.LOSS, "op"])
    spy = json.loads(open(os.path.join(d, "spy.json")).read())
    run = json.loads(open(os.path.join(d, "run.json")).read())
    # the loop's ranges open in the traced iterations and the op record's only, while the
    # timed loops (warm-up, windows, the guard cost's iteration) ran many more iterations
    assert spy["opened"][R.LOSS] == spy["opened"][R.OPTIMIZER_STEP] == spy["opened"][R.ZERO_GRAD] == ITERS + 1
    assert spy["opened"][R.ITERATION] == ITERS
    timed = run["warmup_iters_run"] + len(run["timing"]["windows_ms"]) * run["timing"]["window_iters"]
    assert timed == 1 + 2 * ITERS and spy["zero_grads"] >= timed + ITERS + 1


@pytest.mark.slow   # a real Inductor compile on the CPU: C++ kernels built, 10-30 s
def test_real_compiled_training_run_places_the_loss_and_step_before_no_provenance(tmp_path):
    pytest.importorskip("nvtx")
    rows = _check_loop_rows(_run(tmp_path, "compile"))
    assert "no provenance" not in set(rows.loc[rows["kernel"].isin(["aten::mean", "aten::add_"]), "rule"])


def test_timed_loops_open_no_range(monkeypatch):
    torch = pytest.importorskip("torch")
    opened = []

    def rng(name):
        opened.append(name)
        return contextlib.nullcontext()

    m = torch.nn.Linear(3, 2)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    x = torch.randn(4, 3)
    timing.train_iteration(torch, m, (x,), m, opt, rng=rng)()
    assert opened == [R.ZERO_GRAD, R.LOSS, R.OPTIMIZER_STEP]
    given = []
    plain = timing.train_iteration
    monkeypatch.setattr(timing, "train_iteration", lambda *a, **k: given.append(k.get("rng")) or plain(*a, **k))
    timing.make_loop(torch, "train", m, (x,), m, opt)(3)
    timing.iteration(torch, "train", m, (x,), m, opt)()
    assert given == [None, None] and opened == [R.ZERO_GRAD, R.LOSS, R.OPTIMIZER_STEP]
    # each loop part's source line is the line that opens its range
    lines = open(timing.__file__).read().splitlines()
    const = {R.ZERO_GRAD: "ZERO_GRAD", R.LOSS: "LOSS", R.OPTIMIZER_STEP: "OPTIMIZER_STEP"}
    for part, where in timing.loop_sources().items():
        path, line = where.rsplit(":", 1)
        assert path == timing.__file__ and f"with rng(R.{const[part]}):" in lines[int(line) - 1]
    assert set(timing.loop_sources()) == set(R.LOOP)
