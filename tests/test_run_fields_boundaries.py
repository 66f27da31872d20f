"""The fields of a range's metrics (analysis.run.fields) at their edges, every value worked
out by hand: the bound verdict at each equality (other work at half the window, equal to
the busy time, equal to the host wait; host wait equal to the busy time), finish()'s
fields for a CUDA and a CPU range (a range without kernels, a duration of 0, no other
work known), the launch configuration that carries a kernel's time (ties: launches, then
the smallest configuration; values not recorded; the GPU of the launch, or the only one),
the kernel table's resource columns, clean(), the instances of a range (by domain, from a
frame or a range table) and the ITERATION ranges nested in each instance by thread."""
import math

import numpy as np
import pandas as pd
import pytest

from fusionlab.analysis.readers.trace import CONFIG_COLUMNS, NO_VALUE, Instances, RangeTable
from fusionlab.analysis.run import fields as F
from fusionlab.analysis.run import occupancy as occ
from fusionlab.analysis.run.hist import Hist


def test_a_ranges_key_header_and_the_keys_of_a_frame():
    assert F.key("measure", "fusionlab") == "fusionlab:measure"
    assert F.key("measure", None) == "measure" and F.key("measure", "") == "measure"
    assert F.header("m", None, "process", np.int64(3)) == {"range": "m", "domain": "", "attribution": "process",
                                                         "instances": 3}
    assert type(F.header("m", "d", "same_thread", np.int64(3))["instances"]) is int
    assert F.header("m", "d", "same_thread", 0)["domain"] == "d"

    class T:   # a trace whose ranges are a frame
        ranges = pd.DataFrame({"domain": ["b", "a", "", "a"], "name": ["x", "y", "z", "y"]})
    assert F.range_keys(T) == [("z", None), ("y", "a"), ("x", "b")]


def test_the_instances_of_a_range_of_a_domain_where_the_trace_has_it():
    class T:
        ranges = pd.DataFrame({"name": ["m", "m", "m", "n"], "domain": ["d", "e", "d", "d"],
                               "start": [1, 2, 3, 4], "end": [5, 6, 7, 8], "tid": [9, 9, 9, 9]})
    assert F.instances(T, "m", "d")["start"].tolist() == [1, 3]
    assert F.instances(T, "m", "f")["start"].tolist() == [1, 2, 3]     # no such domain: every instance
    assert F.instances(T, "m", None)["start"].tolist() == [1, 2, 3]
    s, e, t = F.instance_arrays(F.instances(T, "m", "e"))
    assert (s.tolist(), e.tolist(), t.tolist(), s.dtype) == ([2], [6], [9], np.int64)

    class R:
        range_table = RangeTable(["m", "m"], ["d", "e"], [1, 2], [5, 6], [9, 8])
    inst = F.instances(R, "m", "e")
    assert isinstance(inst, Instances) and F.instance_arrays(inst)[0].tolist() == [2]
    assert F.range_keys(R) == [("m", "d"), ("m", "e")]


@pytest.mark.parametrize("args, want", [
    ((0, 0, 0, 5.0, 10.0), F.NO_GPU_WORK),           # other work exactly half the window
    ((0, 0, 0, 5.000001, 10.0), F.WAITING),
    ((0, 0, 0, 0.0, 0.0), F.NO_GPU_WORK),
    ((1, 4.0, 1.0, 4.0, 10.0), "gpu"),               # other work equal to the busy time
    ((1, 4.0, 1.0, 4.5, 10.0), F.WAITING),
    ((1, 4.0, 5.0, 5.0, 10.0), F.WAITING),           # other work equal to the host wait, above busy
    ((1, 4.0, 5.0, 4.9, 10.0), "cpu"),
    ((1, 4.0, 4.0, 0.0, 10.0), "gpu"),               # host wait equal to the busy time
    ((1, 4.0, 4.5, 0.0, 10.0), "cpu"),
    ((2, 0.0, 0.0, 0.0, 10.0), "gpu"),
])
def test_the_bound_verdict_at_each_equality(args, want):
    assert F.verdict(*args) == want


