"""The hand-written kernels' forward and backward (train mode) against eager and torch.compile.

    python benchmarks/kernels_backward.py [--dtypes float32,bfloat16] [--out kernels_backward.csv]
    ncu -k regex:bwd python benchmarks/kernels_backward.py --profile   # one backward per hand kernel

For each kernel with a hand-written backward (GELU tanh; bias+GELU erf, as deep_gelu_mlp
uses it; add+ReLU with a bias, as mlp; the LSTM gates), at a size far beyond L2 (2^26
elements in the main tensor), each dtype and each implementation (eager PyTorch,
torch.compile of the same PyTorch math, the Triton and the CUDA autograd.Functions):
  1. check the forward output and every input's gradient against eager's
     (fusionlab.runner.check.compare, dtype-aware tolerance); a failure is reported, not timed;
  2. time the forward (inputs that require grad, so autograd records and compile runs its
     training forward) and the backward (torch.autograd.grad of one retained graph with a
     fixed output gradient) separately: the GPU's time (fusionlab.bench.gpu_time: median,
     L2 flushed, the CPU's launches queued ahead of the GPU, so Python's overhead per call
     is not timed: on the GPU machines a backward call costs the CPU 0.13-0.5 ms, more
     than the bf16 kernels' GPU time).
     The CSV also has the backward by triton.testing.do_bench (bwd_ms_do_bench: it times
     the CPU's launch too where the CPU falls behind the GPU) and the CPU's time per
     backward call (bwd_cpu_ms);
  3. bandwidth = bytes that must move / time, as a fraction of the device-to-device copy
     bandwidth (y.copy_(x), 1 GiB, bytes read + written) measured in this run.
Bytes: forward, every input read once and every output written once; backward, what the
hand-written backward moves: the saved inputs and the outputs' gradients read once, the
inputs' gradients written once (GELU: 3 n; bias+GELU, add+ReLU: 3 n + 2 cols; LSTM:
gx, gh, c, dh, dc' read, dgates (the gradient of gx and gh alike) and dc written, 16 B H,
plus the bias and its gradient). For eager and compile the same bytes are used, so their
fractions are speeds on one scale. Prints one table, then the hand kernels' backward
against compile's.
"""
from __future__ import annotations

import argparse
import sys

import torch

from fusionlab.bench.gpu_time import DEVICE, copy_bandwidth, cpu_time, do_bench, gpu_time, write_csv
from fusionlab.experiments.kernels import aten_ops, load
from fusionlab.runner.check import compare

ROWS, COLS = 8192, 8192          # 2^26 elements: 256 MiB in fp32, well beyond L2
LSTM_B, LSTM_H = 16384, 1024     # gx, gh (B, 4H): 2^26 elements each
KERNELS = ("gelu", "bias_gelu", "add_relu", "lstm_gates")


def moved_bytes(kname: str, es: int):
    """(forward, backward) bytes that must move for kernel kname at the benchmark's sizes,
    es bytes an element (the definitions above)."""
    n, B, H = ROWS * COLS, LSTM_B, LSTM_H
    bias = ((2 * n + COLS) * es, (3 * n + 2 * COLS) * es)
    return {"gelu": (2 * n * es, 3 * n * es), "bias_gelu": bias, "add_relu": bias,
            "lstm_gates": ((11 * B * H + 4 * H) * es, (16 * B * H + 8 * H) * es)}[kname]


