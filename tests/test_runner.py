"""The runner records every outcome in run.json and never crashes the sweep."""
import json

import pytest
import torch

from fusionlab.core import io
from fusionlab.experiments import registry
from fusionlab.runner import check, cli, experiment, process, record, timing
from fusionlab.experiments.registry import MODELS, VARIANTS, VariantSpec
from fusionlab.runner.timing import per_iteration


def loops(step, ref):
    """The variant's and eager's loops of a check-style step(f, m) (eager: m is ref)."""
    return per_iteration(lambda: step(None, "model")), per_iteration(lambda: step(None, ref))


def go(tmp_path, *extra, model="mlp", variant="eager"):
    out = tmp_path / "run.json"
    rc = cli.main(["--model", model, "--variant", variant, "--batch", "4", "--warmup", "1", "--warmup-min-s", "0",
                   "--iters", "2", "--device", "cpu", "--out", str(out), *extra])
    assert rc == 0
    return json.loads(out.read_text())


@pytest.fixture
def fake_variant():
    added = []

    def add(name, apply, supports=None):
        VARIANTS[name] = VariantSpec(name, apply, "test", supports or (lambda m, d, mode: None))
        added.append(name)
    yield add
    for n in added:
        del VARIANTS[n]


def test_registry_one_place():
    assert {"pointwise_heavy", "matmul_heavy", "mlp"} <= set(registry.MODEL_NAMES)
    assert {"eager", "compile"} <= set(registry.VARIANT_NAMES)


def _in_float64(model, inputs, opts):
    """The model computed in float64 on its own copy, its float outputs cast to float32 (the
    runs' dtype): a variant that differs from eager by rounding only."""
    import copy
    m64 = copy.deepcopy(model).double()

    def run(*xs):
        out = m64(*[x.double() if torch.is_tensor(x) and x.is_floating_point() else x for x in xs])
        return tuple(o.float() for o in out) if isinstance(out, tuple) else out.float()
    return run


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_model_builds_and_checks_on_cpu(tmp_path, name, fake_variant):
    # the variant (float64, cast back) is not eager: the check sees its rounding error,
    # within the tolerance
    fake_variant("in_float64", _in_float64)
    r = go(tmp_path, model=name, variant="in_float64")
    assert r["status"] == "ok", r.get("reason")
    assert r["correctness"]["passed"] and 0 < r["correctness"]["max_abs_err"] < 1e-3
    assert r["timing"]["wall_time_per_iter_ms"] > 0


def test_train_mode(tmp_path):
    r = go(tmp_path, "--mode", "train")
    assert r["status"] == "ok" and r["mode"] == "train"


def test_wrong_variant_is_incorrect_and_not_timed(tmp_path, fake_variant):
    fake_variant("wrong", lambda model, inputs, opts: (lambda *x: model(*x) * 1.01))
    r = go(tmp_path, variant="wrong")
    assert r["status"] == "incorrect" and "not allclose" in r["reason"]
    assert "timing" not in r


def test_raising_variant_is_error(tmp_path, fake_variant):
    def boom(*a):
        raise RuntimeError("kernel exploded")
    fake_variant("boom", lambda model, inputs, opts: boom)
    r = go(tmp_path, variant="boom")
    assert r["status"] == "error" and "kernel exploded" in r["reason"]
    assert "Traceback" in r["traceback"]


def test_oom_variant_is_oom(tmp_path, fake_variant):
    def oom(*a):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 80.00 GiB")
    fake_variant("oom", lambda model, inputs, opts: oom)
    r = go(tmp_path, variant="oom")
    assert r["status"] == "oom" and "out of memory" in r["reason"]


def test_unsupported_pair(tmp_path, fake_variant):
    fake_variant("gpuonly", lambda m, i, o: m, supports=lambda m, d, mode: "needs a GPU" if d == "cpu" else None)
    r = go(tmp_path, variant="gpuonly")
    assert r["status"] == "unsupported" and r["reason"] == "needs a GPU"