def hist(*ns) -> Hist:
    h = Hist()
    if ns:
        h.add(np.array(ns, np.int64))
    return h


P90 = float(np.percentile([1000, 2000, 3000, 2_000_000], 90)) / 1e3   # numpy the oracle: 1400.9 us


def aggregates(**kw) -> dict:
    a = {"kernels": 4, "kernel_ns": 8_000_000, "launches": 5, "launch_ns": 2_000_000, "busy_ns": 6_000_000,
         "first_start": 1_000_000, "last_end": 9_000_000, "kernel_durations": hist(1000, 2000, 3000, 2_000_000),
         "launch_path": {"launch_api_us": 3.0, "queue_us": 4.0}, "idle": {"host_wait": 1_000_000,
                                                                           "kernel_wait": 500_000, "other": 0},
         "other_work_ns": 3_000_000}
    return a | kw


def test_finish_of_a_cuda_range():
    m = F.finish({"range": "measure"}, "cuda", 2, 10_000_000, aggregates())
    assert m == {
        "range": "measure", "iterations": 2, "duration_ms": 10.0, "wall_time_per_iter_ms": 5.0, "kernels": 4,
        "kernels_per_iter": 2.0, "launch_calls": 5, "launch_calls_per_iter": 2.5, "kernel_time_ms": 8.0,
        "gpu_time_per_iter_ms": 4.0, "cpu_kernel_time_per_iter_ms": None, "launch_api_time_ms": 2.0,
        "launch_overhead_ratio": 0.25, "gpu_busy_fraction": 0.6, "gpu_busy_per_iter_ms": 3.0,
        "gpu_span_per_iter_ms": 4.0, "median_kernel_us": 2.5, "p10_kernel_us": 1.3, "p90_kernel_us": P90,
        "launch_api_us": 3.0, "queue_us": 4.0,
        "idle_host_wait_per_iter_ms": 0.5, "idle_host_wait_frac": 0.1,
        "idle_kernel_wait_per_iter_ms": 0.25, "idle_kernel_wait_frac": 0.05,
        "idle_other_per_iter_ms": 0.0, "idle_other_frac": 0.0,
        "gpu_other_work_frac": 0.3, "bound": "gpu"}
    assert type(m["kernels"]) is int and type(m["launch_calls"]) is int


def test_finish_of_a_cuda_range_without_kernels_duration_or_other_work():
    a = aggregates(kernels=0, kernel_ns=0, busy_ns=0, kernel_durations=hist(), first_start=None, last_end=None,
                   launch_path={}, other_work_ns=None, idle={"host_wait": 0, "kernel_wait": 0, "other": 0})
    m = F.finish({}, "cuda", 1, 4_000_000, a)
    assert m["launch_overhead_ratio"] is None and m["gpu_span_per_iter_ms"] is None
    assert m["median_kernel_us"] is None and m["gpu_other_work_frac"] is None
    assert m["bound"] == F.NO_GPU_WORK and m["gpu_busy_fraction"] == 0.0
    m = F.finish({}, "cuda", 1, 4_000_000, a | {"other_work_ns": 2_000_001})
    assert m["bound"] == F.WAITING and m["gpu_other_work_frac"] == 2_000_001 / 4_000_000
    for other in (None, 0):   # no other work known, or none: a 1 ns window holds no work at all
        m = F.finish({}, "cuda", 1, 1, a | {"other_work_ns": other})
        assert m["bound"] == F.NO_GPU_WORK
    m = F.finish({}, "cuda", 1, 0, aggregates())     # a range of no time: no shares, no verdict
    assert m["gpu_busy_fraction"] is None and m["idle_host_wait_frac"] is None and m["gpu_other_work_frac"] is None
    assert "bound" not in m and m["idle_host_wait_per_iter_ms"] == 1.0
    m = F.finish({}, "cuda", 1, 10_000_000, aggregates(idle={"host_wait": 7_000_000, "kernel_wait": 0, "other": 0}))
    assert m["bound"] == "cpu"   # host wait 7 ms over busy 6 ms, other work 3 ms below both


