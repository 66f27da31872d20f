"""The sweep's GPU slots as plan.gpu_slots gives them to the Snakefile: plain data, and none
where a sweep has no slots."""
import pytest

from fusionlab.plan import gpu_slots, sweep

CFG = {"gpus": "0,1", "jobs_per_gpu": 4}


def test_two_gpus_on_sixteen_cores(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    p = gpu_slots.plan(CFG, "cuda", list(range(16)))
    assert [(s.gpu, s.cpus) for s in p.slots] == [("0", (12, 13, 14, 15)), ("1", (8, 9, 10, 11))] or \
        [(s.gpu, s.cpus) for s in p.slots] == [("0", (8, 9, 10, 11)), ("1", (12, 13, 14, 15))]
    assert p.other_cpus == list(range(8)) and p.in_flight == 8
    assert p.describe(3).startswith("2 GPU slot(s) ") and "up to 3 profiling jobs" in p.describe(3)
    # the host has one counters lock: two Nsight Compute jobs at most, however many GPUs
    assert p.ncu_in_flight == 2 and "2 of them Nsight Compute at most" in p.describe()
    assert "1 of them Nsight Compute at most" in p.describe(3, 1)


@pytest.mark.parametrize("kw", [{"regenerate": True}, {"local": False}, {"main_process": False}])
def test_no_slots_where_a_sweep_has_none(monkeypatch, kw):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert gpu_slots.plan(CFG, "cuda", list(range(16)), **kw) is None
    assert gpu_slots.plan(CFG, "cpu", list(range(16))) is None


def test_a_gpu_that_is_not_visible_is_a_config_error(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    with pytest.raises(sweep.ConfigError, match="gpus"):
        gpu_slots.plan(CFG, "cuda", list(range(16)))
