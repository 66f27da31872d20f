"""Theoretical occupancy (analysis.run.occupancy) against cases worked by hand with the CUDA
Occupancy Calculator's formula, and the launch resource columns of kernels.csv against a
plain SQL query over a real export."""
import math
import os
import sqlite3

import pytest

from conftest import ROOT

from fusionlab.analysis.readers import nsys_schema
from fusionlab.analysis.run import occupancy, run_metrics

# An H100's limits, as nsys 2025.3 recorded them in TARGET_INFO_GPU
# (tests/data/nsys2025_h100_train): compute capability 9.0, 64 warps, 32 blocks, 65536
# registers per SM and per block, 228 KiB shared memory per SM, 227 KiB opt-in per block.
# cc 9.0's constants (occupancy.arch): registers per warp in units of 256, register-limited
# warps in multiples of 4 (sub-partitions), shared memory in units of 128 bytes, 1 KiB
# reserved per block.
H100 = {"maxWarpsPerSm": 64, "maxBlocksPerSm": 32, "maxRegistersPerSm": 65536, "maxRegistersPerBlock": 65536,
        "maxShmemPerSm": 233472, "maxShmemPerBlockOptin": 232448, "threadsPerWarp": 32,
        "computeMajor": 9, "computeMinor": 0}

CASES = [
    # (threads, registers, static smem, dynamic smem) -> (occupancy, blocks per SM, limited by)
    # 8 warps/block. warps: 64 // 8 = 8 blocks. registers: 32 x 32 = 1024 per warp (a multiple
    # of 256); 65536 / 4 sub-partitions = 16384, // 1024 = 16 warps each, x 4 = 64 warps -> 8
    # blocks. shared memory: 0 + 1024 reserved -> 233472 // 1024 = 228. 8 blocks x 8 warps = 64 / 64.
    ((256, 32, 0, 0), (1.0, 8, "warps+registers")),
    # 128 x 32 = 4096 registers per warp; 16384 // 4096 = 4 warps per sub-partition -> 16 warps
    # -> 2 blocks of 8 warps; 16 / 64 = 0.25.
    ((256, 128, 0, 0), (0.25, 2, "registers")),
    # 32 warps/block; warps: 64 // 32 = 2. registers: 64 x 32 = 2048 per warp; 16384 // 2048 = 8
    # -> 32 warps -> 1 block (the block's 32 x 2048 = 65536 fits the per-block 65536). 32 / 64.
    ((1024, 64, 0, 0), (0.5, 1, "registers")),
    # 4 warps/block; warps 16, registers (1024 per warp) 64 warps -> 16 blocks. shared memory:
    # 102400 + 1024 = 103424 (= 808 x 128); 233472 // 103424 = 2 blocks -> 8 warps / 64.
    ((128, 32, 0, 100 * 1024), (0.125, 2, "shared_memory")),
    # 255 x 32 = 8160, rounded up to 8192 per warp; the block: 8 warps x 8192 = 65536 <= 65536.
    # 16384 // 8192 = 2 warps per sub-partition -> 8 warps -> 1 block; 8 / 64.
    ((256, 255, 0, 0), (0.125, 1, "registers")),
    # 255 registers, 1024 threads: 32 warps x 8192 = 262144 > 65536 registers per block: the
    # kernel cannot launch, 0 blocks.
    ((1024, 255, 0, 0), (0.0, 0, "registers")),
    # 3 warps/block: warps 64 // 3 = 21. registers: 40 x 32 = 1280 per warp (5 x 256);
    # 16384 // 1280 = 12 per sub-partition -> 48 warps (65536 // 1280 = 51, rounded down to a
    # multiple of 4) -> 48 // 3 = 16 blocks; 48 / 64 = 0.75.
    ((96, 40, 0, 0), (0.75, 16, "registers")),
    # 1 warp/block: warps 64, registers 16 x 32 = 512 per warp -> 128 warps; blocks: 32 -> 32 warps.
    ((32, 16, 0, 0), (0.5, 32, "blocks")),
    # 45666 + 1024 reserved = 46690, rounded up to 46720 (365 x 128): 233472 // 46720 = 4 blocks
    # (unrounded, or without the reserved 1 KiB, 5 would fit); 4 x 4 warps = 16 / 64.
    ((128, 32, 45666, 0), (0.25, 4, "shared_memory")),
    # the opt-in maximum: 232448 + 1024 = 233472: 1 block of 4 warps; 4 / 64.
    ((128, 32, 0, 232448), (0.0625, 1, "shared_memory")),
    # 128 bytes more than the opt-in maximum: cannot launch.
    ((128, 32, 0, 232448 + 128), (0.0, 0, "shared_memory")),
    # 2 warps/block (a persistent reduction of the train fixture): warps 32, blocks 32 -> 64 / 64.
    ((64, 21, 0, 32), (1.0, 32, "warps+blocks")),
]


@pytest.mark.parametrize("launch, want", CASES)
def test_occupancy_calculator_cases_cc90(launch, want):
    o = occupancy.occupancy(*launch, device=H100)
    assert (o.occupancy, o.blocks_per_sm, o.limited_by) == want
    assert o.active_warps == o.blocks_per_sm * math.ceil(launch[0] / 32)


