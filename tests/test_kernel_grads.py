"""The hand-written kernels' backward (train mode).

On the CPU: the backward formulas (kernels/reference.py, the math the Triton and CUDA
backward kernels run) by torch.autograd.gradcheck in float64 and against autograd of
eager's forward; and the Triton forward and backward kernels themselves through Triton's
interpreter (TRITON_INTERPRET=1, fp32 against float64; skipped where triton is not installed),
the backward with each launch knob of benchmarks/kernels_backward_tune.py (every combination
of them with FUSIONLAB_INTERPRETER_FULL=1).
On the GPU: the Triton and CUDA autograd.Functions' input and parameter gradients against
eager's (allclose by dtype, runner.check.compare), and the runner's train step (outputs
and every parameter's gradient) for the variants triton_kernel and cuda_kernel.
"""
import copy
import importlib.util
import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch

from fusionlab.core import axes
from fusionlab.runner import check as run_check, cli
from fusionlab.experiments.kernels import aten_ops, load, reference
from fusionlab.experiments.kernels.functions import GELU_ERF, GELU_TANH, RELU
from fusionlab.experiments.registry import MODELS, VARIANTS, Unsupported

GPU = pytest.mark.skipif(not torch.cuda.is_available(),
                         reason="the Triton and CUDA kernels' gradients need a GPU (the formulas are checked on CPU)")
OPS = {"gelu_tanh": GELU_TANH, "gelu_erf": GELU_ERF, "relu": RELU}
EAGER = {"gelu_tanh": lambda v: torch.nn.functional.gelu(v, approximate="tanh"),
         "gelu_erf": lambda v: torch.nn.functional.gelu(v, approximate="none"), "relu": torch.relu}


def leaf(*shape, dtype=torch.float64, device="cpu", scale=1.0):
    return (torch.randn(*shape, dtype=dtype, device=device) * scale).requires_grad_()


def away_from_zero(t, eps=1e-3):
    # ReLU's derivative jumps at 0, where finite differences are meaningless
    with torch.no_grad():
        t.masked_fill_(t.abs() < eps, 0.5)
    return t


# ---- the formulas, on the CPU ---------------------------------------------------------------

@pytest.mark.parametrize("op, y_kind", [(op, y) for op in OPS for y in ("none", "bias", "same")
                                         if not (op == "relu" and y == "none")])   # add+ReLU always has a y
def test_reference_backward_passes_gradcheck(op, y_kind):
    torch.manual_seed(0)
    x = away_from_zero(leaf(6, 5, scale=2.0))
    y = {"none": None, "bias": leaf(5, scale=0.1), "same": leaf(6, 5, scale=0.1)}[y_kind]
    assert torch.autograd.gradcheck(reference.Pointwise.apply, (x, y, OPS[op]), eps=1e-6, atol=1e-7, rtol=1e-6)


@pytest.mark.parametrize("op", OPS)
def test_reference_backward_is_autograd_of_the_forward(op):
    # the hand-written derivative against autograd of eager's own op (F.gelu, relu), far
    # out into the tails (|v| up to ~12)
    torch.manual_seed(1)
    x, b = leaf(64, 33, scale=4.0), leaf(33)
    g = torch.randn(64, 33, dtype=torch.float64)
    want = torch.autograd.grad(EAGER[op](x + b), (x, b), g)
    got = torch.autograd.grad(reference.Pointwise.apply(x, b, OPS[op]), (x, b), g)
    for w, o in zip(want, got):
        torch.testing.assert_close(o, w, rtol=1e-12, atol=1e-12)
    # the forms the kernels compute in agree with eager's forward too
    torch.testing.assert_close(reference.pointwise_forward(x, b, OPS[op]), EAGER[op](x + b), rtol=1e-12, atol=1e-12)


def test_reference_lstm_backward():
    torch.manual_seed(2)
    B, H = 5, 3
    ins = (leaf(B, 4 * H), leaf(B, 4 * H), leaf(4 * H), leaf(B, H))
    assert torch.autograd.gradcheck(reference.LstmGates.apply, ins, eps=1e-6, atol=1e-7, rtol=1e-6)
    gs = (torch.randn(B, H, dtype=torch.float64), torch.randn(B, H, dtype=torch.float64))
    want = torch.autograd.grad(aten_ops.lstm_gates(*ins), ins, gs)
    got = torch.autograd.grad(reference.LstmGates.apply(*ins), ins, gs)
    for w, o in zip(want, got):
        torch.testing.assert_close(o, w, rtol=1e-12, atol=1e-12)


def test_reference_bias_gradient_of_a_3d_input():
    # a bias broadcast over every leading axis: its gradient is the sum over all of them
    torch.manual_seed(3)
    x, b = leaf(2, 3, 4), leaf(4)
    assert torch.autograd.gradcheck(reference.Pointwise.apply, (x, b, GELU_ERF), eps=1e-6, atol=1e-7)