def test_cuda_without_gpu_is_unsupported(tmp_path):
    out = tmp_path / "run.json"
    cli.main(["--model", "mlp", "--variant", "eager", "--batch", "2", "--device", "cuda", "--out", str(out)])
    r = json.loads(out.read_text())
    assert r["status"] == "unsupported" and "no GPU" in r["reason"]


def test_bad_arguments_exit_nonzero(tmp_path):
    with pytest.raises(SystemExit):
        cli.main(["--model", "nope", "--variant", "eager", "--batch", "2", "--out", str(tmp_path / "r.json")])
    with pytest.raises(SystemExit):
        cli.main(["--model", "mlp", "--variant", "eager", "--batch", "0", "--out", str(tmp_path / "r.json")])


def test_atomic_json_leaves_no_temp(tmp_path):
    p = tmp_path / "a" / "x.json"
    io.write_json_atomic(str(p), {"a": 1})
    assert json.loads(p.read_text()) == {"a": 1}
    assert [f.name for f in p.parent.iterdir()] == ["x.json"]


def test_fp64_check_is_the_inductor_harness_fallback():
    truth = torch.linspace(-3, 3, 1000, dtype=torch.float64)
    eager = (truth + 1e-3 * torch.sin(truth * 7)).float()    # eager's own rounding error
    good = (truth + 1.5e-3 * torch.cos(truth * 5)).float()   # as far from the truth, not from eager
    bad = (truth + 1e-2).float()
    assert not check.compare(torch, good, eager, "float32")["passed"]
    ok = check.fp64_check(torch, good, eager, lambda: truth, "float32")
    assert ok["passed"] and ok["variant_rmse"] <= 2 * ok["eager_rmse"]
    assert not check.fp64_check(torch, bad, eager, lambda: truth, "float32")["passed"]


def test_crash_leaves_a_failed_record(tmp_path):
    # the process is killed hard in the middle of the run (FUSIONLAB_INJECT_FAULT=...=abort)
    p, r = run_with_fault(tmp_path, "abort")
    assert p.returncode != 0
    assert r["status"] == "error" and "died" in r["reason"]


def run_with_fault(tmp_path, fault, *extra):
    import os
    import subprocess
    import sys
    out = tmp_path / "run.json"
    p = subprocess.run([sys.executable, "-m", "fusionlab.runner", "--model", "mlp", "--variant", "eager",
                        "--batch", "4", "--device", "cpu", "--out", str(out), *extra],
                       env={**os.environ, "FUSIONLAB_INJECT_FAULT": f"mlp:eager:4={fault}"},
                       capture_output=True, text=True, timeout=120)
    return p, json.loads(out.read_text())


@pytest.mark.slow
def test_timeout_is_recorded_with_its_phase(tmp_path):
    # a run that never finishes (FUSIONLAB_INJECT_FAULT=...=hang, in the check step) is
    # stopped at --timeout and recorded as such, with the phase it was in. The limit counts
    # from the start (torch's import too: on a loaded 2-core machine 2 s ended in "start";
    # the check phase began 2-6 s in)
    p, r = run_with_fault(tmp_path, "hang", "--timeout", "15")
    assert p.returncode == 3
    assert r["status"] == "timeout"
    assert r["reason"] == "did not finish in 15 s (in its check phase) and was stopped"
    assert "phase" not in r and r["model"] == "mlp" and r["versions"]["torch"]
    assert "timeout" in p.stderr
    assert r["process_end_unix"] - r["process_start_unix"] >= 15


def test_a_timed_out_process_records_its_lock_span_up_to_its_stop():
    held = {"gpu": "0", "wait_s": 1.0, "held_unix": [10.0, None]}
    assert process.timed_out_span(held, 25.0) == {
        "process_start_unix": process.IMPORTED, "process_end_unix": 25.0,
        "gpu_slot": {"gpu": "0", "wait_s": 1.0, "held_unix": [10.0, 25.0]}}
    assert held["held_unix"] == [10.0, None]   # the live record is left alone
    # before the lock (no slot, or one not yet held) and after its release: no span made up
    assert "gpu_slot" not in process.timed_out_span(None, 5.0)
    assert "gpu_slot" not in process.timed_out_span({"gpu": "0", "held_unix": [1.0, 2.0]}, 5.0)