def cases(dtype):
    """name -> (inputs (leaves that require grad), {impl: fn}, forward bytes, backward bytes)."""
    es = torch.finfo(dtype).bits // 8
    leaf = lambda *s: torch.randn(*s, device=DEVICE, dtype=dtype).requires_grad_()  # noqa: E731
    tri, cu = load("triton"), load("cuda")

    def gelu(k):
        return lambda x: k.gelu(x, "tanh")

    def bias_gelu(k):
        return lambda x, b: k.bias_gelu(x, b, "none")

    def add_relu(k):
        return k.add_relu

    def lstm_gates(k):
        return k.lstm_gates

    B, H = LSTM_B, LSTM_H
    return {
        "gelu": (lambda: (leaf(ROWS, COLS),), gelu, *moved_bytes("gelu", es)),
        "bias_gelu": (lambda: (leaf(ROWS, COLS), leaf(COLS)), bias_gelu, *moved_bytes("bias_gelu", es)),
        "add_relu": (lambda: (leaf(ROWS, COLS), leaf(COLS)), add_relu, *moved_bytes("add_relu", es)),
        "lstm_gates": (lambda: (leaf(B, 4 * H), leaf(B, 4 * H), leaf(4 * H), leaf(B, H)), lstm_gates,
                       *moved_bytes("lstm_gates", es)),
    }, {"eager": aten_ops, "triton": tri, "cuda": cu}


bench = gpu_time


def as_tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


HEADER = (f"{'kernel':10s} {'dtype':9s} {'impl':8s} {'fwd ms':>8s} {'copy':>6s} {'bwd ms':>8s} {'copy':>6s} "
          f"{'fwd/cmp':>7s} {'bwd/cmp':>7s}  status")


def fmt(r: dict) -> str:
    head = f"{r['kernel']:10s} {r['dtype']:9s} {r['impl']:8s} "
    if r["status"] != "ok":
        return head + f"{'':8s} {'':6s} {'':8s} {'':6s} {'':7s} {'':7s}  {r['status']}: {r['reason']}"
    nan = float("nan")
    return head + (f"{r['fwd_ms']:8.3f} {r['fwd_copy_frac']:6.3f} {r['bwd_ms']:8.3f} {r['bwd_copy_frac']:6.3f} "
                   f"{r.get('fwd_vs_compile', nan):7.3f} {r.get('bwd_vs_compile', nan):7.3f}  ok")


def measure(kname, dname, impl, fn, inputs, ref, gouts, fwd_bytes, bwd_bytes, copy_bps) -> dict:
    row = {"kernel": kname, "dtype": dname, "impl": impl, "fwd_bytes": fwd_bytes, "bwd_bytes": bwd_bytes,
           "copy_bandwidth_Bps": copy_bps}
    try:
        out = as_tuple(fn(*inputs))
        grads = torch.autograd.grad(out, inputs, gouts, retain_graph=True)
        errs = []
        for what, got, want in (("output", out, ref[0]), ("gradient", grads, ref[1])):
            for i, (o, w) in enumerate(zip(got, want)):
                chk = compare(torch, o.detach(), w, dname)
                errs.append(chk.get("max_abs_err", float("nan")))
                if not chk["passed"]:
                    row.update(status="incorrect", reason=f"{what} {i}: " + (
                        chk.get("reason") or f"max abs err {chk['max_abs_err']:.3g}"))
                    return row
        row["max_abs_err"] = max(errs)
        del grads
        fwd = bench(lambda: fn(*inputs))
        backward = lambda: torch.autograd.grad(out, inputs, gouts, retain_graph=True)  # noqa: E731
        bwd = bench(backward)
        row.update(bwd_ms_do_bench=do_bench(backward), bwd_cpu_ms=cpu_time(backward))
    except Exception as e:
        row.update(status="error", reason=f"{type(e).__name__}: {str(e).splitlines()[0][:140]}")
        return row
    row.update(status="ok", fwd_ms=fwd, bwd_ms=bwd,
               fwd_copy_frac=fwd_bytes / (fwd * 1e-3) / copy_bps, bwd_copy_frac=bwd_bytes / (bwd * 1e-3) / copy_bps)
    return row