def test_autograd_function_only_where_autograd_records():
    x = torch.randn(4, 4, requires_grad=True)
    assert type(reference.gelu(x).grad_fn).__name__ == "ReferencePointwiseBackward"
    with torch.no_grad():
        assert reference.gelu(x).grad_fn is None
    assert reference.gelu(x.detach()).grad_fn is None


# ---- the Triton kernels through Triton's interpreter, on the CPU ----------------------------

INTERPRET_SHAPES = [(1, 1), (3, 5), (7, 1000), (37, 300), (300, 20)]
# the whole grid of launch knobs, and the larger knob shapes: FUSIONLAB_INTERPRETER_FULL=1
# (the slow tier's test_every_knob_combination_in_the_interpreter sets it); the fast tier
# runs each knob once, on the small shapes
FULL = os.environ.get("FUSIONLAB_INTERPRETER_FULL") == "1"
RTOL, ATOL = 1e-4, 1e-5     # an fp32 kernel against the float64 reference


def in_float64(ts):
    """Float64 leaves with the values of `ts` (the reference's inputs)."""
    return tuple(t.detach().double().requires_grad_(t.requires_grad) for t in ts)


def far_from(name, got, want) -> list[str]:
    """The fp32 results in `got` that are not allclose to the float64 ones in `want`."""
    return [f"{name}[{i}]: max abs err {(o.double() - w).abs().max().item():.3g}"
            for i, (o, w) in enumerate(zip(got, want))
            if o.dtype != torch.float32 or not torch.allclose(o.double(), w, rtol=RTOL, atol=ATOL)]


def interpreted_checks() -> list[str]:
    """Run in a process with TRITON_INTERPRET=1: the Triton autograd.Functions on CPU fp32
    tensors against eager's outputs and gradients computed in float64. Returns the failures."""
    from fusionlab.experiments.kernels import triton_ops as T
    assert T.INTERPRET
    torch.manual_seed(0)
    bad = []

    def check(name, f, ref, ins, gs):
        out = f(*ins)
        out = out if isinstance(out, tuple) else (out,)
        ins64, gs64 = in_float64(ins), tuple(g.double() for g in gs)
        want = ref(*ins64)
        want = want if isinstance(want, tuple) else (want,)
        bad.extend(far_from(f"{name} out", out, want))
        bad.extend(far_from(f"{name} grad", torch.autograd.grad(out, ins, gs), torch.autograd.grad(want, ins64, gs64)))

    for shape in INTERPRET_SHAPES:
        x, b, y = leaf(*shape, dtype=torch.float32), leaf(shape[-1], dtype=torch.float32), \
            leaf(*shape, dtype=torch.float32)
        g = (torch.randn(*shape),)
        for a in ("tanh", "none"):
            check(f"gelu {a} {shape}", lambda x, a=a: T.gelu(x, a), lambda x, a=a: aten_ops.gelu(x, a), (x,), g)
            check(f"bias_gelu {a} {shape}", lambda x, b, a=a: T.bias_gelu(x, b, a),
                  lambda x, b, a=a: aten_ops.bias_gelu(x, b, a), (x, b), g)
        check(f"add_relu bias {shape}", T.add_relu, aten_ops.add_relu, (x, b), g)
        check(f"add_relu same {shape}", T.add_relu, aten_ops.add_relu, (x, y), g)
    for B, H in [(1, 1), (3, 7), (17, 96), (70, 40)]:
        ins = (leaf(B, 4 * H, dtype=torch.float32), leaf(B, 4 * H, dtype=torch.float32),
               leaf(4 * H, dtype=torch.float32), leaf(B, H, dtype=torch.float32))
        check(f"lstm_gates {B}x{H}", T.lstm_gates, aten_ops.lstm_gates, ins, (torch.randn(B, H), torch.randn(B, H)))
    return bad


def interpret(*args, full: bool = FULL) -> dict:
    """Run this file with TRITON_INTERPRET=1 (and args) in a process; its failures
    ({"kernels": [...], "knobs": [...]}). full: the larger knob shapes too."""
    triton = pytest.importorskip("triton", reason="Triton is not installed (pip install triton: its interpreter runs on CPU)")
    if tuple(int(p) for p in triton.__version__.split(".")[:2]) < (3, 7):
        # its scalar arguments are 1-element arrays there, and range() over one fails
        pytest.skip(f"Triton {triton.__version__}'s interpreter cannot loop to a runtime bound (3.7 can)")
    env = {**os.environ, "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": "",
           "FUSIONLAB_INTERPRETER_FULL": "1" if full else "0"}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, os.path.abspath(__file__), *args], env=env, capture_output=True, text=True,
                       timeout=600, cwd=root)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def in_interpreter() -> dict:
    """One interpreter process for the kernels' own checks and the launch knobs' grid
    (each process imports torch and Triton: seconds of a 2-core machine)."""
    return interpret("grid", *KNOB_KERNELS)


