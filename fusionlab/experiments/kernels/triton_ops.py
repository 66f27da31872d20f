"""The kernels in Triton. Math in fp32 whatever the storage dtype; one read of every
input and one write of every output, so each kernel's floor is the copy bandwidth.

gelu, bias_gelu, add_relu and lstm_gates have a hand-written backward (train mode;
functions.py wires forward and backward kernels into autograd.Functions, reference.py
has the same formulas in PyTorch ops): it reads the saved inputs and the output's
gradient once and writes the inputs' gradients once, recomputing x + y or the gates; a
bias's gradient (the sum over rows, accumulated in fp32) is finished in the same launch
(triton_reduce.py: one wave of programs, per-row-group partial rows, the last program of
each column block sums them). softmax is forward-only.

TRITON_INTERPRET=1 runs the kernels on CPU tensors through Triton's interpreter (tests:
fp32 only, as the 16-bit paths use PTX); there, the autotuned kernels take their first
configuration.
"""
import os

import torch
import triton
import triton.language as tl

from fusionlab.experiments.kernels import triton_reduce as R
from fusionlab.experiments.kernels.triton_reduce import column_sums_done
from fusionlab.experiments.kernels.functions import (GELU_ERF, GELU_TANH, RELU, lstm_function, needs_grad,
                                                     no_backward, op_code, pointwise_function)

__all__ = ["GELU_TANH", "GELU_ERF", "RELU", "gelu", "bias_gelu", "add_relu", "softmax", "lstm_gates",
           "Pointwise", "LstmGates"]

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"


def _check(*ts):
    for t in ts:
        assert (t.is_cuda or INTERPRET) and t.is_contiguous(), "inputs must be contiguous CUDA tensors"


_POINTWISE_CONFIGS = [
    triton.Config({"BLOCK": 1024}, num_warps=4),
    triton.Config({"BLOCK": 2048}, num_warps=8),
    triton.Config({"BLOCK": 4096}, num_warps=8),
    triton.Config({"BLOCK": 8192}, num_warps=16),
]


@triton.jit
def _sigmoid(v):
    # 1 / (1 + exp(-v)) with the fast (non-IEEE) divide: exact limits 0 and 1
    return tl.math.fdiv(1.0, 1.0 + tl.exp(-v), ieee_rounding=False)


# 16-bit storage: the hardware's approximate instructions (one MUFU op each, no range
# fix-ups). Their error (rel 2^-11 for tanh.approx, a few ulp for ex2/rcp) is far below
# bf16/fp16 rounding (2^-8 / 2^-11 relative, and the check's tolerance); fp32 keeps the
# accurate paths above.
@triton.jit
def _ptx_f32(v, INSTR: tl.constexpr):
    # one PTX instruction on an fp32 value: "INSTR out, in;"
    return tl.inline_asm_elementwise(INSTR + " $0, $1;", "=r,r", [v], dtype=tl.float32, is_pure=True, pack=1)


@triton.jit
def _tanh_fast(v):
    return _ptx_f32(v, "tanh.approx.f32")


@triton.jit
def _sigmoid_fast(v):
    # sigmoid(v) = 0.5 + 0.5 tanh(v / 2)
    return 0.5 + 0.5 * _tanh_fast(0.5 * v)


@triton.jit
def _sigmoid_of(v, HALF: tl.constexpr):
    if HALF:
        return _sigmoid_fast(v)
    return _sigmoid(v)


@triton.jit
def _tanh_of(v, HALF: tl.constexpr):
    if HALF:
        return _tanh_fast(v)
    return 2.0 * _sigmoid(2.0 * v) - 1.0


@triton.jit
def _gelu_erf_fast(v):
    # v Phi(v), Phi from erf by Abramowitz & Stegun 7.1.25 (abs error 2.5e-5, so at most
    # 1.3e-5 |v| in GELU). With z = |v| / sqrt(2), t = 1 / (1 + 0.47047 z):
    # q = (1 - erf(z)) / 2 = t (a1 + t (a2 + t a3)) exp(-z^2) / 2, and Phi(v) = 1 - q for
    # v >= 0, q for v < 0.
    t = _ptx_f32(1.0 + 0.33267253 * tl.abs(v), "rcp.approx.ftz.f32")  # 0.47047 / sqrt(2)
    p = t * (0.1740121 + t * (-0.0479399 + t * 0.3739278))  # A&S a1..a3 halved
    vq = v * p * _ptx_f32(v * v * -0.7213475204444817, "ex2.approx.ftz.f32")  # exp(-v^2/2) = 2^(-v^2 log2(e)/2)
    return tl.where(v < 0, vq, v - vq)


