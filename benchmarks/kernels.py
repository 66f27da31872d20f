"""Hand-written kernels against the memory roofline and against torch.compile, in one run.

    python benchmarks/kernels.py [--dtypes float32,bfloat16] [--out kernels.csv]

For each kernel (GELU, bias+GELU, add+ReLU, row softmax, LSTM gates) at a large size
(2^28 elements in the main tensor: 16384 x 16384, as seed 004's GELU), each dtype and each
implementation (Triton, CUDA C++, torch.compile of the same PyTorch math, eager PyTorch,
and for GELU the seed's naive Triton and CUDA kernels):
  1. check the output against eager PyTorch (runner.check.compare, dtype-aware tolerance);
     a kernel that fails is reported and not timed;
  2. time it with triton.testing.do_bench (median, L2 flushed, CUDA events);
  3. bandwidth = bytes that must move (every input read once, every output written once)
     / time, as a fraction of the device-to-device copy bandwidth (y.copy_(x), 1 GiB,
     bytes read + written) measured in this same run.
Targets: Triton and CUDA kernels >= 0.90 of copy bandwidth, and >= 0.95 of the
speed of torch.compile of the same math. Prints one table and the verdict per kernel.
"""
from __future__ import annotations

import argparse
import sys


import torch

from fusionlab.bench.gpu_time import write_csv
from fusionlab.experiments.kernels import aten_ops, load, seed
from fusionlab.experiments.models.gelu import ManualGelu
from fusionlab.experiments.models.softmax import ManualSoftmax
from fusionlab.experiments.registry import Unsupported
from fusionlab.runner.check import compare

BW_TARGET, COMPILE_TARGET = 0.90, 0.95
N_ROWS, N_COLS = 16384, 16384


def cases(dtype):
    """name -> (inputs, eager reference math, {impl: fn}, bytes moved)."""
    dev = "cuda"
    r = lambda *s: torch.randn(*s, device=dev, dtype=dtype)  # noqa: E731
    es = torch.finfo(dtype).bits // 8
    tri, cu = load("triton"), load("cuda")
    x = r(N_ROWS, N_COLS)
    b = r(N_COLS)
    n = x.numel()
    manual_gelu = ManualGelu().forward
    out = {
        "gelu": ((x,), manual_gelu,
                 {"triton": lambda x: tri.gelu(x, "tanh"), "cuda": lambda x: cu.gelu(x, "tanh"),
                  "aten": lambda x: aten_ops.gelu(x, "tanh"),
                  "triton_seed": seed.triton_gelu, "cuda_seed": seed.cuda_gelu},
                 2 * n * es),
        "bias_gelu": ((x, b), aten_ops.bias_gelu,
                      {"triton": lambda x, b: tri.bias_gelu(x, b, "none"),
                       "cuda": lambda x, b: cu.bias_gelu(x, b, "none")},
                      (2 * n + N_COLS) * es),
        "add_relu": ((x, b), aten_ops.add_relu,
                     {"triton": tri.add_relu, "cuda": cu.add_relu},
                     (2 * n + N_COLS) * es),
        "softmax": ((x.view(-1, 4096),), ManualSoftmax().forward,
                    {"triton": tri.softmax, "cuda": cu.softmax, "aten": aten_ops.softmax},
                    2 * n * es),
    }
    B, H = N_ROWS * N_COLS // 4 // 1024 // 4, 1024   # gx, gh: 2^26 elements each
    gx, gh, bb, c = r(B, 4 * H), r(B, 4 * H), r(4 * H), r(B, H)
    out["lstm_gates"] = ((gx, gh, bb, c), aten_ops.lstm_gates,
                         {"triton": tri.lstm_gates, "cuda": cu.lstm_gates},
                         (2 * gx.numel() + 4 * H + 3 * c.numel()) * es)
    return out


def bench(fn, args):
    from triton.testing import do_bench
    return do_bench(lambda: fn(*args), warmup=25, rep=100, return_mode="median")


def copy_bandwidth():
    x = torch.empty(2**28, device="cuda", dtype=torch.float32).uniform_()
    y = torch.empty_like(x)
    ms = bench(lambda: y.copy_(x), ())
    return 2 * x.numel() * 4 / (ms * 1e-3), ms


