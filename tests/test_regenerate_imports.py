"""Regenerating a sweep of models named by import path: nothing runs, so validation takes
their catalog entries from the config alone and never imports them (their libraries, e.g.
torchvision or timm, need not be installed where tables and figures are redrawn)."""
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
