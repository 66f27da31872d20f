"""Config validation: one line naming the key, the bad value and the allowed values."""
import pytest
import yaml

from fusionlab.experiments import sweep
from fusionlab.experiments.registry import MODEL_NAMES, VARIANT_NAMES
from conftest import ROOT

GOOD = {"models": ["mlp"], "variants": ["eager"], "batch_sizes": [8]}


def err(cfg):
    with pytest.raises(sweep.ConfigError) as e:
        sweep.validate(cfg)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def test_shipped_configs_validate():
    for name in ("config.yaml", "config/smoke.yaml", "config/fixtures.yaml"):
        with open(f"{ROOT}/{name}") as f:
            sweep.validate(yaml.safe_load(f))


def test_defaults_and_eager_added():
    cfg = sweep.validate({**GOOD, "variants": ["compile"]})
    assert cfg["variants"] == ["eager", "compile"]
    assert cfg["measure_iters"] == 200 and cfg["nsys"]["trace"] == "cuda,nvtx,osrt"
    assert cfg["timeout_s"] == 1200


@pytest.mark.parametrize("bad, words", [
    ({**GOOD, "models": ["resnet"]}, ["models[0]", "'resnet'", *MODEL_NAMES]),
    ({**GOOD, "variants": ["fast"]}, ["variants[0]", "'fast'", *VARIANT_NAMES]),
    ({**GOOD, "batch_sizes": [0]}, ["batch_sizes[0]", "0", ">= 1"]),
    ({**GOOD, "batch_sizes": [-4]}, ["batch_sizes[0]", "-4"]),
    ({**GOOD, "batch_sizes": "128"}, ["batch_sizes", "'128'", "array"]),
    ({**GOOD, "models": []}, ["models", "empty"]),
    ({**GOOD, "bogus": 1}, ["'bogus'", "allowed keys", "batch_sizes"]),
    ({**GOOD, "mode": "training"}, ["mode", "'training'", "inference, train"]),
    ({**GOOD, "profiler": "ncu"}, ["profiler", "'ncu'", "auto, nsys, torch"]),
    ({**GOOD, "warmup_iters": 1.5}, ["warmup_iters", "1.5", "integer"]),
    ({**GOOD, "timeout_s": -1}, ["timeout_s", "-1", ">= 0"]),
    ({**GOOD, "timeout_s": "1h"}, ["timeout_s", "'1h'", "number"]),
    ({**GOOD, "nsys": {"args": "; rm -rf /"}}, ["nsys.args", "characters"]),
    ({}, ["empty"]),
])
def test_bad_config(bad, words):
    msg = err(bad)
    for w in words:
        assert w in msg, (w, msg)


def test_resolve_auto_without_gpu():
    m = sweep.resolve(sweep.validate(GOOD), gpu=False, nsys="2022.4.2.1")
    assert (m.device, m.profiler) == ("cpu", "torch")


def test_resolve_auto_with_gpu_and_nsys():
    m = sweep.resolve(sweep.validate(GOOD), gpu=True, nsys="2025.3.1.0")
    assert (m.device, m.profiler) == ("cuda", "nsys")


def test_nsys_missing_or_too_old():
    cfg = sweep.validate({**GOOD, "profiler": "nsys"})
    with pytest.raises(sweep.ConfigError, match="no nsys on PATH.*profiler: torch"):
        sweep.resolve(cfg, gpu=True, nsys=None)
    with pytest.raises(sweep.ConfigError, match="found nsys 2021.1"):
        sweep.resolve(cfg, gpu=True, nsys="2021.1.1")


def test_cuda_without_gpu():
    with pytest.raises(sweep.ConfigError, match="no GPU"):
        sweep.resolve(sweep.validate({**GOOD, "device": "cuda"}), gpu=False, nsys=None)


def test_runs_expand():
    cfg = sweep.validate({"models": ["mlp", "pointwise_heavy"], "variants": ["compile"],
                          "batch_sizes": [1, 2], "repeats": 3})
    assert len(sweep.runs(cfg, "torch")) == 2 * 2 * 2 * 3