def profile(dtypes, kernels) -> None:
    """One forward and one backward of each hand-written implementation (no check, no
    timing, no compile), at the benchmark's sizes: the launches for a profiler."""
    for dname in dtypes:
        table, modules = cases(getattr(torch, dname))
        for kname in kernels:
            make_inputs, make_fn, _, _ = table[kname]
            inputs = make_inputs()
            for impl in ("triton", "cuda"):
                out = as_tuple(make_fn(modules[impl])(*inputs))
                torch.autograd.grad(out, inputs, tuple(torch.randn_like(o) for o in out))
                torch.cuda.synchronize()
                print(f"{kname} {dname} {impl}: forward and backward ran", flush=True)
            del inputs
            torch.cuda.empty_cache()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--kernels", default=",".join(KERNELS))
    p.add_argument("--out", help="CSV of every measurement")
    p.add_argument("--profile", action="store_true",
                   help="only run each hand kernel's forward and backward once (for ncu or nsys)")
    a = p.parse_args(argv)
    if not torch.cuda.is_available():
        print("benchmarks/kernels_backward.py: no GPU visible; the hand-written kernels run on CUDA only",
              file=sys.stderr)
        return 2
    torch.manual_seed(0)
    if a.profile:
        profile(a.dtypes.split(","), a.kernels.split(","))
        return 0
    copy_bps, copy_ms = copy_bandwidth()
    gpu = torch.cuda.get_device_name(0)
    print(f"{gpu}, torch {torch.__version__}; device-to-device copy: {copy_bps / 1e12:.3f} TB/s "
          f"(1 GiB in {copy_ms:.3f} ms, bytes read + written)\n"
          f"copy = fraction of the copy bandwidth; fwd/cmp, bwd/cmp = compile's time / this time (> 1: faster)")
    rows = []
    print(HEADER, flush=True)
    for dname in a.dtypes.split(","):
        dtype = getattr(torch, dname)
        table, modules = cases(dtype)
        for kname in a.kernels.split(","):
            make_inputs, make_fn, fwd_bytes, bwd_bytes = table[kname]
            inputs = make_inputs()
            eager = make_fn(modules["eager"])
            ref_out = as_tuple(eager(*inputs))
            gouts = tuple(torch.randn_like(o) for o in ref_out)
            ref = ([o.detach() for o in ref_out], torch.autograd.grad(ref_out, inputs, gouts))
            del ref_out
            fns = {"eager": eager, "compile": torch.compile(eager, dynamic=False),
                   "triton": make_fn(modules["triton"]), "cuda": make_fn(modules["cuda"])}
            first = len(rows)
            for impl, fn in fns.items():
                rows.append({"gpu": gpu, **measure(kname, dname, impl, fn, inputs, ref, gouts, fwd_bytes, bwd_bytes,
                                                   copy_bps)})
                torch.cuda.empty_cache()
            comp = next((r for r in rows[first:] if r["impl"] == "compile" and r["status"] == "ok"), None)
            for r in rows[first:]:
                if comp is not None and r["status"] == "ok":
                    r["fwd_vs_compile"] = comp["fwd_ms"] / r["fwd_ms"]
                    r["bwd_vs_compile"] = comp["bwd_ms"] / r["bwd_ms"]
                print(fmt(r), flush=True)
            write_csv(a.out, rows)   # as it is measured: a run cut short keeps what it had
            del inputs, ref, gouts, fns
            torch.cuda.empty_cache()
    print(f"\n{HEADER}")
    for r in rows:
        print(fmt(r))
    print("\nhand-written backward against compile's backward (bwd/cmp >= 0.95: as fast as compile; "
          "copy: fraction of the copy bandwidth)")
    for r in rows:
        if r["impl"] in ("triton", "cuda"):
            print(f"  {r['kernel']:10s} {r['dtype']:9s} {r['impl']:7s} " + (
                f"backward {r['bwd_ms']:.3f} ms, copy {r['bwd_copy_frac']:.3f}, vs compile "
                f"{r.get('bwd_vs_compile', float('nan')):.3f}; forward copy {r['fwd_copy_frac']:.3f}; "
                f"do_bench {r['bwd_ms_do_bench']:.3f} ms, CPU {r['bwd_cpu_ms']:.3f} ms a call"
                if r["status"] == "ok" else f"{r['status']}: {r['reason']}"))
    write_csv(a.out, rows)
    bad = [r for r in rows if r["status"] != "ok"]
    print(f"\n{len(bad)} of {len(rows)} runs not ok" + ("" if not bad else ": " + ", ".join(
        f"{r['kernel']}/{r['dtype']}/{r['impl']} {r['status']}" for r in bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