@triton.jit
def _act(v, OP: tl.constexpr, HALF: tl.constexpr):
    if OP == 0:  # 0.5 v (1 + tanh(a)) = v sigmoid(2a)
        return v * _sigmoid(1.5957691216057308 * (v + 0.044715 * v * v * v))
    elif OP == 1:
        if HALF:
            return _gelu_erf_fast(v)
        return 0.5 * v * (1.0 + tl.erf(v * 0.7071067811865476))
    else:
        return tl.maximum(v, 0.0)


@triton.jit
def _gelu_erf_grad_fast(v):
    # Phi(v) + v phi(v) with _gelu_erf_fast's Phi: q = Phi(-|v|) = p exp(-v^2/2), and
    # phi(v) = exp(-v^2/2) / sqrt(2 pi) from the same ex2
    t = _ptx_f32(1.0 + 0.33267253 * tl.abs(v), "rcp.approx.ftz.f32")
    p = t * (0.1740121 + t * (-0.0479399 + t * 0.3739278))
    e = _ptx_f32(v * v * -0.7213475204444817, "ex2.approx.ftz.f32")
    q = p * e
    return tl.where(v < 0, q, 1.0 - q) + v * e * 0.3989422804014327


@triton.jit
def _act_grad(v, OP: tl.constexpr, HALF: tl.constexpr):
    # d act / dv (reference.py derives each)
    if OP == 0:  # s + v s (1 - s) u', s = sigmoid(u), u = K (v + 0.044715 v^3), u' = K + 3 0.044715 K v^2
        s = _sigmoid(1.5957691216057308 * (v + 0.044715 * v * v * v))
        return s + v * s * (1.0 - s) * (1.5957691216057308 + 0.21406444881780073 * v * v)
    elif OP == 1:  # Phi(v) + v phi(v)
        if HALF:
            return _gelu_erf_grad_fast(v)
        return 0.5 * (1.0 + tl.erf(v * 0.7071067811865476)) + v * 0.3989422804014327 * tl.exp(-0.5 * v * v)
    else:
        return tl.where(v > 0, 1.0, 0.0)


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
    tl.store(out_ptr + offs, _act(v, OP, HALF).to(out_ptr.dtype.element_ty), mask=mask)


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
    tl.store(out_ptr + offs, _act(v, OP, HALF).to(out_ptr.dtype.element_ty), mask=mask)


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
    tl.store(dx_ptr + offs, (g * _act_grad(v, OP, HALF)).to(dx_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rowwise_bwd_kernel(g_ptr, x_ptr, y_ptr, dx_ptr, part_ptr, count_ptr, dy_ptr, rows, cols, OP: tl.constexpr,
                        HALF: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_G: tl.constexpr):
    # dx = g act'(x + y) with x, g (rows, cols) and y (cols,), and dy = the sum of dx over
    # the rows, in one launch. Grid (column blocks, row groups), one wave: row group j takes
    # the tiles of rows j BLOCK_M, (j + groups) BLOCK_M, ...; each thread adds its elements
    # of dx into an fp32 tile in registers (no exchange between threads inside the loop),
    # which is summed over its rows once at the end into the group's partial row of part
    # (groups, cols); the column block's last program sums those rows (column_sums_done).
    # The next tile's x and g are loaded before this tile's math, and a thread holds 16
    # elements a tile, so loads stay in flight through the math. What the bf16 kernel is
    # bound by (ncu, H100): the bytes in flight per SM; a sum across the tile's rows every
    # iteration (shared memory and barriers: barrier and MIO-throttle stalls) holds it to
    # 62% of peak DRAM throughput, a second launch (torch's sum of the partial rows, then
    # a cast) adds 8-14 us to a 140 us kernel.
    c = tl.program_id(0).to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    cmask = c < cols
    y = tl.load(y_ptr + c, mask=cmask).to(tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    step = tl.num_programs(1) * BLOCK_M
    # the current tile's x and g; the next tile's are loaded before this one's math
    r = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M).to(tl.int64)
    mask = (r[:, None] < rows) & cmask[None, :]
    offs = r[:, None] * cols + c[None, :]
    xv = tl.load(x_ptr + offs, mask=mask)
    gv = tl.load(g_ptr + offs, mask=mask)
    for _ in range(tl.program_id(1) * BLOCK_M, rows, step):
        rn = r + step
        mask_n = (rn[:, None] < rows) & cmask[None, :]
        offs_n = rn[:, None] * cols + c[None, :]
        xn = tl.load(x_ptr + offs_n, mask=mask_n)
        gn = tl.load(g_ptr + offs_n, mask=mask_n)
        d = gv.to(tl.float32) * _act_grad(xv.to(tl.float32) + y[None, :], OP, HALF)
        tl.store(dx_ptr + offs, d.to(dx_ptr.dtype.element_ty), mask=mask)
        acc += tl.where(mask, d, 0.0)
        r, mask, offs, xv, gv = rn, mask_n, offs_n, xn, gn
    column_sums_done(tl.sum(acc, axis=0), c, cmask, cols, part_ptr, count_ptr, dy_ptr, BLOCK_G, BLOCK_N)


def _pointwise_backward(g, x, y, op):
    """(dx, dy) of out = act(x [+ y]): dy is dx for a y of x's shape, the sum of dx over
    the rows for a bias."""
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
    warps = 4
    block_n, block_g = R.column_blocks(cols, 16 // x.element_size(), 32)
    block_m = max(1, 16 * 32 * warps // block_n)   # 16 elements a thread
    col_blocks = triton.cdiv(cols, block_n)
    count = R.counters(x.device, col_blocks)
    meta = dict(OP=op, HALF=half, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_G=block_g)
    per_sm = 1 if INTERPRET else R.programs_per_sm(
        _rowwise_bwd_kernel, ("rowwise", x.dtype, op, block_n, block_m, warps, cols % 16, rows % 16, x.device),
        (g, x, y, dx, R.f32_dummy(x.device), count, dy, rows, cols), meta, warps, x.device)
    groups = R.row_groups(triton.cdiv(rows, block_m), col_blocks, per_sm, x.device)
    part = torch.empty(groups, cols, device=x.device, dtype=torch.float32)
    _rowwise_bwd_kernel[(col_blocks, groups)](g, x, y, dx, part, count, dy, rows, cols, **meta, num_warps=warps)
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


@triton.jit
def _lstm_kernel(gx_ptr, gh_ptr, b_ptr, c_ptr, h_out, c_out, H, HALF: tl.constexpr,
                 BLOCK: tl.constexpr):
    # grid (column blocks, rows): no division or modulo per element
    row = tl.program_id(1).to(tl.int64)
    col = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = col < H
    g0 = row * 4 * H + col

    gi = (tl.load(gx_ptr + g0, mask=mask).to(tl.float32) + tl.load(gh_ptr + g0, mask=mask).to(tl.float32)
          + tl.load(b_ptr + col, mask=mask).to(tl.float32))
    gf = (tl.load(gx_ptr + g0 + H, mask=mask).to(tl.float32) + tl.load(gh_ptr + g0 + H, mask=mask).to(tl.float32)
          + tl.load(b_ptr + col + H, mask=mask).to(tl.float32))
    gg = (tl.load(gx_ptr + g0 + 2 * H, mask=mask).to(tl.float32)
          + tl.load(gh_ptr + g0 + 2 * H, mask=mask).to(tl.float32)
          + tl.load(b_ptr + col + 2 * H, mask=mask).to(tl.float32))
    go = (tl.load(gx_ptr + g0 + 3 * H, mask=mask).to(tl.float32)
          + tl.load(gh_ptr + g0 + 3 * H, mask=mask).to(tl.float32)
          + tl.load(b_ptr + col + 3 * H, mask=mask).to(tl.float32))
    c = tl.load(c_ptr + row * H + col, mask=mask).to(tl.float32)
    c_new = _sigmoid_of(gf, HALF) * c + _sigmoid_of(gi, HALF) * _tanh_of(gg, HALF)
    h_new = _sigmoid_of(go, HALF) * _tanh_of(c_new, HALF)
    tl.store(c_out + row * H + col, c_new.to(c_out.dtype.element_ty), mask=mask)
    tl.store(h_out + row * H + col, h_new.to(h_out.dtype.element_ty), mask=mask)


def _lstm_gates(gx, gh, bias, c):
    _check(gx, gh, bias, c)
    B, H = c.shape
    assert gx.shape == gh.shape == (B, 4 * H) and bias.shape == (4 * H,)
    h_new, c_new = torch.empty_like(c), torch.empty_like(c)
    if B * H == 0:
        return h_new, c_new
    assert B <= 65535, f"lstm_gates: batch {B} > 65535 (grid axis 1)"
    block = min(triton.next_power_of_2(H), 1024)
    _lstm_kernel[(triton.cdiv(H, block), B)](gx, gh, bias, c, h_new, c_new, H,
                                             HALF=c.element_size() == 2, BLOCK=block,
                                             num_warps=4 if block <= 512 else 8)
    return h_new, c_new


@triton.jit
def _lstm_bwd_kernel(gx_ptr, gh_ptr, b_ptr, c_ptr, dh_ptr, dc_ptr, dg_ptr, dc_out, part_ptr, count_ptr, db_ptr, B, H,
                     HALF: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_G: tl.constexpr):
    # the gradients of _lstm_kernel's (h, c'), its gates recomputed (reference.py derives
    # them): dgates (B, 4H), dc (B, H), and dbias = the sum of dgates over the rows, in one
    # launch. Grid (column blocks, row groups), one wave: row group j takes the tiles of rows
    # j BLOCK_M, (j + groups) BLOCK_M, ...; each thread adds its elements of the four gates'
    # gradients into fp32 tiles in registers, summed over their rows once at the end into
    # the group's partial row of part (groups, 4H); the column block's last program sums
    # those rows (column_sums_done, once per gate, one counter each). 4 elements a thread
    # (8 bytes in bf16): the 11 loads of a row stay in registers at 37% occupancy.
    col = tl.program_id(0).to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    cm = col < H
    bi = tl.load(b_ptr + col, mask=cm).to(tl.float32)[None, :]
    bf = tl.load(b_ptr + col + H, mask=cm).to(tl.float32)[None, :]
    bg = tl.load(b_ptr + col + 2 * H, mask=cm).to(tl.float32)[None, :]
    bo = tl.load(b_ptr + col + 3 * H, mask=cm).to(tl.float32)[None, :]
    acc_i = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc_f = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc_g = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc_o = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for r0 in range(tl.program_id(1) * BLOCK_M, B, tl.num_programs(1) * BLOCK_M):
        r = r0 + tl.arange(0, BLOCK_M).to(tl.int64)
        mask = (r[:, None] < B) & cm[None, :]
        g0 = r[:, None] * 4 * H + col[None, :]
        i = r[:, None] * H + col[None, :]
        gi = tl.load(gx_ptr + g0, mask=mask).to(tl.float32) + tl.load(gh_ptr + g0, mask=mask).to(tl.float32) + bi
        gf = (tl.load(gx_ptr + g0 + H, mask=mask).to(tl.float32)
              + tl.load(gh_ptr + g0 + H, mask=mask).to(tl.float32) + bf)
        gg = (tl.load(gx_ptr + g0 + 2 * H, mask=mask).to(tl.float32)
              + tl.load(gh_ptr + g0 + 2 * H, mask=mask).to(tl.float32) + bg)
        go = (tl.load(gx_ptr + g0 + 3 * H, mask=mask).to(tl.float32)
              + tl.load(gh_ptr + g0 + 3 * H, mask=mask).to(tl.float32) + bo)
        c = tl.load(c_ptr + i, mask=mask).to(tl.float32)
        dh = tl.load(dh_ptr + i, mask=mask).to(tl.float32)
        si = _sigmoid_of(gi, HALF)
        sf = _sigmoid_of(gf, HALF)
        tg = _tanh_of(gg, HALF)
        so = _sigmoid_of(go, HALF)
        tc = _tanh_of(sf * c + si * tg, HALF)
        dct = tl.load(dc_ptr + i, mask=mask).to(tl.float32) + dh * so * (1.0 - tc * tc)
        d_i = tl.where(mask, dct * tg * si * (1.0 - si), 0.0)
        d_f = tl.where(mask, dct * c * sf * (1.0 - sf), 0.0)
        d_g = tl.where(mask, dct * si * (1.0 - tg * tg), 0.0)
        d_o = tl.where(mask, dh * tc * so * (1.0 - so), 0.0)
        tl.store(dg_ptr + g0, d_i.to(dg_ptr.dtype.element_ty), mask=mask)
        tl.store(dg_ptr + g0 + H, d_f.to(dg_ptr.dtype.element_ty), mask=mask)
        tl.store(dg_ptr + g0 + 2 * H, d_g.to(dg_ptr.dtype.element_ty), mask=mask)
        tl.store(dg_ptr + g0 + 3 * H, d_o.to(dg_ptr.dtype.element_ty), mask=mask)
        tl.store(dc_out + i, (dct * sf).to(dc_out.dtype.element_ty), mask=mask)
        acc_i += d_i
        acc_f += d_f
        acc_g += d_g
        acc_o += d_o
    # four gates: four column blocks' worth of counters (gate k's at k * column blocks)
    nblk = tl.num_programs(0)
    column_sums_done(tl.sum(acc_i, axis=0), col, cm, 4 * H, part_ptr, count_ptr, db_ptr, BLOCK_G, BLOCK_N)
    column_sums_done(tl.sum(acc_f, axis=0), col + H, cm, 4 * H, part_ptr, count_ptr + nblk, db_ptr, BLOCK_G,
                      BLOCK_N)
    column_sums_done(tl.sum(acc_g, axis=0), col + 2 * H, cm, 4 * H, part_ptr, count_ptr + 2 * nblk, db_ptr,
                      BLOCK_G, BLOCK_N)
    column_sums_done(tl.sum(acc_o, axis=0), col + 3 * H, cm, 4 * H, part_ptr, count_ptr + 3 * nblk, db_ptr,
                      BLOCK_G, BLOCK_N)


def _lstm_gates_backward(gx, gh, bias, c, dh, dc):
    """(dgates, dbias, dc_prev) of (h, c') = lstm_gates(gx, gh, bias, c)."""
    _check(gx, gh, bias, c, dh, dc)
    B, H = c.shape
    assert dh.shape == dc.shape == c.shape, "dh, dc must have c's shape"
    dgates, dc_prev, dbias = torch.empty_like(gx), torch.empty_like(c), torch.empty_like(bias)
    if B * H == 0:
        return dgates, dbias.zero_(), dc_prev
    warps = 8 if c.element_size() == 2 else 4
    block_n, block_g = R.column_blocks(H, 4, 16)
    block_m = max(1, 4 * 32 * warps // block_n)   # 4 elements a thread
    col_blocks = triton.cdiv(H, block_n)
    count = R.counters(c.device, 4 * col_blocks)
    meta = dict(HALF=c.element_size() == 2, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_G=block_g)
    args = (gx, gh, bias, c, dh, dc, dgates, dc_prev)
    per_sm = 1 if INTERPRET else R.programs_per_sm(
        _lstm_bwd_kernel, ("lstm", c.dtype, block_n, block_m, warps, H % 16, B % 16, c.device),
        args + (R.f32_dummy(c.device), count, dbias, B, H), meta, warps, c.device)
    groups = R.row_groups(triton.cdiv(B, block_m), col_blocks, per_sm, c.device)
    part = torch.empty(groups, 4 * H, device=c.device, dtype=torch.float32)
    _lstm_bwd_kernel[(col_blocks, groups)](*args, part, count, dbias, B, H, **meta, num_warps=warps)
    return dgates, dbias, dc_prev


LstmGates = lstm_function("TritonLstmGates", _lstm_gates, _lstm_gates_backward)


def lstm_gates(gx, gh, bias, c):
    if needs_grad(gx, gh, bias, c):
        return LstmGates.apply(gx, gh, bias, c)
    return _lstm_gates(gx, gh, bias, c)
