"""Launch knobs of the Triton backward kernels with a bias gradient, timed on the GPU.

    python benchmarks/kernels_backward_tune.py [--dtypes bfloat16,float32] [--kernels bias_gelu,add_relu,lstm_gates]
        [--reps 12] [--budget 480] [--no-compile] [--out tune.csv]

The kernels: bias+GELU (erf) and add+ReLU with a bias (triton_ops._pointwise_backward,
one _rowwise_bwd_kernel launch) and the LSTM gates (triton_lstm._lstm_gates_backward), at
kernels_backward.py's sizes and with its byte counts. For each dtype and kernel, eager's
gradients are computed once; then each knob combination (keywords of the launcher) is
called directly on the same tensors and output gradient, its gradients checked against
eager's (fusionlab.runner.check.compare; a failure is reported, not timed), and its GPU
time taken (fusionlab.bench.gpu_time: median of --reps, L2 flushed) as a fraction of the
device-to-device copy bandwidth measured in this run. Two phases: the geometries
(ROWWISE_GEOMETRY, LSTM_GEOMETRY: warps, elements a thread, threads across a row, loop
form: stages 0 is the launcher's own loop, S >= 1 Triton's software pipelining over S
stages; LSTM: one counter or four), then the VARIANTS (eviction hints, row groups: two
waves or a fixed number of row tiles a group; LSTM: the other counter form) on the
fastest geometry. The launcher's defaults come first (`default` = 1). Then, unless
--no-compile, the Triton autograd.Function's backward and torch.compile's backward
(kernels_backward.measure) once each for reference.

Prints each row as measured, then per kernel and dtype a table sorted by copy fraction
and the best combination against the default and compile. The CSV (--out, written as
rows come) has the knobs, the launch's geometry (block sizes, row groups, the binary's
registers and shared memory, programs per SM), bwd_ms and bwd_copy_frac. Combinations
that would start after --budget seconds are left out (status `skipped`).
"""
from __future__ import annotations

import argparse
import sys
import time

# geometries (phase 1): the launcher's defaults first ({}: triton_ops.ROWWISE_LAUNCH, by dtype)
ROWWISE_GEOMETRY = [{}] + [dict(warps=w, per_thread=p, stages=s) for w, p, s in (
    (4, 16, 0), (4, 8, 0), (8, 8, 0), (8, 16, 0),
    (4, 16, 1), (4, 32, 1), (8, 16, 1),
    (4, 16, 2), (4, 32, 2), (8, 16, 2),
    (4, 8, 3), (4, 16, 3), (4, 32, 3), (8, 16, 3),
    (4, 16, 4), (8, 16, 4))] + [dict(warps=w, per_thread=p, stages=0, threads_across=t) for w, p, t in (
    (4, 16, 64), (4, 16, 128), (8, 16, 64), (4, 32, 64), (8, 8, 128), (4, 8, 64))]
# warps None: the launcher's default (4)
LSTM_GEOMETRY = [dict(warps=w, per_thread=p, threads_across=t, stages=s, one_counter=o) for w, p, t, s, o in (
    (None, 4, 16, 0, False), (4, 4, 16, 0, False), (8, 4, 16, 0, False), (4, 4, 32, 0, False),
    (8, 4, 32, 0, False), (4, 4, 64, 0, False), (8, 4, 64, 0, False), (4, 8, 16, 0, False),
    (4, 4, 16, 2, False), (8, 4, 16, 2, False), (8, 4, 32, 2, False), (4, 4, 16, 3, False), (8, 4, 16, 3, False),
    (None, 4, 16, 0, True), (4, 4, 16, 0, True), (8, 4, 32, 0, True), (4, 4, 64, 0, True))]
# variants (phase 2), each merged onto the fastest geometry
ROWWISE_VARIANTS = [dict(full=False), dict(evict=True), dict(waves=2), dict(tiles_per_group=8),
                    dict(tiles_per_group=32), dict(evict=True, waves=2)]