def test_finish_of_a_cpu_range_has_no_gpu_fields():
    m = F.finish({}, "cpu", 4, 8_000_000, aggregates())
    assert m == {
        "iterations": 4, "duration_ms": 8.0, "wall_time_per_iter_ms": 2.0, "kernels": 4, "kernels_per_iter": 1.0,
        "launch_calls": None, "launch_calls_per_iter": None, "kernel_time_ms": 8.0, "gpu_time_per_iter_ms": None,
        "cpu_kernel_time_per_iter_ms": 2.0, "launch_api_time_ms": None, "launch_overhead_ratio": None,
        "gpu_busy_fraction": None, "gpu_busy_per_iter_ms": None, "gpu_span_per_iter_ms": None,
        "median_kernel_us": 2.5, "p10_kernel_us": 1.3, "p90_kernel_us": P90}
    assert F.finish({}, "other", 1, 1, aggregates())["cpu_kernel_time_per_iter_ms"] is None


GPU = {"maxWarpsPerSm": 64, "maxBlocksPerSm": 32, "maxRegistersPerSm": 65536, "maxRegistersPerBlock": 65536,
       "maxShmemPerSm": 233472, "maxShmemPerBlockOptin": 232448, "threadsPerWarp": 32, "computeMajor": 9,
       "computeMinor": 0}


def launch(full, ns, calls=1, dev=0, regs=32, block=256, smem=0, grid=10) -> dict:
    return {"full_name": full, "device_id": dev, "registers_per_thread": regs, "static_smem_bytes": smem,
            "dynamic_smem_bytes": 0, "local_mem_per_thread_bytes": 0, "block_threads": block, "grid_blocks": grid,
            "ns": ns, "calls": calls}


def test_the_launch_configuration_carrying_most_of_a_kernels_time():
    configs = pd.DataFrame([
        launch("a", 100, regs=32), launch("a", 150, regs=64), launch("a", 100, regs=32),   # 32 regs: 200 ns
        launch("b", 100, calls=1, block=128), launch("b", 100, calls=2, block=512),         # tie: most launches
        launch("c", 100, block=512), launch("c", 100, block=128),                           # full tie: smallest
    ])
    out = F.launch_configs(configs, {0: GPU})
    assert out.index.tolist() == ["a", "b", "c"] and out.index.name == "full_name"
    assert out["registers_per_thread"].tolist() == [32, 32, 32]
    assert out["block_threads"].tolist() == [256, 512, 128]
    assert list(out.columns) == F.RESOURCE_TABLE_COLUMNS
    assert str(out["block_threads"].dtype) == "Int64"
    for name, block, regs in (("a", 256, 32), ("b", 512, 32), ("c", 128, 32)):
        o = occ.occupancy(block, regs, 0, 0, GPU)
        assert out.loc[name, "theoretical_occupancy"] == float(o.occupancy)
        assert out.loc[name, "occupancy_limited_by"] == o.limited_by


