"""An allocation failure is recorded as status `oom`, on the GPU and on the CPU alike
(runner.record.is_out_of_memory): the CPU allocator's own message, and a run whose
inputs cannot be allocated."""
import json

import pytest
import torch

from fusionlab.runner import cli, record

TOO_MANY = 2 ** 46   # elements no host can allocate: the allocator refuses at once


def cpu_allocation_error() -> RuntimeError:
    with pytest.raises(RuntimeError) as e:
        torch.empty(TOO_MANY)
    return e.value


def test_the_cpu_allocators_failure_is_out_of_memory():
    e = cpu_allocation_error()
    assert "DefaultCPUAllocator: can't allocate memory" in str(e)
    assert record.is_out_of_memory(e)
    assert record.is_out_of_memory(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert record.is_out_of_memory(RuntimeError("CUDA error: out of memory"))
    assert not record.is_out_of_memory(RuntimeError("shape mismatch"))


def test_failure_fields_of_a_cpu_allocation_failure():
    try:
        raise cpu_allocation_error()
    except RuntimeError as e:
        f = record.failure(e)
    assert f["status"] == "oom" and f["reason"].startswith("RuntimeError: ")
    assert "can't allocate memory" in f["reason"] and "Traceback" in f["traceback"]


def test_a_cpu_run_that_cannot_allocate_its_inputs_is_recorded_oom(tmp_path):
    out = tmp_path / "run.json"
    assert cli.main(["--model", "mlp", "--variant", "eager", "--batch", str(TOO_MANY), "--device", "cpu",
                     "--warmup", "1", "--iters", "2", "--out", str(out)]) == 0
    r = json.loads(out.read_text())
    assert r["status"] == "oom" and "can't allocate memory" in r["reason"]