def test_occupancy_other_capabilities():
    # cc 8.6 (an RTX 3090: 48 warps, 16 blocks, 100 KiB per SM, 99 KiB opt-in): 256 threads,
    # 32 registers: warps 48 // 8 = 6 blocks, registers 8, -> 48 / 48.
    ga102 = {**H100, "maxWarpsPerSm": 48, "maxBlocksPerSm": 16, "maxShmemPerSm": 102400,
             "maxShmemPerBlockOptin": 101376, "computeMajor": 8, "computeMinor": 6}
    assert occupancy.occupancy(256, 32, 0, 0, ga102)[:4] == (1.0, 6, 48, "warps")
    # cc 6.0 (P100: 2 sub-partitions, 256-byte shared memory units, nothing reserved): 96
    # threads, 40 registers: 65536 // 2 // 1280 = 25 -> 50 warps -> 16 blocks of 3 warps;
    # 20000 bytes -> 20224; 65536 // 20224 = 3 blocks -> 9 warps / 64.
    gp100 = {**H100, "maxShmemPerSm": 65536, "maxShmemPerBlockOptin": 49152, "computeMajor": 6, "computeMinor": 0}
    assert occupancy.occupancy(96, 40, 0, 0, gp100).blocks_per_sm == 16
    assert occupancy.occupancy(96, 40, 20000, 0, gp100)[:4] == (9 / 64, 3, 9, "shared_memory")


def test_occupancy_unknown_without_a_value():
    for args in [(None, 32, 0, 0, H100), (256, float("nan"), 0, 0, H100), (256, 32, 0, 0, None),
                 (256, 32, 0, 0, {k: v for k, v in H100.items() if k != "maxRegistersPerSm"}),
                 (256, 32, 0, 0, {**H100, "computeMajor": 2})]:
        o = occupancy.occupancy(*args)
        assert math.isnan(o.occupancy) and o.limited_by is None


def test_device_limits_come_from_the_report(report):
    """TARGET_INFO_GPU of the H100 fixture is the H100 dict above (the device's own limits)."""
    con = nsys_schema.open_report(report("nsys2025_h100_train/deep_gelu_mlp_eager"))
    try:
        assert nsys_schema.gpu_limits(con) == {0: H100}
    finally:
        con.close()
    cpu = nsys_schema.open_report(report("nsys2022_cpu/mlp_eager"))
    try:
        assert nsys_schema.gpu_limits(cpu) == {}
    finally:
        cpu.close()


# the measured range's launches per kernel and configuration, by hand: kernels joined to
# their launch call, the call inside `measure` and of its process; the configuration with
# the most GPU time first
SQL = """
SELECT d.value, k.registersPerThread, k.staticSharedMemory, k.dynamicSharedMemory, k.localMemoryPerThread,
       k.blockX * k.blockY * k.blockZ, k.gridX * k.gridY * k.gridZ, sum(k.end - k.start), count(*)
FROM CUPTI_ACTIVITY_KIND_KERNEL k
JOIN StringIds d ON d.id = k.demangledName
JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
JOIN NVTX_EVENTS m ON r.start >= m.start AND r.end <= m.end
                   AND ((r.globalTid >> 24) & 16777215) = ((m.globalTid >> 24) & 16777215)
JOIN StringIds mn ON mn.id = m.textId AND mn.value = 'measure'
GROUP BY 1, 2, 3, 4, 5, 6, 7
ORDER BY 1, 8 DESC, 9 DESC
"""
COLUMNS = ["registers_per_thread", "static_smem_bytes", "dynamic_smem_bytes", "local_mem_per_thread_bytes",
           "block_threads", "grid_blocks"]


@pytest.mark.parametrize("name", ["nsys2025_h200/pointwise_heavy_compile", "nsys2025_h200/mlp_eager",
                                  "nsys2025_h100_train/deep_gelu_mlp_compile_reduce_overhead"])
def test_resource_columns_equal_plain_sql(report, name):
    """kernels.csv's launch resources (the pipeline's streamed path) = the SQL query's
    configuration with the most GPU time in the measured range, and its occupancy the
    calculator's against the report's own TARGET_INFO_GPU row."""
    path = report(name)
    d = os.path.join(ROOT, "tests", "data", name)
    timing = os.path.join(d, "timing.json")
    row, kernels = run_metrics.compute(os.path.join(d, "run.json"), path, "nsys",
                                       timing if os.path.exists(timing) else None)
    con = sqlite3.connect(path)
    rows = con.execute(SQL).fetchall()
    gpu = dict(zip(occupancy.DEVICE_FIELDS, con.execute(
        f"SELECT {', '.join(occupancy.DEVICE_FIELDS)} FROM TARGET_INFO_GPU").fetchone()))
    con.close()
    best, calls = {}, {}
    for r in rows:
        best.setdefault(r[0], r[1:7])
        calls[r[0]] = calls.get(r[0], 0) + r[8]
    assert row["kernels"] == sum(calls.values()) and len(kernels) == len(best)
    for k in kernels.to_dict("records"):
        assert tuple(int(k[c]) for c in COLUMNS) == best[k["full_name"]], k["name"]
        assert k["calls"] == calls[k["full_name"]]
        o = occupancy.occupancy(k["block_threads"], k["registers_per_thread"], k["static_smem_bytes"],
                                k["dynamic_smem_bytes"], gpu)
        assert (k["theoretical_occupancy"], k["occupancy_limited_by"]) == (o.occupancy, o.limited_by)
    if name.endswith("pointwise_heavy_compile"):
        # the fused kernel ran in two configurations while compiling (54 registers, 128
        # threads: 106 launches); only Inductor's final one ran in the measured range
        (k,) = kernels.to_dict("records")
        assert (k["registers_per_thread"], k["block_threads"], k["grid_blocks"], k["theoretical_occupancy"],
                k["occupancy_limited_by"]) == (24, 256, 1024, 1.0, "warps")
