"""Theoretical occupancy of a kernel launch: the CUDA Occupancy Calculator's formula
(the spreadsheet, and cudaOccupancyMaxActiveBlocksPerMultiprocessor's logic in CUDA's
cuda_occupancy.h: cudaOccMaxBlocksPerSMWarpsLimit, ...RegsLimit, ...SmemLimit).

A launch of `block_threads` threads per block, `registers_per_thread` registers and
static + dynamic shared memory per block fits this many blocks on one SM, the fewest of:
- warps:         maxWarpsPerSm // warps per block (warps per block = ceil(threads / warp size));
- blocks:        maxBlocksPerSm;
- registers:     registers per warp = registers per thread x warp size rounded up to the
                 register allocation unit; warps per SM = what maxRegistersPerSm holds,
                 rounded down to the warp allocation granularity (registers are allocated
                 per SM sub-partition); // warps per block. 0 (the kernel cannot launch)
                 where a block needs more than maxRegistersPerBlock, its warps counted
                 rounded up to the granularity (the hardware's check) or not;
- shared_memory: static + dynamic + the per-block reserved shared memory, rounded up to
                 the shared memory allocation unit; maxShmemPerSm // that. 0 where a block
                 needs more than maxShmemPerBlockOptin (+ the reserved part).
occupancy = active warps (blocks x warps per block) / maxWarpsPerSm, 0..1; limited_by
names the limits that give the fewest blocks ('+'-joined, in LIMITS order, as the
calculator's bit mask of limiting factors).

The device's limits come from the report: nsys' TARGET_INFO_GPU table (DEVICE_FIELDS,
read from the device), never a table per GPU here. The allocation granularities are not
device attributes; they are constants per compute capability (ARCH, from
cuda_occupancy.h of CUDA 12/13: cudaOccRegAllocationGranularity,
cudaOccSubPartitionsPerMultiprocessor, cudaOccSMemAllocationGranularity, and the
1 KiB cudaDevAttrReservedSharedMemoryPerBlock of compute capability 8.0 and later).
Assumed, as the calculator does by default: the default shared memory carveout (the
driver may configure the SM's whole shared memory), partitioned global caching off.
"""
from __future__ import annotations

import math
from typing import NamedTuple

from fusionlab.analysis.readers.trace import DEVICE_FIELDS

LIMITS = ("warps", "blocks", "registers", "shared_memory")


class Arch(NamedTuple):
    """Allocation constants of one compute capability (cuda_occupancy.h)."""
    reg_unit: int           # registers per warp are allocated in units of this many
    warp_granularity: int   # register-limited warps per SM come in multiples of this (sub-partitions)
    smem_unit: int          # shared memory per block is allocated in units of this many bytes
    reserved_smem: int      # bytes of shared memory the driver reserves per block


def arch(major: int, minor: int) -> Arch | None:
    """The allocation constants of compute capability major.minor (3.0 and later; a
    capability newer than the calculator's takes the newest known values); None before 3.0."""
    if major < 3:
        return None
    return Arch(reg_unit=256,
                warp_granularity=2 if (major, minor) == (6, 0) else 4,
                smem_unit=256 if major <= 7 else 128,
                reserved_smem=1024 if major >= 8 else 0)


class Occupancy(NamedTuple):
    occupancy: float          # active warps / maxWarpsPerSm (nan: unknown)
    blocks_per_sm: int | None
    active_warps: int | None
    limited_by: str | None    # '+'-joined LIMITS giving the fewest blocks
    limits: dict              # blocks per SM allowed by each limit (None: no limit)


UNKNOWN = Occupancy(float("nan"), None, None, None, {})


def _known(*values) -> bool:
    return all(v is not None and not (isinstance(v, float) and math.isnan(v)) for v in values)


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def occupancy(block_threads, registers_per_thread, static_smem=0, dynamic_smem=0,
              device: dict | None = None) -> Occupancy:
    """The theoretical occupancy of one launch configuration on `device` (a dict of
    DEVICE_FIELDS, as TARGET_INFO_GPU gives it): module doc. UNKNOWN where a value or a
    device limit is missing."""
    d = device or {}
    fields = [d.get(f) for f in DEVICE_FIELDS]
    if not _known(block_threads, registers_per_thread, static_smem, dynamic_smem, *fields) or block_threads <= 0:
        return UNKNOWN
    max_warps, max_blocks, regs_sm, regs_block, smem_sm, smem_optin, warp, major, minor = map(int, fields)
    a = arch(major, minor)
    if a is None or warp <= 0 or max_warps <= 0:
        return UNKNOWN
    threads, regs, smem = int(block_threads), int(registers_per_thread), int(static_smem) + int(dynamic_smem)
    warps_per_block = -(-threads // warp)
    limits = {"warps": max_warps // warps_per_block, "blocks": max_blocks}
    # registers: allocated per warp, per sub-partition
    regs_per_warp = _round_up(regs * warp, a.reg_unit)
    if regs_per_warp == 0:
        limits["registers"] = None
    elif (regs_per_warp * _round_up(warps_per_block, a.warp_granularity) > regs_block
          or regs_per_warp * warps_per_block > regs_block):
        limits["registers"] = 0
    else:
        warps_per_sm = regs_sm // a.warp_granularity // regs_per_warp * a.warp_granularity
        limits["registers"] = warps_per_sm // warps_per_block
    # shared memory: static + dynamic + reserved, in allocation units
    smem_block = _round_up(smem + a.reserved_smem, a.smem_unit)
    if smem_block > smem_optin + a.reserved_smem:
        limits["shared_memory"] = 0
    else:
        limits["shared_memory"] = smem_sm // smem_block if smem_block else None
    blocks = min(v for v in limits.values() if v is not None)
    limited_by = "+".join(k for k in LIMITS if limits.get(k) == blocks)
    return Occupancy(blocks * warps_per_block / max_warps, blocks, blocks * warps_per_block, limited_by, limits)