def test_timeout_not_reached_leaves_the_run_alone(tmp_path):
    p, r = run_with_fault(tmp_path, "none-such", "--timeout", "600")
    assert p.returncode == 0 and r["status"] == "error" and "injected fault" in r["reason"]
    assert "phase" not in r


def test_fp64_reference_with_optimizer_step(tmp_path, fake_variant):
    # a variant off by more than allclose allows goes to the float64 test, also when the
    # train step includes an optimizer step (the reference uses the parameters as built)
    fake_variant("drift", lambda model, inputs, opts: (lambda *x: model(*x) * (1 + 3e-3)))
    r = go(tmp_path, "--mode", "train", "--optimizer", "sgd", variant="drift")
    assert r["status"] == "incorrect" and r["correctness"]["fp64"]["passed"] is False


def test_tolerance_key_tf32_where_the_gpu_runs_fp32_in_tf32():
    import torch
    from fusionlab.runner.check import TOLERANCE, tolerance_key
    conv = torch.nn.Sequential(torch.nn.Conv2d(1, 1, 3), torch.nn.ReLU())
    lin = torch.nn.Linear(2, 2)
    cudnn, matmul = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = True, False
        assert tolerance_key(torch, conv, "cuda", "float32") == "tf32"
        assert tolerance_key(torch, lin, "cuda", "float32") == "float32"
        assert tolerance_key(torch, conv, "cpu", "float32") == "float32"
        assert tolerance_key(torch, conv, "cuda", "bfloat16") == "bfloat16"
        torch.backends.cudnn.allow_tf32 = False
        assert tolerance_key(torch, conv, "cuda", "float32") == "float32"
        torch.backends.cuda.matmul.allow_tf32 = True
        assert tolerance_key(torch, lin, "cuda", "float32") == "tf32"
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = cudnn, matmul
    assert TOLERANCE["tf32"] == (1e-3, 5e-3)


def test_timing_windows_are_untraced_and_recorded(tmp_path):
    r = go(tmp_path, "--windows", "3")
    t = r["timing"]
    assert r["status"] == "ok" and r["timing_windows"] == 3 and r["cpus"] is None
    assert len(t["windows_ms"]) == 3 and t["window_iters"] == 2 and t["windows_context"] == "untraced"
    assert t["wall_time_per_iter_ms"] == t["untraced_wall_time_per_iter_ms"] == sorted(t["windows_ms"])[1]
    assert t["traced_wall_time_per_iter_ms"] is None and t["capture_range"] is False
    # the host probe: before the first window and after each, outside them
    assert len(t["host_probe_ms"]) == 4 and all(p > 0 for p in t["host_probe_ms"])
    assert t["host_probe_median_ms"] == pytest.approx(sorted(t["host_probe_ms"])[1:3][0] / 2 + sorted(t["host_probe_ms"])[1:3][1] / 2)


def test_paired_eager_times_eager_between_the_variant_windows(tmp_path):
    r = go(tmp_path, "--windows", "4", "--paired-eager", "--paired-ci", "0", variant="compile")
    t = r["timing"]
    assert r["status"] == "ok" and r["paired_eager"] is True and "paired_eager_error" not in r
    assert len(t["windows_ms"]) == len(t["eager_windows_ms"]) == 4 and len(t["host_probe_ms"]) == 5
    assert t["paired_stop"] == "fixed" and len(t["paired_speedup_ci"]) == 2
    med = lambda xs: (sorted(xs)[1] + sorted(xs)[2]) / 2    # noqa: E731
    assert t["paired_speedup"] == pytest.approx(med(t["eager_windows_ms"]) / med(t["windows_ms"]))
    assert t["wall_time_per_iter_ms"] == pytest.approx(sorted(t["windows_ms"])[1] / 2 + sorted(t["windows_ms"])[2] / 2)
    # eager itself, and a run without the flag, are not paired
    for extra, variant in ((["--paired-eager"], "eager"), ([], "compile")):
        t = go(tmp_path, "--windows", "2", *extra, variant=variant)["timing"]
        assert t["eager_windows_ms"] is None and t["paired_speedup"] is None


