"""The correctness check: a variant's first call against eager's, dtype-aware, with the
float64 fallback test for outputs that are not allclose."""
from __future__ import annotations

import copy
import time

from fusionlab.core import axes

# allclose tolerances per dtype (rtol, atol); atol is scaled by max(1, max|ref|)
TOLERANCE = {"float32": (1e-3, 1e-4), "bfloat16": (1.6e-2, 1e-2), "float16": (5e-3, 1e-3),
             # fp32 math that the GPU runs in TF32 (10 mantissa bits): PyTorch's own tests
             # compare TF32 results with atol 5e-3 (tf32_on_and_off(0.005))
             "tf32": (1e-3, 5e-3)}

CHECK_CHUNK = 1 << 24  # elements per float64 chunk of the check: 128 MiB on the device


def tolerance_key(torch, model, device: str, dtype: str) -> str:
    """The TOLERANCE row of a run: its dtype, or "tf32" where fp32 on the GPU goes through
    TF32 by PyTorch's settings: convolutions (cuDNN allows TF32 by default) or matmuls
    (when the user allowed it). Two correct conv programs (eager, and compile or a folded
    conv, which pick other cuDNN algorithms) then differ by TF32 rounding, ~1e-3."""
    if dtype in axes.AUTOCAST:
        return axes.AUTOCAST[dtype]
    if device != "cuda" or dtype != "float32":
        return dtype
    if torch.backends.cuda.matmul.allow_tf32:
        return "tf32"
    conv = torch.nn.modules.conv._ConvNd
    if torch.backends.cudnn.allow_tf32 and any(isinstance(m, conv) for m in model.modules()):
        return "tf32"
    return dtype


def as_list(out) -> list:
    """A model's outputs as a list: one tensor, or the tensors of a tuple or list."""
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _chunks(t):
    """A tensor's elements in float64 chunks, on its own device (the GPU's copy, not the
    host's: a 2^28-element output takes about 25 s to compare on the host's cores)."""
    flat = t.detach().reshape(-1)
    for i in range(0, flat.numel(), CHECK_CHUNK):
        yield flat[i:i + CHECK_CHUNK].double()


def _pairs(a, b):
    """(a's chunk, b's chunk) on b's device: a variant may answer on another device."""
    return ((x.to(y.device), y) for x, y in zip(_chunks(a), _chunks(b)))


def compare(torch, out, ref, dtype: str) -> dict:
    """allclose of every tensor of out against ref, dtype-aware; reports the max errors.
    In float64, on the tensors' device, chunk by chunk."""
    outs, refs = as_list(out), as_list(ref)
    if len(outs) != len(refs):
        return {"passed": False, "reason": f"{len(outs)} outputs, eager has {len(refs)}"}
    rtol, atol = TOLERANCE[dtype]
    max_abs = max_rel = 0.0
    passed = True
    for o, r in zip(outs, refs):
        if o.shape != r.shape:
            return {"passed": False, "reason": f"shape {tuple(o.shape)} != eager {tuple(r.shape)}"}
        if not o.numel():
            continue
        o_finite = r_finite = True
        scale = 1.0
        for oc, rc in _pairs(o, r):
            o_finite &= bool(torch.isfinite(oc).all())
            r_finite &= bool(torch.isfinite(rc).all())
            scale = max(scale, rc.abs().max().item())
        if not o_finite and r_finite:
            return {"passed": False, "reason": "non-finite values where eager has none"}
        diff_sq = ref_sq = 0.0
        for oc, rc in _pairs(o, r):
            diff = (oc - rc).abs()
            max_abs = max(max_abs, diff.max().item())
            diff_sq += diff.pow(2).sum().item()
            ref_sq += rc.pow(2).sum().item()
            passed &= bool(torch.allclose(oc, rc, rtol=rtol, atol=atol * scale))
        max_rel = max(max_rel, diff_sq ** 0.5 / max(ref_sq ** 0.5, 1e-30))
    return {"passed": passed, "max_abs_err": max_abs, "rel_l2_err": max_rel,
            "rtol": rtol, "atol": atol}