LSTM_VARIANTS = [dict(evict=True), dict(waves=2), dict(tiles_per_group=8), dict(one_counter=True),
                 dict(one_counter=False)]
KERNELS = ("bias_gelu", "add_relu", "lstm_gates")


def geometry(kname):
    return LSTM_GEOMETRY if kname == "lstm_gates" else ROWWISE_GEOMETRY


def variants(kname):
    return LSTM_VARIANTS if kname == "lstm_gates" else ROWWISE_VARIANTS


def resolved(kname, knobs: dict, es: int) -> dict:
    """knobs with the LSTM's default warps made explicit (es: bytes an element)."""
    if kname == "lstm_gates" and knobs.get("warps") is None:
        return {**knobs, "warps": 4}
    return dict(knobs)


def all_combinations(kname) -> list[dict]:
    """Every combination a run may time: each geometry alone and with each variant."""
    out = []
    for g in geometry(kname):
        for v in [{}] + variants(kname):
            c = {**g, **v}
            if c not in out:
                out.append(c)
    return out


def label(knobs: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in knobs.items()) or "launcher default"


def backward_call(kname, ts, knobs):
    """call(info) -> the Triton backward's gradients, in the order of eager's (ts: inputs
    and output gradients, detached)."""
    from fusionlab.experiments.kernels import triton_lstm, triton_ops
    from fusionlab.experiments.kernels.functions import GELU_ERF, RELU
    if kname == "lstm_gates":
        def call(info=None):
            dgates, dbias, dc_prev = triton_lstm._lstm_gates_backward(*ts, **knobs, info=info)
            return [dgates, dgates, dbias, dc_prev]
        return call
    op = GELU_ERF if kname == "bias_gelu" else RELU

    def call(info=None):
        x, b, g = ts
        return list(triton_ops._pointwise_backward(g, x, b, op, **knobs, info=info))
    return call


def run_combo(kname, dname, ts, want, knobs, bwd_bytes, copy_bps, reps) -> dict:
    import torch
    from fusionlab.bench.gpu_time import gpu_time
    from fusionlab.runner.check import compare
    row = {"impl": "triton-knobs", "label": label(knobs), **{f"knob_{k}": v for k, v in knobs.items()}}
    t0 = time.perf_counter()
    try:
        call, info = backward_call(kname, ts, knobs), {}
        got = call(info)
        row.update({k: info[k] for k in ("regs", "shared", "per_sm", "block_m", "block_n", "col_blocks", "row_tiles",
                                         "groups") if k in info})
        chk = compare(torch, got, want, dname)
        row["max_abs_err"] = chk.get("max_abs_err", float("nan"))
        if not chk["passed"]:
            row.update(status="incorrect", reason=chk.get("reason") or f"max abs err {chk['max_abs_err']:.3g}")
            return row
        del got
        ms = gpu_time(call, reps=reps)
    except Exception as e:
        row.update(status="error", reason=f"{type(e).__name__}: {str(e).splitlines()[0][:140]}")
        return row
    finally:
        row["seconds"] = round(time.perf_counter() - t0, 2)
    row.update(status="ok", bwd_ms=ms, bwd_copy_frac=bwd_bytes / (ms * 1e-3) / copy_bps)
    return row


def fmt(r: dict) -> str:
    head = f"{r['kernel']:10s} {r['dtype']:9s} {r.get('phase', ''):9s} "
    if r["status"] != "ok":
        return head + f"{r['status']}: {r.get('reason', '')}  [{r.get('label', r['impl'])}]"
    geo = (f"regs {r.get('regs', '?'):>3} smem {r.get('shared', '?'):>6} per_sm {r.get('per_sm', '?'):>2} "
           f"groups {r.get('groups', '?'):>4}" if r["impl"] == "triton-knobs" else f"{'':42s}")
    return head + f"{r['bwd_ms']:8.4f} ms  copy {r['bwd_copy_frac']:.3f}  {geo}  {r.get('label', r['impl'])}"