def test_paired_windows_alternate_their_order():
    events = []
    out, eager = timing.time_paired_windows(per_iteration(lambda: events.append("v")),
                                         per_iteration(lambda: events.append("e")),
                                         lambda: None, 3, 1, lambda: events.append("p") or 1.0, [])
    assert len(out) == len(eager) == 3
    # a probe before the first window and after each of the variant's
    assert "".join(events) == "p" + "vpe" + "evp" + "vpe"
    assert timing.paired_speedup([1.0, 2.0, 4.0], [3.0, 4.0, 8.0]) == 2.0
    assert timing.paired_speedup([], []) is None


def test_paired_eager_out_of_memory_times_the_variant_alone():
    import argparse
    args = argparse.Namespace(warmup=1, warmup_min_s=0.0, windows=3, iters=2)
    ref = object()

    def step(f, m):
        if m is ref:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    rec, probe_ms = {}, [9.0]
    windows, eager, peak = experiment.paired_timing(torch, args, "cpu", *loops(step, ref), lambda: None,
                                             lambda: 1.0, probe_ms, rec)
    assert len(windows) == 3 and eager is None and peak is None and probe_ms == [1.0] * 4
    assert rec["paired_eager_error"].startswith("out of memory with eager beside the variant: CUDA out of memory")


def test_paired_eager_out_of_memory_frees_eager_before_the_variant_runs_alone():
    import argparse
    import gc
    import weakref
    args = argparse.Namespace(warmup=1, warmup_min_s=0.0, windows=2, iters=2)
    ref, held, alive = object(), {}, []

    def eager_forward():
        activation = torch.ones(1000)            # held by this frame's traceback while handled
        held["w"] = weakref.ref(activation)
        raise RuntimeError("CUDA error: out of memory")    # an allocation failure outside the allocator

    def step(f, m):
        if m is ref:
            eager_forward()
        else:
            alive.append(held.get("w") is not None and held["w"]() is not None)
    rec = {}
    experiment.paired_timing(torch, args, "cpu", *loops(step, ref), lambda: None, lambda: 1.0, [], rec)
    assert alive and not any(alive) and gc.isenabled() and "paired_eager_error" in rec
    # any other error is the run's own: it propagates

    def broken(f, m):
        raise RuntimeError("shape mismatch")
    with pytest.raises(RuntimeError, match="shape mismatch"):
        experiment.paired_timing(torch, args, "cpu", *loops(broken, ref), lambda: None, lambda: 1.0, [], {})


def test_the_host_probe_runs_between_windows_never_inside():
    from fusionlab.jobs import host_probe
    events, probe_ms = [], []
    out = timing.time_windows(per_iteration(lambda: events.append("step")), lambda: events.append("sync"), 2, 3,
                           lambda: events.append("probe") or 0.5, probe_ms)
    assert len(out) == 2 and probe_ms == [0.5, 0.5, 0.5]
    # probe, then each window (sync, 3 steps, sync) followed by a probe
    assert events == ["probe"] + (["sync"] + ["step"] * 3 + ["sync", "probe"]) * 2
    events.clear()
    out = timing.time_windows(per_iteration(lambda: events.append("step")), lambda: events.append("sync"), 2, 1)
    assert len(out) == 2 and events == ["sync", "step", "sync"] * 2 and probe_ms == [0.5] * 3   # no probe
    probe = host_probe.make_probe(torch, passes=3)
    assert probe() > 0


def test_windows_context_names_what_ran_around_them():
    assert record.windows_context("none", False) == "untraced"
    assert record.windows_context("torch", False) == "untraced"       # the profiler starts after
    assert record.windows_context("nsys", True) == "nsys-injected"
    assert record.windows_context("nsys", False) == "nsys-traced"