def _rmse(a, truth) -> float:
    sq = sum((x - t).pow(2).sum().item() for x, t in _pairs(a, truth))
    return (sq / max(a.numel(), 1)) ** 0.5


def fp64_check(torch, out, ref, run_fp64, dtype: str, multiplier: float = 2.0) -> dict:
    """The Inductor benchmark harness's fallback accuracy test, for outputs that are not
    allclose to eager (different but equally valid rounding: TF32 convolutions, another
    summation order): with the model run in float64 as the truth, the variant passes if
    its RMSE is at most multiplier x eager's own RMSE + atol / 10, for every output."""
    outs, refs, r64s = as_list(out), as_list(ref), as_list(run_fp64())
    atol = TOLERANCE[dtype][1]
    worst = None
    for o, r, t in zip(outs, refs, r64s):
        var, eag = _rmse(o, t), _rmse(r, t)
        ok = var <= multiplier * eag + atol / 10
        if worst is None or not ok:
            worst = {"variant_rmse": var, "eager_rmse": eag, "passed": ok}
        if not ok:
            break
    return {**worst, "multiplier": multiplier,
            "criterion": "RMSE vs float64 <= multiplier * eager RMSE vs float64 + atol/10"}


def make_step(torch, spec, inputs, optimizers: dict):
    """The check's iteration, step(f, m, xs=inputs): inference is f(*xs) under no_grad;
    train (spec.mode) is zero_grad, forward, backward of the mean of the outputs, and the
    optimizer step of m when it has one. Returns the outputs (train: and the gradients),
    for the comparison with eager. Never timed: the windows time timing.make_loop's loop."""
    def step(f, m, xs=inputs):
        if spec.mode == "train":
            m.zero_grad(set_to_none=True)
            outs = as_list(f(*xs))
            sum(o.float().mean() for o in outs).backward()
            result = outs + [p.grad for p in m.parameters() if p.grad is not None]
            if id(m) in optimizers:  # not the float64 reference
                optimizers[id(m)].step()
            return result
        with torch.no_grad():
            return f(*xs)
    return step


def check_against_eager(torch, spec, device, step, fn, model, ref_model, pristine, inputs, sync) -> dict:
    """The variant's first call against eager's (compare, then the float64 test for
    outputs that are not allclose). Returns the check record with both first-call times
    and, on the GPU, the allocator's peak over the two first calls (first_calls_peak_bytes;
    the peak is reset after the comparison, whose float64 copies are not the run's)."""
    t0 = time.perf_counter(); ref = step(ref_model, ref_model); sync()
    eager_first = time.perf_counter() - t0
    t0 = time.perf_counter(); out = step(fn, model); sync()
    variant_first = time.perf_counter() - t0
    # the run's peak memory counts both first calls, not the comparison's float64 copies
    first_calls_peak = torch.cuda.max_memory_allocated() if device == "cuda" else None
    tol = tolerance_key(torch, pristine, device, spec.dtype)
    check = compare(torch, out, ref, tol)
    check["tolerance"] = tol
    if not check["passed"] and "reason" not in check:
        m64 = copy.deepcopy(pristine).double()
        check["fp64"] = fp64_check(torch, out, ref, lambda: step(
            m64, m64, tuple(x.double() if x.is_floating_point() else x for x in inputs)), tol)
        check["passed"] = check["fp64"]["passed"]
    check["first_call_s"], check["eager_first_call_s"] = variant_first, eager_first
    if first_calls_peak is not None:
        check["first_calls_peak_bytes"] = first_calls_peak
        torch.cuda.reset_peak_memory_stats()
    return check


def incorrect_reason(check: dict) -> str:
    """The one-line reason of a run whose check failed."""
    fp64 = check.get("fp64")
    return check.get("reason") or (
        f"not allclose to eager: max abs err {check['max_abs_err']:.3g}, rel L2 err {check['rel_l2_err']:.3g}"
        + (f"; RMSE vs float64 {fp64['variant_rmse']:.3g}, eager's {fp64['eager_rmse']:.3g}" if fp64 else ""))
