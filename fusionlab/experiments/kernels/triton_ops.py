"""The kernels in Triton. Math in fp32 whatever the storage dtype; one read of every
input and one write of every output, so each kernel's floor is the copy bandwidth.

gelu, bias_gelu, add_relu and lstm_gates have a hand-written backward (train mode;
functions.py wires forward and backward kernels into autograd.Functions, reference.py
has the same formulas in PyTorch ops): it reads the saved inputs and the output's
gradient once and writes the inputs' gradients once, recomputing x + y or the gates; a
bias's gradient (the sum over rows, accumulated in fp32) is finished in the same launch
(triton_reduce.py: one wave of programs, per-row-group partial rows, the last program of
each column block sums them). Those backward launchers (_pointwise_backward,
triton_lstm._lstm_gates_backward) take their launch knobs as keywords, defaults as used
in training; benchmarks/kernels_backward_tune.py times them. softmax is forward-only. The
device math is in triton_math.py, the LSTM gates' kernels in triton_lstm.py.

TRITON_INTERPRET=1 runs the kernels on CPU tensors through Triton's interpreter (tests:
fp32 only, as the 16-bit paths use PTX); there, the autotuned kernels take their first
configuration.
"""
import os

import torch
import triton
import triton.language as tl

from fusionlab.experiments.kernels import triton_reduce as R
from fusionlab.experiments.kernels.functions import (GELU_ERF, GELU_TANH, RELU, needs_grad, no_backward, op_code,
                                                     pointwise_function)
from fusionlab.experiments.kernels.triton_lstm import LstmGates, lstm_gates
from fusionlab.experiments.kernels.triton_math import act, act_grad, stream_load, stream_store
from fusionlab.experiments.kernels.triton_reduce import column_sums_done

__all__ = ["GELU_TANH", "GELU_ERF", "RELU", "gelu", "bias_gelu", "add_relu", "softmax", "lstm_gates",
           "Pointwise", "LstmGates"]

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
_check = R.check_inputs


_POINTWISE_CONFIGS = [
    triton.Config({"BLOCK": 1024}, num_warps=4),
    triton.Config({"BLOCK": 2048}, num_warps=8),
    triton.Config({"BLOCK": 4096}, num_warps=8),
    triton.Config({"BLOCK": 8192}, num_warps=16),
]


