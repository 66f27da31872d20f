"""Column sums over the rows inside a Triton kernel (the bias gradients of triton_ops and
triton_lstm): the launch geometry and the in-kernel finish.

A kernel that reduces over rows runs as one wave of programs, grid (column blocks, row
groups): `programs_per_sm` reads the compiled kernel's registers and shared memory,
`row_groups` gives the groups that fill the SMs once, balanced (or a given number of
waves, or of row tiles a group). Each program keeps its
column sums in fp32 registers and ends in `column_sums_done`: it writes its group's
partial row (groups x columns, fp32), and the last program of each column block (a
counter from `counters`, which that program resets) sums the partial rows in a fixed
order and writes the result in the output's dtype. One launch, deterministic, and the
partial rows are a few per column (well under 1% of the kernel's bytes).

TRITON_INTERPRET=1 (CPU tensors through Triton's interpreter): three row groups, to test
several.
"""
from __future__ import annotations

import functools
import os

import torch
import triton
import triton.language as tl

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"


@functools.lru_cache(maxsize=None)
def sm_count(device) -> int:
    return torch.cuda.get_device_properties(device).multi_processor_count


@functools.lru_cache(maxsize=None)
def f32_dummy(device) -> torch.Tensor:
    """An fp32 tensor that stands for the partial sums when compiling ahead of a launch."""
    return torch.empty(4, dtype=torch.float32, device=device)


_COUNTERS = {}


def counters(device, n: int) -> torch.Tensor:
    """Zeroed int32 counters, one per column block, for the last-program-finishes pattern;
    each last program resets its counter, so the buffer stays zero between launches. One
    buffer per (device, stream): launches on one stream run in order."""
    stream = 0 if INTERPRET else torch.cuda.current_stream(device).cuda_stream
    key = (str(device), stream)
    buf = _COUNTERS.get(key)
    if buf is None or buf.numel() < n:
        buf = _COUNTERS[key] = torch.zeros(max(n, 1024), dtype=torch.int32, device=device)
    return buf


_OCCUPANCY = {}


def occupancy(kernel, key, args, meta, num_warps: int, device) -> dict:
    """The compiled binary of `kernel` (compiled here with args and meta, cached by `key`):
    its registers a thread (regs), shared memory a program (shared) and the programs
    resident per SM that those and its threads allow (per_sm)."""
    if key not in _OCCUPANCY:
        k = kernel.warmup(*args, grid=(1,), num_warps=num_warps, **meta)
        k._init_handles()
        props = torch.cuda.get_device_properties(device)
        regs_per_warp = -(-max(k.n_regs, 1) * 32 // 256) * 256
        by_regs = getattr(props, "regs_per_multiprocessor", 65536) // (regs_per_warp * num_warps)
        by_threads = props.max_threads_per_multi_processor // (32 * num_warps)
        shared = k.metadata.shared
        by_smem = props.shared_memory_per_multiprocessor // shared if shared else by_threads
        _OCCUPANCY[key] = {"per_sm": max(1, min(by_regs, by_threads, by_smem, 32)), "regs": k.n_regs,
                           "shared": shared}
    return _OCCUPANCY[key]


def programs_per_sm(kernel, key, args, meta, num_warps: int, device) -> int:
    """Programs of `kernel` resident per SM (registers, threads, shared memory of its
    compiled binary), cached by `key`."""
    return occupancy(kernel, key, args, meta, num_warps, device)["per_sm"]


def row_groups(row_tiles: int, col_blocks: int, per_sm: int, device, waves: float = 1.0,
               tiles_per_group: int | None = None) -> int:
    """Row groups of a column reduction. With tiles_per_group: that many row tiles a group
    (the last may have fewer). Otherwise at most `waves` waves of programs (per_sm on every
    SM), at most one per row tile, and the fewest that give the same most tiles per group
    (the interpreter: up to 3, to test several groups). At most 65535 (grid axis 1)."""
    if tiles_per_group:
        return max(1, min(triton.cdiv(row_tiles, tiles_per_group), 65535))
    most = 3 if INTERPRET else max(1, int(waves * per_sm * sm_count(device)) // col_blocks)
    most = max(1, min(row_tiles, most, 65535))
    return triton.cdiv(row_tiles, triton.cdiv(row_tiles, most))


def check_inputs(*ts) -> None:
    """Every tensor contiguous and on the GPU (on the CPU under the interpreter)."""
    for t in ts:
        assert (t.is_cuda or INTERPRET) and t.is_contiguous(), "inputs must be contiguous CUDA tensors"


@triton.jit
def column_sums_done(s, c, cmask, ncols, part_ptr, count_ptr, out_ptr, BLOCK_G: tl.constexpr,
                     BLOCK_N: tl.constexpr):
    # s: this program's fp32 sums of columns c; the partial row of its row group is
    # written, then the last program of the column block (the counter at program_id(0))
    # sums all groups' rows in a fixed order, writes out, and resets the counter
    gid = tl.program_id(1).to(tl.int64)
    groups = tl.num_programs(1)
    tl.store(part_ptr + gid * ncols + c, s, mask=cmask)
    tl.debug_barrier()
    done = tl.atomic_add(count_ptr + tl.program_id(0), 1, sem="acq_rel", scope="gpu")
    if done == groups - 1:
        tot = tl.zeros((BLOCK_G, BLOCK_N), dtype=tl.float32)
        for g0 in range(0, groups, BLOCK_G):
            gg = g0 + tl.arange(0, BLOCK_G).to(tl.int64)
            m = (gg[:, None] < groups) & cmask[None, :]
            tot += tl.load(part_ptr + gg[:, None] * ncols + c[None, :], mask=m, other=0.0, cache_modifier=".cg")
        tl.store(out_ptr + c, tl.sum(tot, axis=0).to(out_ptr.dtype.element_ty), mask=cmask)
        tl.atomic_xchg(count_ptr + tl.program_id(0), 0)


def column_blocks(ncols: int, per_thread: int, threads_across: int):
    """(BLOCK_N, BLOCK_G) of a column reduction: threads_across threads of per_thread
    elements each across a row, and partial rows summed BLOCK_G at a time."""
    block_n = min(threads_across * per_thread, triton.next_power_of_2(ncols))
    return block_n, max(1, 4096 // block_n)


def power_of_2(**knobs) -> None:
    """Assert that each launch knob (a block-size factor) is a power of 2."""
    for name, v in knobs.items():
        assert v >= 1 and v & (v - 1) == 0, f"{name}={v} must be a power of 2"
