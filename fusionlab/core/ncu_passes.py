"""The Nsight Compute contract, defined once: each pass the ncu step can run (its report
file, cache control, replay mode, NVTX range and metrics) and the files the step and the
readers share. The profiling step (jobs.ncu_step) runs them; the readers
(analysis.readers.ncu_report, analysis.run.traffic) read them back.

Passes (docs/ncu.md says what each costs and what each number means):
- steady (the default): the loop's own bytes. Kernel replay, caches not flushed
  (`--cache-control none`), the byte metrics only (one pass: no save and restore of
  memory), over the step's consecutive iterations after warm-up: each iteration's DRAM
  bytes, so the steady state's median and range.
- cold: the compulsory bytes of one iteration. Range replay of each measured iteration
  (`fusionlab@iteration/`) as a whole, caches flushed once before it (`--cache-control
  all`), the byte metrics (one pass): the iteration's DRAM bytes from empty caches, over
  the step's iterations (median and range). Its results are ranges, not kernels.
- roofline: Nsight Compute's roofline, per kernel (several passes, kernel replay, caches
  flushed before each kernel, Nsight Compute's default): FLOP instructions of the FP64,
  FP32 and FP16/BF16 pipes and tensor instructions, the kernel's DRAM bytes and duration
  (so its rates use one pass's bytes, FLOPs and time), the GPU's peak-sustained rates (the
  roofs), L2-to-L1 bytes, throughput, occupancy, spills.
- range: range replay of each measured iteration, caches not flushed: the iteration's
  bytes, L2 write-backs inside it included.
DEFAULT is what the step runs unless the config names its passes: the cheapest that gives
the steady bytes.
"""
from __future__ import annotations

from dataclasses import dataclass

from fusionlab.core import ranges

STEP_FILE = "ncu.json"        # the step's record: one entry per pass
LOG_FILE = "ncu.log"
RUN_FILE = "traffic.json"     # analysis.run.traffic: the run's per-iteration traffic
KERNEL_FILE = "traffic.csv"   # and its per-kernel traffic
RUNNER_FILE = "ncu_run.json"  # the runner's own record of the process under ncu

# the one-pass set: each launch's bytes and its duration
BYTE_METRICS = ("gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum")
# FLOP-counting thread instructions and their weight (an fma is two operations); the h
# metrics count FP16 and BF16 alike (both run on the half-precision pipe)
FLOP_METRICS = {
    f"smsp__sass_thread_inst_executed_op_{p}{op}_pred_on.sum": (2 if op == "fma" else 1)
    for p in ("d", "f", "h") for op in ("add", "mul", "fma")
}
# tensor-core FLOPs per source precision: each counts the floating-point operations of the
# matrix instructions themselves (a square bf16 matmul of size N reads 2 N^3 exactly on an
# H100: benchmarks/gpu/tensor_counters.py); integer paths are not FLOPs and are left out.
# Not every GPU's ncu has them (step: jobs.ncu_step drops the names its ncu does not know)
TENSOR_OPS_METRICS = tuple(f"sm__ops_path_tensor_src_{p}.sum" for p in ("bf16_dst_fp32", "fp16", "tf32_dst_fp32",
                                                                        "fp8", "fp64"))
# where they are absent: tensor-core instructions, weighted as Nsight Compute's tensor
# roofline section weights them (512 each; on Hopper that is not a FLOP count)
TENSOR_METRIC = "smsp__inst_executed_pipe_tensor.sum"
TENSOR_FLOPS_PER_INST = 512
# the dense tensor roof: the bf16 path's peak-sustained rate counts 2:4-sparse MMA; the
# dense rate is half of it (on an H100 the hgmma path's `_sparsity_off` peak is exactly half)
TENSOR_OPS_PEAK = "sm__ops_path_tensor_src_bf16_dst_fp32.sum.peak_sustained"
TENSOR_OPS_PEAK_WEIGHT = 0.5
# the GPU's own roofs: per-cycle peaks times the unit's clock (Nsight Compute's roofline
# sections); name -> (per-cycle peak metric, weight, cycles-per-second metric)
ROOFS = {
    "dram_Bps": ("dram__bytes.sum.peak_sustained", 1, "dram__cycles_elapsed.avg.per_second"),
    "l2_Bps": ("l1tex__m_xbar2l1tex_read_bytes.sum.peak_sustained", 1, "lts__cycles_elapsed.avg.per_second"),
    "fp32_flops": ("sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained", 2,
                   "sm__cycles_elapsed.avg.per_second"),
    "fp16_flops": ("sm__sass_thread_inst_executed_op_hfma_pred_on.sum.peak_sustained", 2,
                   "sm__cycles_elapsed.avg.per_second"),
    "fp64_flops": ("sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained", 2,
                   "sm__cycles_elapsed.avg.per_second"),
    "tensor_flops": ("sm__inst_executed_pipe_tensor.sum.peak_sustained", TENSOR_FLOPS_PER_INST,
                     "sm__cycles_elapsed.avg.per_second"),
}
ROOF_METRICS = tuple(dict.fromkeys([*(m for peak, _, clock in ROOFS.values() for m in (peak, clock)),
                                     TENSOR_OPS_PEAK]))
# metrics a GPU's ncu may not know: requested only where `ncu --query-metrics` lists them
OPTIONAL_METRICS = frozenset([*TENSOR_OPS_METRICS, TENSOR_OPS_PEAK])
# the L2 side of the hierarchical roofline: bytes L2 sends to L1 (Nsight Compute's)
L2_L1_METRIC = "l1tex__m_xbar2l1tex_read_bytes.sum"
OTHER_METRICS = ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                 "sm__warps_active.avg.pct_of_peak_sustained_active", "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum",
                 "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum")
ROOFLINE_METRICS = ("gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum", L2_L1_METRIC, *OTHER_METRICS, *FLOP_METRICS, TENSOR_METRIC, *TENSOR_OPS_METRICS, *ROOF_METRICS)
L2_SIZE_METRIC = "device__attribute_l2_cache_size"


@dataclass(frozen=True)
class Pass:
    name: str
    report: str          # file in the run folder
    cache_control: str   # all | none
    replay: str          # kernel | range (results are kernels | NVTX range instances)
    nvtx: str            # the NVTX push/pop range whose work is profiled
    metrics: tuple
    iterations: str      # `step`: the step's iterations; `one`: a single iteration

    @property
    def nvtx_include(self) -> str:
        """ncu's --nvtx-include expression: a push/pop range (trailing /) of the domain."""
        return f"{ranges.DOMAIN}@{self.nvtx}/"


PASSES = {p.name: p for p in (
    Pass("steady", "ncu_steady.ncu-rep", "none", "kernel", ranges.MEASURE, BYTE_METRICS, "step"),
    Pass("cold", "ncu_cold.ncu-rep", "all", "range", ranges.ITERATION, BYTE_METRICS, "step"),
    Pass("roofline", "ncu.ncu-rep", "all", "kernel", ranges.MEASURE, ROOFLINE_METRICS, "one"),
    Pass("range", "ncu_range.ncu-rep", "none", "range", ranges.ITERATION, BYTE_METRICS, "step"),
)}
DEFAULT = ("steady",)
ORDER = tuple(PASSES)   # the order the step runs them in: steady first, its status is the step's
