"""The LSTM cell's gate math in Triton: (h, c') = lstm_gates(gx, gh, bias, c) after the
cell's two matmuls, and its hand-written backward (dgates, dbias, dc) in one launch, the
bias gradient finished in the kernel (triton_reduce.py). Math in fp32 whatever the
storage dtype; triton_ops exports `lstm_gates` and `LstmGates` with the other kernels.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from fusionlab.experiments.kernels import triton_reduce as R
from fusionlab.experiments.kernels.functions import lstm_function, needs_grad
from fusionlab.experiments.kernels.triton_math import sigmoid_of, stream_load, stream_store, tanh_of
from fusionlab.experiments.kernels.triton_reduce import column_sums_done

__all__ = ["lstm_gates", "LstmGates"]


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
    c_new = sigmoid_of(gf, HALF) * c + sigmoid_of(gi, HALF) * tanh_of(gg, HALF)
    h_new = sigmoid_of(go, HALF) * tanh_of(c_new, HALF)
    tl.store(c_out + row * H + col, c_new.to(c_out.dtype.element_ty), mask=mask)
    tl.store(h_out + row * H + col, h_new.to(h_out.dtype.element_ty), mask=mask)


def _lstm_gates(gx, gh, bias, c):
    R.check_inputs(gx, gh, bias, c)
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
def _lstm_bwd_tile(gx_ptr, gh_ptr, c_ptr, dh_ptr, dc_ptr, dg_ptr, dc_out, r, col, cm, bi, bf, bg, bo, B, H,
                   HALF: tl.constexpr, EVICT: tl.constexpr):
    # one tile (rows r, columns col): dgates and dc written, the four gates' gradients
    # returned (0 outside the mask) for the bias sums
    mask = (r[:, None] < B) & cm[None, :]
    g0 = r[:, None] * 4 * H + col[None, :]
    i = r[:, None] * H + col[None, :]
    gi = (stream_load(gx_ptr + g0, mask, EVICT).to(tl.float32)
          + stream_load(gh_ptr + g0, mask, EVICT).to(tl.float32) + bi)
    gf = (stream_load(gx_ptr + g0 + H, mask, EVICT).to(tl.float32)
          + stream_load(gh_ptr + g0 + H, mask, EVICT).to(tl.float32) + bf)
    gg = (stream_load(gx_ptr + g0 + 2 * H, mask, EVICT).to(tl.float32)
          + stream_load(gh_ptr + g0 + 2 * H, mask, EVICT).to(tl.float32) + bg)
    go = (stream_load(gx_ptr + g0 + 3 * H, mask, EVICT).to(tl.float32)
          + stream_load(gh_ptr + g0 + 3 * H, mask, EVICT).to(tl.float32) + bo)
    c = stream_load(c_ptr + i, mask, EVICT).to(tl.float32)
    dh = stream_load(dh_ptr + i, mask, EVICT).to(tl.float32)
    si = sigmoid_of(gi, HALF)
    sf = sigmoid_of(gf, HALF)
    tg = tanh_of(gg, HALF)
    so = sigmoid_of(go, HALF)
    tc = tanh_of(sf * c + si * tg, HALF)
    dct = stream_load(dc_ptr + i, mask, EVICT).to(tl.float32) + dh * so * (1.0 - tc * tc)
    d_i = tl.where(mask, dct * tg * si * (1.0 - si), 0.0)
    d_f = tl.where(mask, dct * c * sf * (1.0 - sf), 0.0)
    d_g = tl.where(mask, dct * si * (1.0 - tg * tg), 0.0)
    d_o = tl.where(mask, dh * tc * so * (1.0 - so), 0.0)
    stream_store(dg_ptr + g0, d_i.to(dg_ptr.dtype.element_ty), mask, EVICT)
    stream_store(dg_ptr + g0 + H, d_f.to(dg_ptr.dtype.element_ty), mask, EVICT)
    stream_store(dg_ptr + g0 + 2 * H, d_g.to(dg_ptr.dtype.element_ty), mask, EVICT)
    stream_store(dg_ptr + g0 + 3 * H, d_o.to(dg_ptr.dtype.element_ty), mask, EVICT)
    stream_store(dc_out + i, (dct * sf).to(dc_out.dtype.element_ty), mask, EVICT)
    return d_i, d_f, d_g, d_o


@triton.jit
def _lstm_bwd_kernel(gx_ptr, gh_ptr, b_ptr, c_ptr, dh_ptr, dc_ptr, dg_ptr, dc_out, part_ptr, count_ptr, db_ptr, B, H,
                     HALF: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_G: tl.constexpr,
                     EVICT: tl.constexpr, STAGES: tl.constexpr, ONE_COUNTER: tl.constexpr):
    # the gradients of _lstm_kernel's (h, c'), its gates recomputed (reference.py derives
    # them): dgates (B, 4H), dc (B, H), and dbias = the sum of dgates over the rows, in one
    # launch. Grid (column blocks, row groups): row group j takes the tiles of rows
    # j BLOCK_M, (j + groups) BLOCK_M, ...; each thread adds its elements of the four gates'
    # gradients into fp32 tiles in registers, summed over their rows once at the end into
    # the group's partial row of part (groups, 4H); the column block's last program sums
    # those rows (column_sums_done). STAGES 0: a plain loop; S >= 1: tl.range's software
    # pipelining over S stages. EVICT: streaming hints on every load and store of a tile.
    # ONE_COUNTER: the four gates' sums as one row of 4 BLOCK_N, one counter and one pass
    # of the last program over the partial rows (BLOCK_G of them at a time); otherwise one
    # column_sums_done a gate (gate k's counters at k * column blocks).
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
    start = tl.program_id(1) * BLOCK_M
    step = tl.num_programs(1) * BLOCK_M
    if STAGES == 0:
        for r0 in range(start, B, step):
            d_i, d_f, d_g, d_o = _lstm_bwd_tile(gx_ptr, gh_ptr, c_ptr, dh_ptr, dc_ptr, dg_ptr, dc_out,
                                                r0 + tl.arange(0, BLOCK_M).to(tl.int64), col, cm, bi, bf, bg, bo,
                                                B, H, HALF, EVICT)
            acc_i += d_i
            acc_f += d_f
            acc_g += d_g
            acc_o += d_o
    else:
        for r0 in tl.range(start, B, step, num_stages=STAGES):
            d_i, d_f, d_g, d_o = _lstm_bwd_tile(gx_ptr, gh_ptr, c_ptr, dh_ptr, dc_ptr, dg_ptr, dc_out,
                                                r0 + tl.arange(0, BLOCK_M).to(tl.int64), col, cm, bi, bf, bg, bo,
                                                B, H, HALF, EVICT)
            acc_i += d_i
            acc_f += d_f
            acc_g += d_g
            acc_o += d_o
    s_i = tl.sum(acc_i, axis=0)
    s_f = tl.sum(acc_f, axis=0)
    s_g = tl.sum(acc_g, axis=0)
    s_o = tl.sum(acc_o, axis=0)
    if ONE_COUNTER:
        k = tl.arange(0, 4)[:, None]
        s4 = tl.where(k == 0, s_i[None, :], tl.where(k == 1, s_f[None, :], tl.where(k == 2, s_g[None, :],
                                                                                      s_o[None, :])))
        c4 = col[None, :] + k * H
        m4 = cm[None, :] & (k < 4)
        column_sums_done(tl.reshape(s4, (4 * BLOCK_N,)), tl.reshape(c4, (4 * BLOCK_N,)),
                         tl.reshape(m4, (4 * BLOCK_N,)), 4 * H, part_ptr, count_ptr, db_ptr, BLOCK_G, 4 * BLOCK_N)
    else:
        nblk = tl.num_programs(0)
        column_sums_done(s_i, col, cm, 4 * H, part_ptr, count_ptr, db_ptr, BLOCK_G, BLOCK_N)
        column_sums_done(s_f, col + H, cm, 4 * H, part_ptr, count_ptr + nblk, db_ptr, BLOCK_G, BLOCK_N)
        column_sums_done(s_g, col + 2 * H, cm, 4 * H, part_ptr, count_ptr + 2 * nblk, db_ptr, BLOCK_G, BLOCK_N)
        column_sums_done(s_o, col + 3 * H, cm, 4 * H, part_ptr, count_ptr + 3 * nblk, db_ptr, BLOCK_G, BLOCK_N)


def _lstm_gates_backward(gx, gh, bias, c, dh, dc, *, warps=4, per_thread=4, threads_across=16, waves=1.0,
                         tiles_per_group=None, evict=False, stages=2, one_counter=False, info=None):
    """(dgates, dbias, dc_prev) of (h, c') = lstm_gates(gx, gh, bias, c).

    The keywords set the kernel's launch: warps a program (4; None: 4), per_thread elements a thread (4 by default: the 11 loads of a row stay in
    registers) and threads_across threads across a gate's row, row groups (waves of
    programs, one by default, or tiles_per_group row tiles each), evict (streaming
    hints), stages (0: a plain loop; S >= 1: software-pipelined over S stages; 2 by
    default: the loads of the next rows stay in flight through this row's math) and
    one_counter (the last program sums the four gates in one pass). `info`, a dict,
    receives the launch's geometry (and on the GPU the binary's registers)."""
    R.check_inputs(gx, gh, bias, c, dh, dc)
    B, H = c.shape
    assert dh.shape == dc.shape == c.shape, "dh, dc must have c's shape"
    dgates, dc_prev, dbias = torch.empty_like(gx), torch.empty_like(c), torch.empty_like(bias)
    if B * H == 0:
        return dgates, dbias.zero_(), dc_prev
    warps = warps or 4
    R.power_of_2(warps=warps, per_thread=per_thread, threads_across=threads_across)
    block_n, block_g = R.column_blocks(H, per_thread, threads_across)
    block_m = max(1, per_thread * 32 * warps // block_n)
    if one_counter:   # partial rows of 4 block_n columns summed block_g at a time
        block_g = max(1, block_g // 4)
    col_blocks = triton.cdiv(H, block_n)
    count = R.counters(c.device, (1 if one_counter else 4) * col_blocks)
    meta = dict(HALF=c.element_size() == 2, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_G=block_g, EVICT=evict,
                STAGES=stages, ONE_COUNTER=one_counter)
    args = (gx, gh, bias, c, dh, dc, dgates, dc_prev)
    occ = {"per_sm": 1} if R.INTERPRET else R.occupancy(
        _lstm_bwd_kernel, ("lstm", c.dtype, block_n, block_m, warps, evict, stages, one_counter, H % 16, B % 16,
                           c.device),
        args + (R.f32_dummy(c.device), count, dbias, B, H), meta, warps, c.device)
    row_tiles = triton.cdiv(B, block_m)
    groups = R.row_groups(row_tiles, col_blocks, occ["per_sm"], c.device, waves, tiles_per_group)
    part = torch.empty(groups, 4 * H, device=c.device, dtype=torch.float32)
    _lstm_bwd_kernel[(col_blocks, groups)](*args, part, count, dbias, B, H, **meta, num_warps=warps)
    if info is not None:
        info.update(occ, block_m=block_m, block_n=block_n, col_blocks=col_blocks, row_tiles=row_tiles, groups=groups)
    return dgates, dbias, dc_prev


LstmGates = lstm_function("TritonLstmGates", _lstm_gates, _lstm_gates_backward)


def lstm_gates(gx, gh, bias, c):
    if needs_grad(gx, gh, bias, c):
        return LstmGates.apply(gx, gh, bias, c)
    return _lstm_gates(gx, gh, bias, c)