def test_triton_kernels_in_the_interpreter(in_interpreter):
    assert in_interpreter["kernels"] == []


def tune_grid():
    """benchmarks/kernels_backward_tune.py as a module (its grids of launch knobs)."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks",
                        "kernels_backward_tune.py")
    spec = importlib.util.spec_from_file_location("kernels_backward_tune", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# a row narrower than a column block; with FULL also a column tail, several row tiles and groups
KNOB_SHAPES = {"rowwise": [(37, 20)] + [(150, 200)] * FULL, "lstm_gates": [(9, 3)] + [(70, 40)] * FULL}


def knob_checks(kernel: str, scope: str) -> list[str]:
    """Run with TRITON_INTERPRET=1: the Triton backward of `kernel` (bias_gelu, add_relu,
    lstm_gates) called as kernels_backward_tune.py calls it, with each of its knob
    combinations (scope "grid": each geometry, and each variant on the default geometry;
    "all": every geometry with every variant), on CPU fp32 tensors against eager's
    gradients computed in float64. Returns the failures."""
    tune = tune_grid()
    torch.manual_seed(0)
    geo, var = tune.geometry(kernel), tune.variants(kernel)
    combos = (tune.all_combinations(kernel) if scope == "all"
              else geo + [{**geo[0], **v} for v in var])
    bad = []
    for shape in KNOB_SHAPES["lstm_gates" if kernel == "lstm_gates" else "rowwise"]:
        if kernel == "lstm_gates":
            B, H = shape
            ins = (leaf(B, 4 * H, dtype=torch.float32), leaf(B, 4 * H, dtype=torch.float32),
                   leaf(4 * H, dtype=torch.float32), leaf(B, H, dtype=torch.float32))
            gs = (torch.randn(B, H), torch.randn(B, H))
        else:
            ins = (leaf(*shape, dtype=torch.float32), leaf(shape[-1], dtype=torch.float32))
            gs = (torch.randn(*shape),)
        ins64 = in_float64(ins)
        out64 = (aten_ops.lstm_gates(*ins64) if kernel == "lstm_gates"
                 else (aten_ops.bias_gelu(*ins64, "none") if kernel == "bias_gelu" else aten_ops.add_relu(*ins64),))
        want = torch.autograd.grad(out64, ins64, tuple(g.double() for g in gs))
        ts = tuple(t.detach() for t in ins) + gs if kernel == "lstm_gates" else (ins[0].detach(), ins[1].detach(), gs[0])
        for knobs in combos:
            try:
                got = tune.backward_call(kernel, ts, knobs)()
            except Exception as e:
                bad.append(f"{kernel} {shape} {knobs}: {type(e).__name__}: {e}")
                continue
            bad.extend(far_from(f"{kernel} {shape} {knobs} grad", got, want))
    return bad


KNOB_KERNELS = ["bias_gelu", "add_relu", "lstm_gates"]


def test_backward_knobs_in_the_interpreter(in_interpreter):
    # each launch knob kernels_backward_tune.py may time gives eager's gradients
    assert in_interpreter["knobs"] == []


@pytest.mark.slow
@pytest.mark.parametrize("kernel", KNOB_KERNELS)
def test_every_knob_combination_in_the_interpreter(kernel):
    """Every combination of the launch knobs, on the larger shapes too (minutes: the slow tier)."""
    assert interpret("all", kernel, full=True)["knobs"] == []


# ---- the Triton and CUDA kernels on the GPU -------------------------------------------------

IMPLS = ["triton", "cuda"]
DTYPES = list(axes.TENSOR_DTYPES)
# tails that fill no vector or block, a wide row, and many short rows (several row groups)
SHAPES = [(1, 1), (7, 1000), (33, 16384), (4099, 64)]


def grads_match(got, want, dtype):
    for i, (o, w) in enumerate(zip(got, want)):
        assert o.dtype == w.dtype and o.shape == w.shape, (i, o.dtype, w.dtype, o.shape, w.shape)
        res = run_check.compare(torch, o, w, dtype)
        assert res["passed"], (i, res)


def cuda_leaf(*shape, dtype):
    return torch.randn(*shape, device="cuda", dtype=getattr(torch, dtype)).requires_grad_()


@GPU
@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_pointwise_gradients_match_eager(impl, dtype, shape):
    torch.manual_seed(0)
    k = load(impl)
    x, b, y = cuda_leaf(*shape, dtype=dtype), cuda_leaf(shape[-1], dtype=dtype), cuda_leaf(*shape, dtype=dtype)
    g = torch.randn(*shape, device="cuda", dtype=x.dtype)
    cases = [(lambda a: k.gelu(x, a), lambda a: aten_ops.gelu(x, a), (x,)),
             (lambda a: k.bias_gelu(x, b, a), lambda a: aten_ops.bias_gelu(x, b, a), (x, b))]
    for approx in ("tanh", "none"):
        for f, ref, ins in cases:
            out, want = f(approx), ref(approx)
            grads_match([out], [want], dtype)
            grads_match(torch.autograd.grad(out, ins, g), torch.autograd.grad(want, ins, g), dtype)
    for other in (b, y):
        out, want = k.add_relu(x, other), aten_ops.add_relu(x, other)
        grads_match([out], [want], dtype)
        grads_match(torch.autograd.grad(out, (x, other), g), torch.autograd.grad(want, (x, other), g), dtype)


@GPU
@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("B,H", [(1, 1), (3, 7), (64, 1024), (4096, 8)])
def test_lstm_gradients_match_eager(impl, dtype, B, H):
    torch.manual_seed(0)
    ins = (cuda_leaf(B, 4 * H, dtype=dtype), cuda_leaf(B, 4 * H, dtype=dtype), cuda_leaf(4 * H, dtype=dtype),
           cuda_leaf(B, H, dtype=dtype))
    gs = tuple(torch.randn(B, H, device="cuda", dtype=ins[0].dtype) for _ in range(2))
    out, want = load(impl).lstm_gates(*ins), aten_ops.lstm_gates(*ins)
    grads_match(out, want, dtype)
    grads_match(torch.autograd.grad(out, ins, gs), torch.autograd.grad(want, ins, gs), dtype)


@GPU
@pytest.mark.parametrize("impl", IMPLS)
def test_softmax_refuses_autograd(impl):
    x = cuda_leaf(4, 64, dtype="float32")
    with pytest.raises(Unsupported, match="no backward"):
        load(impl).softmax(x)
    with torch.no_grad():
        load(impl).softmax(x)


TRAIN_MODELS = sorted(m for m, spec in MODELS.items() if "hand" in spec.tags and "train" in spec.modes)


@GPU
@pytest.mark.parametrize("variant", ["triton_kernel", "cuda_kernel"])
@pytest.mark.parametrize("model", TRAIN_MODELS)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_train_step_matches_eager(model, variant, dtype):
    # the runner's train step (runner.check.make_step): outputs, then every parameter's
    # gradient, which must all have come back through the hand-written backward kernels
    torch.manual_seed(0)
    spec = MODELS[model]
    m, inputs = spec.build(64, getattr(torch, dtype), "cuda")
    m.train()
    ref = copy.deepcopy(m)
    fn = VARIANTS[variant].apply(m, inputs, {"dtype": dtype, "device": "cuda", "mode": "train"})
    step = run_check.make_step(torch, SimpleNamespace(mode="train"), inputs, {})
    want, got = step(ref, ref), step(fn, m)
    assert len(got) == len(want) == len(run_check.as_list(ref(*inputs))) + len(list(m.parameters()))
    tol = run_check.tolerance_key(torch, ref, "cuda", dtype)
    check = run_check.compare(torch, got, want, tol)
    if not check["passed"]:   # as the runner: equally good rounding, judged against float64
        m64 = copy.deepcopy(ref).double()
        check["fp64"] = run_check.fp64_check(torch, got, want, lambda: step(m64, m64, tuple(x.double() for x in inputs)),
                                       tol)
        check["passed"] = check["fp64"]["passed"]
    assert check["passed"], check


@GPU
@pytest.mark.parametrize("variant", ["triton_kernel", "cuda_kernel"])
@pytest.mark.parametrize("model", TRAIN_MODELS)
def test_runner_train_mode_ok(tmp_path, model, variant):
    out = tmp_path / "run.json"
    assert cli.main(["--model", model, "--variant", variant, "--batch", "64", "--warmup", "1", "--iters", "2",
                     "--device", "cuda", "--mode", "train", "--dtype", "bfloat16", "--optimizer", "sgd",
                     "--out", str(out)]) == 0
    r = json.loads(out.read_text())
    assert r["status"] == "ok", r.get("reason")
    assert r["correctness"]["passed"]


if __name__ == "__main__":   # the interpreter's process (interpret()): [SCOPE KERNEL...]
    # the launch knobs' checks of each KERNEL in SCOPE ("grid" or "all"); the kernels' own
    # checks too without arguments or with SCOPE "grid"
    scope, kernels = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("grid", [])
    print(json.dumps({"kernels": interpreted_checks() if scope == "grid" else [],
                      "knobs": [e for k in kernels for e in knob_checks(k, scope)]}))
