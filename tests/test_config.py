"""Config validation: one line naming the key, the bad value and the allowed values."""
import pytest
import yaml

from fusionlab.plan import sweep
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
    for name in ("config.yaml", "config/smoke.yaml", "config/fixtures.yaml", "config/scaling.yaml", "config/zoo.yaml"):
        with open(f"{ROOT}/{name}") as f:
            sweep.validate(yaml.safe_load(f))


def test_defaults_and_eager_added():
    cfg = sweep.validate({**GOOD, "variants": ["compile"]})
    assert cfg["variants"] == ["eager", "compile"]
    assert cfg["measure_iters"] == 200 and cfg["nsys"]["trace"] == "cuda,nvtx,osrt"
    assert cfg["timeout_s"] == 1200


def test_a_variant_may_have_its_own_time_limit():
    cfg = sweep.validate({**GOOD, "variants": ["jit_script"], "timeout_s": 300,
                          "timeout_s_by_variant": {"jit_script": 60}})
    assert sweep.timeout_s(cfg, "jit_script") == 60 and sweep.timeout_s(cfg, "eager") == 300
    assert "'jit'" in err({**GOOD, "timeout_s_by_variant": {"jit": 60}})
    assert "jit_script" in err({**GOOD, "timeout_s_by_variant": {"jit": 60}})
    assert "timeout_s_by_variant.jit_script" in err({**GOOD, "timeout_s_by_variant": {"jit_script": -1}})


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
    ({**GOOD, "sizes": {"resnet": {"dim": [1]}}}, ["sizes", "'resnet'", "deep_gelu_mlp", "matmul"]),
    ({**GOOD, "sizes": {"mlp": {"dim": [8]}}}, ["sizes.mlp", "'dim'", "not a size axis", "hidden"]),
    ({**GOOD, "sizes": {"mlp": {"hidden": [0]}}}, ["sizes.mlp.hidden[0]", "0", ">= 1"]),
    ({**GOOD, "sizes": {"mlp": {"hidden": [1 << 20]}}}, ["sizes.mlp.hidden", "1048576", "1 to 65536"]),
    ({**GOOD, "sizes": {"mlp": {"hidden": 64}}}, ["sizes.mlp.hidden", "64", "array"]),
    ({**GOOD, "sizes": {"mlp": {"hidden": [64, 64]}}}, ["sizes.mlp.hidden", "repeated"]),
    ({**GOOD, "variants_by_mode": {"train": ["fast"]}}, ["variants_by_mode.train[0]", "'fast'", "compile"]),
    ({**GOOD, "variants_by_mode": {"train": ["compile"]}}, ["variants_by_mode.train", "'compile'",
                                                            "not in variants", "eager"]),
    ({**GOOD, "variants_by_mode": {"training": ["eager"]}}, ["'training'"]),
    ({**GOOD, "batch_sizes_by_model": {"resnet": [2]}}, ["batch_sizes_by_model", "'resnet'", "matmul"]),
    ({**GOOD, "batch_sizes_by_model": {"mlp": [0]}}, ["batch_sizes_by_model.mlp[0]", ">= 1"]),
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


def test_variants_by_mode_and_batch_sizes_by_model_expand():
    """A mode's own variants (eager added) and a model's own batch sizes replace the
    sweep-wide ones for that mode and model only."""
    cfg = sweep.validate({"models": ["mlp", "softmax"], "mode": ["inference", "train"],
                          "variants": ["compile", "compile_reduce_overhead"],
                          "variants_by_mode": {"train": ["compile"]},
                          "batch_sizes": [4], "batch_sizes_by_model": {"softmax": [2, 8]}})
    got = {(r["model"], r["variant"], r["mode"], r["batch"]) for r in sweep.runs(cfg, "torch")}
    want = {(m, v, mode, b) for m, bs in (("mlp", [4]), ("softmax", [2, 8])) for b in bs
            for mode, vs in (("inference", ["eager", "compile", "compile_reduce_overhead"]),
                             ("train", ["eager", "compile"])) for v in vs}
    assert got == want and len(sweep.runs(cfg, "torch")) == len(want)


def test_a_narrowed_models_keeps_the_other_per_model_entries_unused(tmp_path):
    """models narrowed (e.g. on the command line): the per-model keys of the models left out
    are dropped, and a model named by import path that is left out is never imported (its
    library need not be installed here)."""
    from fusionlab.experiments import catalog
    models = catalog.load()["models"]
    before = set(models)
    try:
        _narrowed_models()
    finally:   # the catalog is the process's: leave it as it was
        for name in set(models) - before:
            del models[name]