@triton.autotune(configs=_POINTWISE_CONFIGS, key=["n", "HAS_Y"])
@triton.jit
def _pointwise_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, HAS_Y: tl.constexpr,
                      HALF: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    if HAS_Y:
        v += tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, act(v, OP, HALF).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rowwise_kernel(x_ptr, y_ptr, out_ptr, rows, cols, OP: tl.constexpr, HALF: tl.constexpr,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # x (rows, cols) + y (cols,): tiles of BLOCK_M x BLOCK_N, y loaded once per tile,
    # no division or modulo per element
    r = tl.program_id(1).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    c = tl.program_id(0).to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    offs = r[:, None] * cols + c[None, :]
    y = tl.load(y_ptr + c, mask=c < cols).to(tl.float32)
    v = tl.load(x_ptr + offs, mask=mask).to(tl.float32) + y[None, :]
    tl.store(out_ptr + offs, act(v, OP, HALF).to(out_ptr.dtype.element_ty), mask=mask)


def _launch_autotuned(kernel, n, *args, **meta):
    # the interpreter has no benchmarker to autotune with: the first configuration
    if INTERPRET:
        cfg = _POINTWISE_CONFIGS[0].kwargs
        return kernel.fn[(triton.cdiv(n, cfg["BLOCK"]),)](*args, **meta, **cfg)
    return kernel[lambda m: (triton.cdiv(n, m["BLOCK"]),)](*args, **meta)


def _pointwise(x, y, op):
    _check(x)
    out = torch.empty_like(x)
    n = x.numel()
    if n == 0:
        return out
    half = x.element_size() == 2
    if y is not None:
        y = y.contiguous()
        assert y.numel() == n or (y.dim() == 1 and y.numel() == x.shape[-1]), \
            "y must have x's shape or be a vector of x's last axis"
    if y is not None and y.numel() != n:   # bias broadcast along the rows
        cols = y.numel()
        rows = n // cols
        block_n = min(triton.next_power_of_2(cols), 1024)
        block_m = max(1, 4096 // block_n)
        assert triton.cdiv(rows, block_m) <= 65535, "too many rows for grid axis 1"
        _rowwise_kernel[(triton.cdiv(cols, block_n), triton.cdiv(rows, block_m))](
            x, y, out, rows, cols, OP=op, HALF=half, BLOCK_M=block_m, BLOCK_N=block_n, num_warps=8)
        return out
    _launch_autotuned(_pointwise_kernel, n, x, y if y is not None else x, out, n, OP=op, HAS_Y=y is not None,
                      HALF=half)
    return out


@triton.autotune(configs=_POINTWISE_CONFIGS, key=["n", "HAS_Y"])
@triton.jit
def _pointwise_bwd_kernel(g_ptr, x_ptr, y_ptr, dx_ptr, n, OP: tl.constexpr, HAS_Y: tl.constexpr,
                          HALF: tl.constexpr, BLOCK: tl.constexpr):
    # dx = g act'(x [+ y]), y of x's shape
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    if HAS_Y:
        v += tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    g = tl.load(g_ptr + offs, mask=mask).to(tl.float32)
    tl.store(dx_ptr + offs, (g * act_grad(v, OP, HALF)).to(dx_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rowwise_bwd_kernel(g_ptr, x_ptr, y_ptr, dx_ptr, part_ptr, count_ptr, dy_ptr, rows, cols, OP: tl.constexpr,
                        HALF: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_G: tl.constexpr,
                        EVICT: tl.constexpr, STAGES: tl.constexpr, FULL: tl.constexpr):
    # dx = g act'(x + y) with x, g (rows, cols) and y (cols,), and dy = the sum of dx over
    # the rows, in one launch. Grid (column blocks, row groups): row group j takes the
    # tiles of rows j BLOCK_M, (j + groups) BLOCK_M, ...; each thread adds its elements of
    # dx into an fp32 tile in registers (no exchange between threads inside the loop),
    # which is summed over its rows once at the end into the group's partial row of part
    # (groups, cols); the column block's last program sums those rows (column_sums_done).
    # STAGES 0: the next tile's x and g are loaded before this tile's math, so loads stay
    # in flight through it; S >= 1: a plain loop, software-pipelined by Triton over S
    # stages (tl.range). EVICT: streaming hints on the loads of x, g and the store of dx.
    # FULL (rows a multiple of BLOCK_M, cols of BLOCK_N): every tile is whole, so loads,
    # stores and sums carry no masks, and the prefetch past the last tile re-reads the
    # group's own last rows (clamped) instead of a masked load.
    c = tl.program_id(0).to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    cmask = c < cols
    y = tl.load(y_ptr + c, mask=cmask).to(tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    step = tl.num_programs(1) * BLOCK_M
    r = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M).to(tl.int64)
    if FULL:
        offs = r[:, None] * cols + c[None, :]
        xv = stream_load(x_ptr + offs, None, EVICT)
        gv = stream_load(g_ptr + offs, None, EVICT)
        for _ in range(tl.program_id(1) * BLOCK_M, rows, step):
            rn = tl.minimum(r + step, rows - BLOCK_M + tl.arange(0, BLOCK_M))
            offs_n = rn[:, None] * cols + c[None, :]
            xn = stream_load(x_ptr + offs_n, None, EVICT)
            gn = stream_load(g_ptr + offs_n, None, EVICT)
            d = gv.to(tl.float32) * act_grad(xv.to(tl.float32) + y[None, :], OP, HALF)
            stream_store(dx_ptr + offs, d.to(dx_ptr.dtype.element_ty), None, EVICT)
            acc += d
            offs, xv, gv = offs_n, xn, gn
            r = r + step
    elif STAGES == 0:
        mask = (r[:, None] < rows) & cmask[None, :]
        offs = r[:, None] * cols + c[None, :]
        xv = stream_load(x_ptr + offs, mask, EVICT)
        gv = stream_load(g_ptr + offs, mask, EVICT)
        for _ in range(tl.program_id(1) * BLOCK_M, rows, step):
            rn = r + step
            mask_n = (rn[:, None] < rows) & cmask[None, :]
            offs_n = rn[:, None] * cols + c[None, :]
            xn = stream_load(x_ptr + offs_n, mask_n, EVICT)
            gn = stream_load(g_ptr + offs_n, mask_n, EVICT)
            d = gv.to(tl.float32) * act_grad(xv.to(tl.float32) + y[None, :], OP, HALF)
            stream_store(dx_ptr + offs, d.to(dx_ptr.dtype.element_ty), mask, EVICT)
            acc += tl.where(mask, d, 0.0)
            r, mask, offs, xv, gv = rn, mask_n, offs_n, xn, gn
    else:
        for r0 in tl.range(tl.program_id(1) * BLOCK_M, rows, step, num_stages=STAGES):
            rr = r0 + tl.arange(0, BLOCK_M).to(tl.int64)
            mask = (rr[:, None] < rows) & cmask[None, :]
            offs = rr[:, None] * cols + c[None, :]
            xv = stream_load(x_ptr + offs, mask, EVICT)
            gv = stream_load(g_ptr + offs, mask, EVICT)
            d = gv.to(tl.float32) * act_grad(xv.to(tl.float32) + y[None, :], OP, HALF)
            stream_store(dx_ptr + offs, d.to(dx_ptr.dtype.element_ty), mask, EVICT)
            acc += tl.where(mask, d, 0.0)
    column_sums_done(tl.sum(acc, axis=0), c, cmask, cols, part_ptr, count_ptr, dy_ptr, BLOCK_G, BLOCK_N)


# The bias kernel's launch by bytes an element (16-bit and 32-bit storage): warps a program,
# elements a thread, threads across a row (16 bytes each), loop form (_pointwise_backward).
# In 16-bit storage a program's tile is 8 rows x 512 columns (64 threads x 16 B: 1 KB of
# each row contiguous) and each thread has 32 elements of x and of g in flight before its
# math; bytes in flight, not occupancy, set the kernel's bandwidth
# (benchmarks/kernels_backward_tune.py measures the choices; benchmarks/results/h100-kernels-backward).
ROWWISE_LAUNCH = {
    2: dict(warps=4, per_thread=32, threads_across=64, stages=0),
    4: dict(warps=4, per_thread=16, threads_across=32, stages=0),
}


def _pointwise_backward(g, x, y, op, *, warps=None, per_thread=None, threads_across=None, waves=1.0,
                        tiles_per_group=None, evict=False, stages=None, full=True, info=None):
    """(dx, dy) of out = act(x [+ y]): dy is dx for a y of x's shape, the sum of dx over
    the rows for a bias.

    The keywords set the bias kernel's launch (_rowwise_bwd_kernel): warps a program,
    per_thread elements a thread, threads_across threads across a row (of 16 bytes each)
    (None: ROWWISE_LAUNCH's for x's element size), row groups (waves of programs, one by
    default, or tiles_per_group row tiles each), evict (streaming hints) and stages (0: the next tile prefetched by hand;
    S >= 1: software-pipelined over S stages), full (the unmasked loop where every tile is
    whole, with stages 0; False: the masked loop). `info`, a dict, receives the launch's
    geometry (and on the GPU the binary's registers)."""
    _check(g, x)
    assert g.shape == x.shape and g.dtype == x.dtype, "the gradient must have x's shape and dtype"
    dx = torch.empty_like(x)
    n = x.numel()
    half = x.element_size() == 2
    if y is not None:
        y = y.contiguous()
    if y is None or y.numel() == n:
        if n:
            _launch_autotuned(_pointwise_bwd_kernel, n, g, x, y if y is not None else x, dx, n, OP=op,
                              HAS_Y=y is not None, HALF=half)
        return dx, (dx if y is not None else None)
    assert y.dim() == 1 and y.numel() == x.shape[-1], "y must have x's shape or be a vector of x's last axis"
    dy = torch.empty_like(y)
    if n == 0:
        return dx, dy.zero_()
    cols = y.numel()
    rows = n // cols
    launch = ROWWISE_LAUNCH[4 if x.element_size() >= 4 else 2]
    warps, per_thread = warps or launch["warps"], per_thread or launch["per_thread"]
    threads_across = threads_across or launch["threads_across"]
    stages = launch["stages"] if stages is None else stages
    R.power_of_2(warps=warps, per_thread=per_thread, threads_across=threads_across)
    block_n, block_g = R.column_blocks(cols, 16 // x.element_size(), threads_across)
    block_m = max(1, per_thread * 32 * warps // block_n)
    col_blocks = triton.cdiv(cols, block_n)
    count = R.counters(x.device, col_blocks)
    whole = bool(full) and stages == 0 and rows % block_m == 0 and cols % block_n == 0
    meta = dict(OP=op, HALF=half, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_G=block_g, EVICT=evict, STAGES=stages,
                FULL=whole)
    occ = {"per_sm": 1} if INTERPRET else R.occupancy(
        _rowwise_bwd_kernel, ("rowwise", x.dtype, op, block_n, block_m, warps, evict, stages, whole, cols % 16,
                              rows % 16, x.device),
        (g, x, y, dx, R.f32_dummy(x.device), count, dy, rows, cols), meta, warps, x.device)
    row_tiles = triton.cdiv(rows, block_m)
    groups = R.row_groups(row_tiles, col_blocks, occ["per_sm"], x.device, waves, tiles_per_group)
    part = torch.empty(groups, cols, device=x.device, dtype=torch.float32)
    _rowwise_bwd_kernel[(col_blocks, groups)](g, x, y, dx, part, count, dy, rows, cols, **meta, num_warps=warps)
    if info is not None:
        info.update(occ, block_m=block_m, block_n=block_n, col_blocks=col_blocks, row_tiles=row_tiles, groups=groups,
                    full=whole)
    return dx, dy


Pointwise = pointwise_function("TritonPointwise", _pointwise, _pointwise_backward)


def _apply(x, y, op):
    return Pointwise.apply(x, y, op) if needs_grad(x, y) else _pointwise(x, y, op)


def gelu(x, approximate="tanh"):
    return _apply(x, None, op_code(approximate))


def bias_gelu(x, bias, approximate="none"):
    return _apply(x, bias, op_code(approximate))


def add_relu(x, y):
    return _apply(x, y, RELU)


@triton.jit
def _softmax_kernel(x_ptr, out_ptr, ncols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < ncols
    v = tl.load(x_ptr + row * ncols + cols, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(out_ptr + row * ncols + cols, (e / tl.sum(e, axis=0)).to(out_ptr.dtype.element_ty),
             mask=mask)


def softmax(x):
    no_backward("Triton softmax", x)
    _check(x)
    ncols = x.shape[-1]
    rows = x.numel() // ncols
    out = torch.empty_like(x)
    block = triton.next_power_of_2(ncols)
    warps = 4 if block <= 1024 else 8 if block <= 4096 else 16
    _softmax_kernel[(rows,)](x, out, ncols, BLOCK=block, num_warps=warps)
    return out