def test_values_not_recorded_are_na_and_the_launchs_gpu_or_the_only_one_is_read():
    small = GPU | {"maxWarpsPerSm": 32}
    configs = pd.DataFrame([launch("a", 10, dev=1), launch("b", 10, dev=NO_VALUE), launch("c", 10, regs=NO_VALUE),
                            launch("d", 10, dev=5)])
    one = F.launch_configs(configs, {1: small})
    assert one.loc["a", "theoretical_occupancy"] == float(occ.occupancy(256, 32, 0, 0, small).occupancy)
    assert one.loc["b", "theoretical_occupancy"] == float(occ.occupancy(256, 32, 0, 0, small).occupancy)
    assert one.loc["d", "theoretical_occupancy"] == float(occ.occupancy(256, 32, 0, 0, small).occupancy)
    assert one.loc["c", "registers_per_thread"] is pd.NA
    assert pd.isna(one.loc["c", "occupancy_limited_by"]) and math.isnan(one.loc["c", "theoretical_occupancy"])
    two = F.launch_configs(configs, {0: GPU, 1: small})
    assert two.loc["a", "theoretical_occupancy"] == float(occ.occupancy(256, 32, 0, 0, small).occupancy)
    assert math.isnan(two.loc["d", "theoretical_occupancy"])   # GPU 5 unknown, and no only one
    assert math.isnan(two.loc["b", "theoretical_occupancy"])


def test_no_configurations_and_the_kernel_tables_resource_columns():
    none = F.launch_configs(pd.DataFrame(), {0: GPU})
    assert none.empty and list(none.columns) == F.RESOURCE_TABLE_COLUMNS and none.index.name == "full_name"
    table = pd.DataFrame({"name": ["a", "z"], "full_name": ["a", "z"], "calls": [2, 1]})
    t = F.with_resources(table, F.launch_configs(pd.DataFrame([launch("a", 10)]), {0: GPU}))
    assert t["block_threads"].tolist()[0] == 256 and t["block_threads"].tolist()[1] is pd.NA
    assert str(t["registers_per_thread"].dtype) == "Int64" and t["theoretical_occupancy"].dtype == float
    assert t["occupancy_limited_by"].dtype == object and list(table.columns) == ["name", "full_name", "calls"]
    bare = F.with_resources(table, None)
    assert list(bare.columns) == ["name", "full_name", "calls"] + F.RESOURCE_TABLE_COLUMNS
    assert bare["block_threads"].isna().all() and bare["theoretical_occupancy"].isna().all()


def test_clean_makes_plain_python():
    out = F.clean({"a": np.float32(1.5), "b": float("nan"), "c": np.int64(3), "d": "x", "e": None,
                   "f": np.float64("nan"), "g": 2, "h": True})
    assert out == {"a": 1.5, "b": None, "c": 3, "d": "x", "e": None, "f": None, "g": 2, "h": True}
    assert type(out["a"]) is float and type(out["c"]) is int and type(out["g"]) is int


def test_iterations_nested_in_each_instance_on_its_thread():
    it = "iteration"
    ranges = RangeTable([it, it, it, it, it, "measure", "measure"], ["fusionlab"] * 7,
                        [10, 20, 30, 25, 12, 10, 10], [20, 30, 41, 28, 18, 40, 40], [1, 1, 1, 2, 2, 1, 3])
    inst = Instances(np.array([10]), np.array([40]), np.array([1]))
    # thread 1: [10,20] and [20,30] inside, [30,41] ends past 40; thread 2's are not counted
    assert F.iterations(ranges, inst, "measure") == 2
    assert F.iterations(ranges, Instances(np.array([10, 25]), np.array([40, 28]), np.array([1, 2])), "m") == 3
    assert F.iterations(ranges, Instances(np.array([11]), np.array([41]), np.array([1])), "m") == 2
    assert F.iterations(ranges, Instances(np.array([10]), np.array([40]), np.array([3])), "m") == 1   # none
    assert F.iterations(ranges, Instances(np.array([10, 50]), np.array([40, 60]), np.array([3, 3])), "m") == 2
    assert F.iterations(ranges, Instances(np.array([12]), np.array([18]), np.array([2])), it) == 1
    assert F.iterations(ranges, Instances(np.array([12, 12]), np.array([18, 18]), np.array([2, 2])), it) == 2
    empty = RangeTable([], [], [], [], [])
    assert F.iterations(empty, inst, "measure") == 1