def inputs_for(kname, dtype, kb):
    """(leaves, eager fn, detached tensors for the launcher, output gradients, eager's outputs, eager's grads)."""
    import torch
    from fusionlab.experiments.kernels import aten_ops
    leaf = lambda *s: torch.randn(*s, device=kb.DEVICE, dtype=dtype).requires_grad_()  # noqa: E731
    if kname == "lstm_gates":
        B, H = kb.LSTM_B, kb.LSTM_H
        leaves, fn = (leaf(B, 4 * H), leaf(B, 4 * H), leaf(4 * H), leaf(B, H)), aten_ops.lstm_gates
    else:
        leaves = (leaf(kb.ROWS, kb.COLS), leaf(kb.COLS))
        fn = (lambda x, b: aten_ops.bias_gelu(x, b, "none")) if kname == "bias_gelu" else aten_ops.add_relu
    out = kb.as_tuple(fn(*leaves))
    gouts = tuple(torch.randn_like(o) for o in out)
    want = list(torch.autograd.grad(out, leaves, gouts))
    det = [t.detach() for t in leaves]
    ts = (*det, *gouts) if kname == "lstm_gates" else (det[0], det[1], gouts[0])
    return leaves, fn, ts, gouts, [o.detach() for o in out], want


def tune(kname, dname, a, kb, copy_bps, gpu, t_start, emit) -> None:
    """Phase 1, phase 2 and the references of one kernel and dtype, each row to emit(row)."""
    import torch
    dtype = getattr(torch, dname)
    es = torch.finfo(dtype).bits // 8
    fwd_bytes, bwd_bytes = kb.moved_bytes(kname, es)
    leaves, fn, ts, gouts, ref_out, want = inputs_for(kname, dtype, kb)
    rows, seen = [], []

    def one(phase, knobs):
        key = resolved(kname, knobs, es)
        if key in seen:
            return
        seen.append(key)
        base = {"gpu": gpu, "kernel": kname, "dtype": dname, "phase": phase, "default": int(phase == "default"),
                "bwd_bytes": bwd_bytes, "copy_bandwidth_Bps": copy_bps}
        if time.perf_counter() - t_start > a.budget:
            r = {**base, "impl": "triton-knobs", "label": label(key), "status": "skipped",
                 "reason": f"past the {a.budget:.0f} s budget"}
        else:
            r = {**base, **run_combo(kname, dname, ts, want, key, bwd_bytes, copy_bps, a.reps)}
        rows.append(r)
        emit(r)

    geo = geometry(kname)
    one("default", geo[0])
    for g in geo[1:]:
        one("geometry", g)
    ok = [r for r in rows if r["status"] == "ok"]
    if ok:
        best = min(ok, key=lambda r: r["bwd_ms"])
        best_knobs = {k[len("knob_"):]: v for k, v in best.items() if k.startswith("knob_")}
        for v in variants(kname):
            one("variant", {**best_knobs, **v})
    if a.compile:
        from fusionlab.experiments.kernels import triton_ops as T
        ref = (ref_out, want[:len(leaves)])
        tri = {"bias_gelu": lambda x, b: T.bias_gelu(x, b, "none"), "add_relu": T.add_relu,
               "lstm_gates": T.lstm_gates}[kname]
        for impl, f in (("triton", tri), ("compile", torch.compile(fn, dynamic=False))):
            if time.perf_counter() - t_start > a.budget:
                r = {"impl": impl, "status": "skipped", "reason": f"past the {a.budget:.0f} s budget"}
            else:
                r = kb.measure(kname, dname, impl, f, leaves, ref, gouts, fwd_bytes, bwd_bytes, copy_bps)
            r.update(gpu=gpu, kernel=kname, dtype=dname, phase="reference", default=0, label=impl)
            emit(r)
            torch.cuda.empty_cache()