def test_pin_cpus(tmp_path):
    import os
    before = os.sched_getaffinity(0)
    try:
        assert process.pin_cpus("none", "cuda") is None
        assert process.pin_cpus("auto", "cpu") is None                   # CPU kernels use every core
        one = sorted(before)[0]
        assert process.pin_cpus(str(one), "cuda") == [one] and os.sched_getaffinity(0) == {one}
    finally:
        os.sched_setaffinity(0, before)


def test_bad_pin_and_windows_arguments(tmp_path):
    for bad in (["--pin-cpus", "two"], ["--windows", "-1"]):
        with pytest.raises(SystemExit):
            cli.main(["--model", "mlp", "--variant", "eager", "--batch", "2", "--out", str(tmp_path / "r.json"), *bad])


def test_size_builds_the_model_at_that_size(tmp_path):
    """--size sets the model's build arguments; run.json records the label and every axis
    (defaults included); a value equal to the default drops out of the label."""
    r = go(tmp_path, "--size", "num_layers2-dim16", model="deep_gelu_mlp")
    assert r["status"] == "ok" and r["size"] == "dim16-num_layers2"
    assert r["sizes"] == {"dim": 16, "num_layers": 2}
    assert go(tmp_path, "--size", "num_layers4", model="deep_gelu_mlp")["size"] == "default"


@pytest.mark.parametrize("size, words", [("depth3", "no size axis 'depth'"), ("dim1", "outside 16..65536")])
def test_bad_size_exits_with_the_reason(tmp_path, capsys, size, words):
    with pytest.raises(SystemExit) as e:
        cli.main(["--model", "deep_gelu_mlp", "--variant", "eager", "--batch", "4", "--size", size,
                  "--device", "cpu", "--out", str(tmp_path / "run.json")])
    assert e.value.code == 2 and words in capsys.readouterr().err


def test_a_compile_variant_does_its_imports_before_the_lock(monkeypatch):
    # VariantSpec.prepare runs before the GPU lock; for torch.compile it leaves nothing of
    # the backend's imports to the build (in the lock): torch.compile then imports no
    # module (without prepare it imports over a thousand, torch._inductor.compile_fx among
    # them). The imports checked in a fresh process, without the compile workers' pool
    # (each worker imports torch: seconds of a 2-core machine); the pool's start below.
    code = ("import sys; from fusionlab.experiments.registry import VARIANTS; "
            "VARIANTS['compile_max_autotune'].prepare({'compile_workers': False}); import torch; "
            "before = set(sys.modules); torch.compile(torch.nn.Linear(2, 2), mode='max-autotune'); "
            "print('torch._inductor.compile_fx' in sys.modules, len(set(sys.modules) - before))")
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    loaded, imported = p.stdout.split()
    assert loaded == "True" and imported == "0", p.stderr[-2000:]
    # Inductor's compile workers started too, unless the run will find its graphs cached
    from torch._inductor.async_compile import AsyncCompile
    started = []
    monkeypatch.setattr(AsyncCompile, "warm_pool", classmethod(lambda cls: started.append(cls)))
    VARIANTS["compile_max_autotune"].prepare({})
    assert started == [AsyncCompile]
    VARIANTS["compile"].prepare({"compile_workers": False})
    assert started == [AsyncCompile]
    assert VARIANTS["eager"].prepare({}) is None   # a variant without one: nothing to do