HEADER = (f"{'kernel':11s} {'dtype':9s} {'impl':12s} {'ms':>8s} {'TB/s':>7s} {'copy':>6s} "
          f"{'vs compile':>10s}  status")


def fmt(r: dict) -> str:
    if r["status"] == "ok":
        return (f"{r['kernel']:11s} {r['dtype']:9s} {r['impl']:12s} {r['ms']:8.3f} "
                f"{r['bandwidth_Bps'] / 1e12:7.3f} {r['copy_frac']:6.3f} {r.get('vs_compile', float('nan')):10.3f}  ok")
    return (f"{r['kernel']:11s} {r['dtype']:9s} {r['impl']:12s} {'':8s} {'':7s} {'':6s} {'':10s}  "
            f"{r['status']}: {r['reason']}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--kernels", default="gelu,bias_gelu,add_relu,softmax,lstm_gates")
    p.add_argument("--out", help="CSV of every measurement")
    a = p.parse_args(argv)
    if not torch.cuda.is_available():
        print("benchmarks/kernels.py: no GPU visible; the hand-written kernels run on CUDA only", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    copy_bps, copy_ms = copy_bandwidth()
    gpu = torch.cuda.get_device_name(0)
    print(f"{gpu}, torch {torch.__version__}; device-to-device copy: {copy_bps / 1e12:.3f} TB/s "
          f"(1 GiB in {copy_ms:.3f} ms, bytes read + written)")
    rows = []
    print(HEADER, flush=True)
    for dname in a.dtypes.split(","):
        dtype = getattr(torch, dname)
        for kname, (args, ref_fn, impls, nbytes) in cases(dtype).items():
            if kname not in a.kernels.split(","):
                continue
            with torch.no_grad():
                first = len(rows)
                ref = ref_fn(*args)
                fns = {"eager": ref_fn, **impls, "compile": torch.compile(ref_fn, dynamic=False)}
                res = {}
                for impl, fn in fns.items():
                    row = {"gpu": gpu, "kernel": kname, "dtype": dname, "impl": impl, "bytes": nbytes,
                           "copy_bandwidth_Bps": copy_bps}
                    try:
                        chk = compare(torch, fn(*args), ref, dname)
                    except Unsupported as e:  # the seed's kernels in bf16
                        row.update(status="unsupported", reason=str(e)[:160])
                        rows.append(row)
                        continue
                    except Exception as e:
                        row.update(status="error", reason=f"{type(e).__name__}: {str(e).splitlines()[0][:120]}")
                        rows.append(row)
                        continue
                    row["max_abs_err"] = chk.get("max_abs_err")
                    if not chk["passed"]:
                        row.update(status="incorrect", reason=chk.get("reason") or f"max abs err {chk['max_abs_err']:.3g}")
                        rows.append(row)
                        continue
                    ms = bench(fn, args)
                    row.update(status="ok", ms=ms, bandwidth_Bps=nbytes / (ms * 1e-3),
                               copy_frac=nbytes / (ms * 1e-3) / copy_bps)
                    res[impl] = row
                    rows.append(row)
                for row in res.values():
                    if "compile" in res:
                        row["vs_compile"] = res["compile"]["ms"] / row["ms"]
                for row in rows[first:]:  # as it is measured: a run cut short keeps what it had
                    print(fmt(row), flush=True)
                write_csv(a.out, rows)
                del ref
            torch.cuda.empty_cache()
    print(f"\n{HEADER}")
    for r in rows:
        print(fmt(r))
    print(f"\ntargets: triton and cuda >= {BW_TARGET} of copy bandwidth and >= {COMPILE_TARGET} of compile's speed")
    failed = 0
    for r in rows:
        if r["impl"] in ("triton", "cuda"):
            ok = r["status"] == "ok" and r["copy_frac"] >= BW_TARGET and r.get("vs_compile", 0) >= COMPILE_TARGET
            failed += not ok
            print(f"  {'PASS' if ok else 'MISS'} {r['kernel']:11s} {r['dtype']:9s} {r['impl']:7s} "
                  + (f"copy {r['copy_frac']:.3f}, vs compile {r.get('vs_compile', float('nan')):.3f}"
                     if r["status"] == "ok" else r["status"]))
    write_csv(a.out, rows)
    print(f"\n{failed} of {sum(r['impl'] in ('triton', 'cuda') for r in rows)} hand-written kernel runs miss a target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