def _narrowed_models():
    cfg = sweep.validate({"models": ["mlp"], "variants": ["eager"], "batch_sizes": [4],
                          "batch_sizes_by_model": {"mlp": [2], "softmax": [8]},
                          "sizes": {"matmul": {"dim": [1024]}},
                          "import_models": {"absent": {"factory": "no_such_package_here.models:build"}}})
    assert cfg["batch_sizes_by_model"] == {"mlp": [2]} and cfg["sizes"] == {}
    assert {(r["model"], r["batch"]) for r in sweep.runs(cfg, "torch")} == {("mlp", 2)}
    msg = err({**GOOD, "models": ["mlp", "absent"],
               "import_models": {"absent": {"factory": "no_such_package_here.models:build"}}})
    assert "import_models.absent" in msg and "no_such_package_here" in msg


def test_size_axes_expand_to_one_run_and_folder_each():
    """Every combination of a model's configured sizes is its own run; a size at the
    model's default is not part of the label, so one experiment has one folder."""
    cfg = sweep.validate({"models": ["deep_gelu_mlp", "mlp"], "variants": ["eager"], "batch_sizes": [8],
                          "sizes": {"deep_gelu_mlp": {"num_layers": [2, 4], "dim": [256, 1024]}}})
    runs = sweep.runs(cfg, "nsys")
    dirs = [sweep.run_dir("res", **r) for r in runs]
    assert dirs == ["res/runs/nsys/deep_gelu_mlp/eager/inference_float32/bs8-num_layers2/r0",
                    "res/runs/nsys/deep_gelu_mlp/eager/inference_float32/bs8/r0",
                    "res/runs/nsys/deep_gelu_mlp/eager/inference_float32/bs8-dim1024-num_layers2/r0",
                    "res/runs/nsys/deep_gelu_mlp/eager/inference_float32/bs8-dim1024/r0",
                    "res/runs/nsys/mlp/eager/inference_float32/bs8/r0"]


def test_size_labels_round_trip():
    from fusionlab.core import sizes
    from fusionlab.experiments.registry import MODELS
    spec = MODELS["deep_gelu_mlp"]
    assert spec.size_defaults() == {"dim": 256, "num_layers": 4}
    assert sizes.label({"num_layers": 8, "dim": 256}, spec.size_defaults()) == "num_layers8"
    assert sizes.parse("-dim1024-num_layers8") == sizes.parse("dim1024-num_layers8") == {"dim": 1024, "num_layers": 8}
    assert sizes.parse("default") == sizes.parse("") == {}
    assert sizes.suffix("default") == "" and sizes.from_suffix("-dim8") == "dim8"
    assert spec.resolve_sizes("num_layers8") == {"dim": 256, "num_layers": 8}
    for bad, words in (("depth3", "no size axis 'depth'"), ("dim8", "outside 16..65536"), ("dim", "not a name followed")):
        with pytest.raises(ValueError, match=words):
            spec.resolve_sizes(bad)


def test_a_size_axis_must_be_a_keyword_of_the_build_function():
    from fusionlab.experiments.registry import register_model
    with pytest.raises(ValueError, match="not an integer keyword argument"):
        register_model("x_test", description="", seed="", default_batch=1, sizes={"width": (1, 8)})(
            lambda batch, dtype, device, dim=4: None)
    with pytest.raises(ValueError, match="lowercase letters"):
        register_model("x_test", description="", seed="", default_batch=1, sizes={"dim2": (1, 8)})(
            lambda batch, dtype, device, dim2=4: None)


def test_regenerate_needs_a_profile_or_metrics_for_every_run(tmp_path):
    """Copied results: runs with only metrics.json (profile left behind) regenerate as they
    are; a mix where a profiled run lacks its metrics.json is refused with a reason."""
    from fusionlab.plan import sweep
    cfg = {"results": str(tmp_path)}
    base = tmp_path / "runs/nsys/mlp/eager/inference_float32"
    for name, files in (("bs8/r0", ["run.json", "metrics.json", "kernels.csv"]),
                        ("bs32/r0", ["run.json", "report.sqlite", "metrics.json", "kernels.csv"])):
        (base / name).mkdir(parents=True)
        for f in files:
            (base / name / f).write_text("{}")
    found = sweep.existing_runs(cfg)
    assert [(r["batch"], r["metrics_only"]) for r in found] == [(32, False), (8, True)]
    assert sweep.metrics_only(found)
    assert "1 without their profile" in sweep.recorded_machine(cfg, found).note
    (base / "bs32/r0/metrics.json").unlink()
    with pytest.raises(sweep.ConfigError, match="have their profiles but no metrics.json"):
        sweep.existing_runs(cfg)


def test_the_config_validator_loads_without_jsonschemas_iri_grammar():
    """Importing the sweep (every Snakemake command does) skips rfc3987_syntax, whose
    grammar jsonschema would build at import (1.2 s), and leaves it importable after."""
    import subprocess
    import sys
    code = ("import sys; import fusionlab.plan.sweep as s; "
            "assert 'rfc3987_syntax' not in sys.modules and sys.modules.get('rfc3987_syntax', 0) is not None; "
            "import yaml; s.validate(yaml.safe_load(open('config/smoke.yaml')))")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