def test_the_chunked_check_equals_the_whole_tensor_one(monkeypatch):
    # the check runs chunk by chunk in float64 on the tensors' device: the same verdicts and
    # errors as one whole-tensor float64 computation (oracle below), over chunk edges
    monkeypatch.setattr(check, "CHECK_CHUNK", 7)
    g = torch.Generator().manual_seed(0)
    ref = torch.randn(5, 9, generator=g) * 3
    out = ref + 1e-6 * torch.randn(5, 9, generator=g)
    out[4, 8] += 0.5                                        # the largest error, in the last chunk
    r = check.compare(torch, out, ref, "float32")
    o64, r64 = out.double(), ref.double()
    assert r["max_abs_err"] == (o64 - r64).abs().max().item()
    assert r["rel_l2_err"] == pytest.approx(((o64 - r64).norm() / r64.norm()).item(), rel=1e-12)
    scale = max(1.0, r64.abs().max().item())
    assert r["passed"] == bool(torch.allclose(o64, r64, rtol=r["rtol"], atol=r["atol"] * scale))
    assert r["passed"] is False
    assert check.compare(torch, ref.clone(), ref, "float32")["passed"] is True
    bad = ref.clone()
    bad[3, 3] = float("nan")
    assert check.compare(torch, bad, ref, "float32") == {"passed": False,
                                                       "reason": "non-finite values where eager has none"}
    truth = ref.double()
    assert check._rmse(out, truth) == pytest.approx((o64 - truth).pow(2).mean().sqrt().item(), rel=1e-12)
    assert check.compare(torch, torch.empty(0), torch.empty(0), "float32")["passed"] is True


def test_a_hanging_prepare_is_stopped_and_recorded(tmp_path):
    # a variant's prepare (before the GPU lock) that never returns, e.g. an extension build
    # waiting on a lock a killed build left: stopped by the run's time limit, recorded
    import os
    import subprocess
    import sys
    out = tmp_path / "run.json"
    code = f"""
import time
from fusionlab.experiments import registry
from fusionlab.jobs import slots
from fusionlab.runner import cli, process, record
registry.VARIANTS["eager"] = registry.VARIANTS["eager"].__class__(
    "eager", registry.VARIANTS["eager"].apply, "", prepare=lambda options: time.sleep(600))
args = cli.parse_args(["--model", "mlp", "--variant", "eager", "--batch", "2", "--timeout", "2",
                       "--out", {str(out)!r}])
rec = record.base_record(args)
with process.hold_slot(slots.Slot("0", ()), process.Phases(), args, rec):
    pass
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "TMPDIR": str(tmp_path)})
    assert p.returncode == 3, p.stderr[-2000:]
    r = json.loads(out.read_text())
    assert r["status"] == "timeout" and "(in its prepare phase)" in r["reason"]


class FakeClock:
    """timing's clock, advanced only by the steps of a test's loop."""
    def __init__(self):
        self.now = 0.0

    def perf_counter(self):
        return self.now


def test_warm_up_runs_its_iterations_and_at_least_its_time(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(timing, "time", clock)
    calls, syncs = [], []

    @per_iteration
    def step():
        calls.append(clock.now)
        clock.now += 0.002

    # 1 iteration, then 9 (20 ms in all, 18 ms after the first); the 60 ms floor adds whole
    # chunks of 10, each ended by a synchronize, until 60 ms have passed since the first
    n = timing.warm_up(step, lambda: syncs.append(len(calls)), 10, 0.06)
    assert n == len(calls) == 40 and syncs == [1, 10, 20, 30, 40, 40]
    calls.clear()
    assert timing.warm_up(step, lambda: None, 7, 0.0) == 7 == len(calls)   # no floor: the iterations only
    calls.clear()
    assert timing.warm_up(step, lambda: None, 0, 0.0) == 0 == len(calls)   # neither: nothing runs
    calls.clear()
    assert timing.warm_up(step, lambda: None, 0, 0.005) == 4 == len(calls)   # a floor alone: chunks of 1


@pytest.mark.parametrize("bad", ["-1", "inf", "nan"])
def test_warmup_min_s_is_checked(bad):
    with pytest.raises(SystemExit):
        cli.parse_args(["--model", "mlp", "--variant", "eager", "--batch", "2", "--out", "x.json", "--warmup-min-s", bad])
    assert cli.parse_args(["--model", "mlp", "--variant", "eager", "--batch", "2", "--out", "x.json"]).warmup_min_s == 0.1