def summary(rows) -> None:
    for key in dict.fromkeys((r["kernel"], r["dtype"]) for r in rows):
        block = [r for r in rows if (r["kernel"], r["dtype"]) == key]
        ok = sorted((r for r in block if r["status"] == "ok"), key=lambda r: -r["bwd_copy_frac"])
        print(f"\n{key[0]} {key[1]}: {len(ok)} of {len(block)} ok, sorted by copy fraction")
        for r in ok:
            print("  " + fmt(r))
        for r in block:
            if r["status"] != "ok":
                print("  " + fmt(r))
    print("\nbest per kernel and dtype (copy fraction; target 0.90)")
    for key in dict.fromkeys((r["kernel"], r["dtype"]) for r in rows):
        block = [r for r in rows if (r["kernel"], r["dtype"]) == key and r["status"] == "ok"]
        knobs = [r for r in block if r["impl"] == "triton-knobs"]
        if not knobs:
            print(f"  {key[0]:10s} {key[1]:9s} no combination ok")
            continue
        best = max(knobs, key=lambda r: r["bwd_copy_frac"])
        get = lambda pick: next((f"{r['bwd_copy_frac']:.3f}" for r in block if pick(r)), "-")  # noqa: E731
        print(f"  {key[0]:10s} {key[1]:9s} best {best['bwd_copy_frac']:.3f} ({best['bwd_ms']:.4f} ms: "
              f"{best['label']}); default {get(lambda r: r.get('default') == 1)}, "
              f"compile {get(lambda r: r['impl'] == 'compile')}"
              f"{'' if best['bwd_copy_frac'] < 0.90 else '  >= 0.90'}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dtypes", default="bfloat16,float32")
    p.add_argument("--kernels", default=",".join(KERNELS))
    p.add_argument("--reps", type=int, default=12, help="timed calls a combination (median)")
    p.add_argument("--budget", type=float, default=480.0,
                   help="seconds after which no further combination starts")
    p.add_argument("--no-compile", dest="compile", action="store_false",
                   help="leave out the autograd.Function and torch.compile references")
    p.add_argument("--out", help="CSV of every combination")
    a = p.parse_args(argv)
    import torch
    if not torch.cuda.is_available():
        print("benchmarks/kernels_backward_tune.py: no GPU visible; the Triton kernels are timed on CUDA only",
              file=sys.stderr)
        return 2
    import triton

    import kernels_backward as kb   # the sibling script: sizes, byte counts, measure()
    from fusionlab.bench.gpu_time import copy_bandwidth, write_csv
    t_start = time.perf_counter()
    torch.manual_seed(0)
    copy_bps, copy_ms = copy_bandwidth()
    gpu = torch.cuda.get_device_name(0)
    print(f"{gpu}, torch {torch.__version__}, Triton {triton.__version__}; device-to-device copy "
          f"{copy_bps / 1e12:.3f} TB/s ({copy_ms:.3f} ms a GiB)", flush=True)
    rows = []

    def emit(r):   # print a row and rewrite the CSV: a run cut short keeps what it had
        rows.append(r)
        print(fmt(r) + f"  ({time.perf_counter() - t_start:.0f} s)", flush=True)
        write_csv(a.out, rows)

    for dname in a.dtypes.split(","):
        for kname in a.kernels.split(","):
            tune(kname, dname, a, kb, copy_bps, gpu, t_start, emit)
    summary(rows)
    write_csv(a.out, rows)
    print(f"\n{time.perf_counter() - t_start:.0f} s in all")
    bad = [r for r in rows if r["status"] in ("error", "incorrect")]
    print(f"{len(bad)} of {len(rows)} combinations failed" + ("" if not bad else ": " + "; ".join(
        f"{r['kernel']}/{r['dtype']} [{r.get('label')}] {r['status']}" for r in bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
