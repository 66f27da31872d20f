"""Regenerating a sweep of models named by import path: nothing runs, so validation takes
their catalog entries from the config alone and never imports them (their libraries, e.g.
torchvision or timm, need not be installed where tables and figures are redrawn)."""
import sys

import pytest

from fusionlab.experiments import catalog
from fusionlab.plan import sweep

CONFIG = {"import_models": {"absent_net": {"factory": "no_such_package_xyz.nets:build", "default_batch": 48},
                            "absent_block": "no_such_package_xyz.blocks:build"},
          "models": ["absent_net", "absent_block"], "variants": ["compile"], "batch_sizes": "default",
          "mode": ["inference", "train"]}


@pytest.fixture
def no_import(monkeypatch):
    """The built-in catalog loaded, then any child process (the one that imports and checks
    a model) an error; the models a test adds are removed after it."""
    models = catalog.load()["models"]
    before = set(models)

    def refuse(*a, **k):
        raise AssertionError("a child process was started to import a model")
    monkeypatch.setattr(catalog.subprocess, "run", refuse)
    yield
    for name in set(models) - before:
        del models[name]


def test_regenerate_builds_catalog_entries_from_the_config_alone(no_import, tmp_path):
    cfg = sweep.validate({**CONFIG, "results": str(tmp_path / "results")}, regenerate=True)
    assert cfg["models"] == ["absent_net", "absent_block"] and cfg["variants"] == ["eager", "compile"]
    models = catalog.load()["models"]
    assert models["absent_net"] == {"default_batch": 48, "modes": ["inference", "train"], "seed": "",
                                    "description": "", "origin": "no_such_package_xyz.nets:build", "sizes": {},
                                    "unchecked": True}
    assert models["absent_block"]["default_batch"] == 1 and models["absent_block"]["sizes"] == {}
    assert catalog.imported("absent_net") == "no_such_package_xyz.nets:build"


def test_a_sweep_that_runs_still_imports_and_checks_them(no_import, tmp_path):
    with pytest.raises(AssertionError, match="child process"):
        sweep.validate({**CONFIG, "results": str(tmp_path / "results")})


def recorded(results, model, label, sizes, profile="trace.json", batch=8):
    """A run of `model` recorded under results as the runner writes it: run.json (its size
    label and every axis's value) and its torch.profiler trace."""
    import json
    folder = results / "runs" / "torch" / model / "eager" / "inference_float32"
    folder = folder / f"bs{batch}{'' if label == 'default' else '-' + label}" / "r0"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"model": model, "size": label, "sizes": sizes, "status": "ok"}))
    (folder / profile).write_text("{}")


def test_regenerate_takes_the_size_axes_its_runs_recorded(no_import, tmp_path):
    """A model by import path whose `seq` axis was swept (its default, 128, and 512): the
    axis, and its default, come from the recorded runs, so its size labels and run folders
    are the sweep's own."""
    res = tmp_path / "results"
    recorded(res, "absent_bert", "default", {"seq": 128, "layers": 2})
    recorded(res, "absent_bert", "seq512", {"seq": 512, "layers": 2})
    config = {"import_models": {"absent_bert": "no_such_package_xyz.bert:build"}, "models": ["absent_bert"],
              "variants": ["eager"], "batch_sizes": [8], "sizes": {"absent_bert": {"seq": [128, 512]}},
              "results": str(res)}
    cfg = sweep.validate(config, regenerate=True)
    assert {a: d["default"] for a, d in catalog.sizes("absent_bert").items()} == {"seq": 128, "layers": 2}
    assert sweep.size_labels(cfg, "absent_bert") == ["default", "seq512"]
    assert [r["size"] for r in sweep.existing_runs(cfg)] == ["", "-seq512"]
    assert [r["size"] for r in sweep.runs(cfg, "torch")] == ["", "-seq512"]


def test_an_axis_every_run_names_has_no_known_default(no_import, tmp_path):
    res = tmp_path / "results"
    recorded(res, "absent_bert2", "seq256", {"seq": 256})
    recorded(res, "absent_bert2", "seq512", {"seq": 512})
    config = {"import_models": {"absent_bert2": "no_such_package_xyz.bert:build"}, "models": ["absent_bert2"],
              "variants": ["eager"], "batch_sizes": [8], "sizes": {"absent_bert2": {"seq": [256, 512, 1024]}},
              "results": str(res)}
    cfg = sweep.validate(config, regenerate=True)
    assert catalog.sizes("absent_bert2")["seq"]["default"] is None
    assert sweep.size_labels(cfg, "absent_bert2") == ["seq256", "seq512", "seq1024"]   # 1024: a row not run
    with pytest.raises(sweep.ConfigError, match="'dim' is not a size axis of absent_bert2; allowed values: seq$"):
        sweep.validate({**config, "sizes": {"absent_bert2": {"dim": [4]}}}, regenerate=True)


def test_a_model_with_no_recorded_run_keeps_the_configs_axes(no_import, tmp_path):
    """A sweep stopped before any run of one of its models: regenerating it takes that
    model's size axes from the config (its configurations rows not run), not an error."""
    res = tmp_path / "results"
    recorded(res, "absent_gpt", "seq512", {"seq": 512})
    config = {"import_models": {"absent_gpt": "no_such_package_xyz.gpt:build",
                                "absent_bert3": "no_such_package_xyz.bert:build"},
              "models": ["absent_gpt", "absent_bert3"], "variants": ["eager"], "batch_sizes": [8],
              "sizes": {"absent_gpt": {"seq": [512]}, "absent_bert3": {"seq": [512]}}, "results": str(res)}
    cfg = sweep.validate(config, regenerate=True)
    assert catalog.sizes("absent_bert3") == {"seq": {"default": None, "min": 1, "max": sys.maxsize}}
    assert sweep.size_labels(cfg, "absent_bert3") == ["seq512"]
    assert [(r["model"], r["size"]) for r in sweep.runs(cfg, "torch")] == [("absent_gpt", "-seq512"),
                                                                            ("absent_bert3", "-seq512")]
