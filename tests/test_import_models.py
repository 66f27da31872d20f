"""Models named by import path: the registry takes a factory from a module or a file, the
config names it (import_models), its errors are one line naming the key, and the runner,
`fusionlab list` and the real networks' factories run it as they run a built-in model."""
import json
import os
import subprocess
import sys

import pytest
import torch

from fusionlab.experiments import registry
from fusionlab.plan import sweep

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
USER = os.path.join(ROOT, "tests", "data", "user_models", "rmsnorm.py")


@pytest.fixture
def registered():
    """Names registered by a test are removed after it."""
    before = set(registry.MODELS)
    yield
    for name in set(registry.MODELS) - before:
        del registry.MODELS[name]


def test_a_factory_in_a_file_joins_with_its_size_axes(registered):
    spec = registry.import_model("rmsnorm_t", f"{USER}:build")
    registry.check_model(spec)
    assert spec.origin == f"{USER}:build" and spec.modes == ("inference", "train")
    assert [(a.name, a.default) for a in spec.sizes] == [("dim", 1024)]
    assert spec.description == "RMSNorm over dim features; x = (batch, dim)"
    model, (x,) = spec.build(3, torch.float32, "cpu", dim=8)
    assert model(x).shape == (3, 8)


def test_a_factory_in_a_module_keeps_its_registered_metadata(registered):
    spec = registry.import_model("mlp_again", "fusionlab.experiments.models.mlp:build")
    assert spec.default_batch == registry.MODELS["mlp"].default_batch and spec.sizes == registry.MODELS["mlp"].sizes


@pytest.mark.parametrize("target, words", [
    ("nope.py:build", "no such file"),
    (f"{USER}:missing", "has no 'missing'"),
    ("json:dumps", "takes (batch, dtype, device, **sizes)"),
    ("no_such_package_xyz.mod:build", "importing no_such_package_xyz.mod failed: ModuleNotFoundError"),
    ("build", "not an import path"),
])
def test_an_import_that_cannot_join_is_one_line(registered, target, words):
    with pytest.raises(registry.ImportError_) as e:
        registry.import_model("bad_t", target)
    assert words in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("factory, words", [
    ("not_a_module", "returned a tuple of (str, tuple); a factory returns (torch.nn.Module, tuple of input tensors)"),
    ("shape_mismatch", "its inputs do not run through it: RuntimeError"),
])
def test_a_factory_that_does_not_run_is_one_line(registered, factory, words):
    spec = registry.import_model(f"bad_{factory}", f"{USER}:{factory}")
    with pytest.raises(registry.ImportError_) as e:
        registry.check_model(spec)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_a_built_in_name_is_not_taken(registered):
    with pytest.raises(registry.ImportError_, match="taken by a built-in model"):
        registry.import_model("softmax", f"{USER}:build")


@pytest.mark.parametrize("entry, words", [
    ("rmsnorm", "'rmsnorm' is not an import path"),
    ({"factory": "a:b", "batch": 3}, "unknown key(s) 'batch'"),
    ({"factory": "a:b", "modes": ["fast"]}, "import_models.mine.modes[0]: 'fast' is not allowed"),
])
def test_a_malformed_entry_names_its_key(entry, words):
    with pytest.raises(sweep.ConfigError) as e:
        sweep.import_entries({"mine": entry})
    assert words in str(e.value)


@pytest.mark.slow
def test_the_config_names_it_and_fusionlab_list_shows_it(tmp_path):
    """Through the sweep's own validation (the catalog computed in a child process): the
    model is a name the sweep may use, with its size axis; a broken one is one line naming
    the key; `fusionlab list --configfile` lists it."""
    env = dict(os.environ, FUSIONLAB_CACHE_DIR=str(tmp_path / "cache"))
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"import_models:\n  rmsnorm: {USER}:build\n  broken: {USER}:shape_mismatch\n"
                   "models: [rmsnorm]\nvariants: [compile]\nbatch_sizes: [4]\n")
    p = subprocess.run([sys.executable, "-m", "fusionlab.cli", "list", "--device", "cpu", "--configfile", str(cfg)],
                       capture_output=True, text=True, cwd=ROOT, env=env)
    assert p.returncode == 2 and p.stderr.count("\n") == 1
    assert "import_models.broken" in p.stderr and "do not run through it" in p.stderr
    assert any(ln.strip().startswith("rmsnorm") for ln in p.stdout.splitlines())   # the others still listed
    assert not any(ln.strip().startswith("broken") for ln in p.stdout.splitlines())
    cfg.write_text(cfg.read_text().replace(f"  broken: {USER}:shape_mismatch\n", ""))
    p = subprocess.run([sys.executable, "-m", "fusionlab.cli", "list", "--device", "cpu", "--configfile", str(cfg)],
                       capture_output=True, text=True, cwd=ROOT, env=env)
    assert p.returncode == 0, p.stderr
    line = next(ln for ln in p.stdout.splitlines() if ln.strip().startswith("rmsnorm"))
    assert f"from {USER}:build" in line and "dim 1..2147483647 (default 1024)" in p.stdout


def _run(tmp_path, *args):
    out = tmp_path / "run.json"
    p = subprocess.run([sys.executable, "-m", "fusionlab.runner", *args, "--device", "cpu", "--batch", "2",
                        "--iters", "2", "--warmup", "1", "--windows", "1", "--out", str(out)],
                       capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    return json.loads(out.read_text())


def test_the_runner_runs_it_under_autocast(tmp_path):
    """An imported model, trained under autocast(bfloat16): checked against eager (which
    runs under the same autocast) and recorded with its origin."""
    run = _run(tmp_path, "--model", "rmsnorm", "--model-from", json.dumps({"factory": f"{USER}:build"}),
               "--size", "dim64", "--variant", "eager", "--mode", "train", "--dtype", "amp_bfloat16")
    assert run["status"] == "ok", run["reason"]
    assert run["model_origin"] == f"{USER}:build" and run["dtype"] == "amp_bfloat16" and run["sizes"] == {"dim": 64}


@pytest.mark.slow
def test_a_real_network_factory_runs_at_a_small_size(tmp_path):
    """BERT from its transformers configuration, one layer, 8 tokens (the GPU sweep runs
    config/real-models.yaml's full sizes)."""
    pytest.importorskip("transformers")
    run = _run(tmp_path, "--model", "bert", "--size", "num_layers1-seq8", "--variant", "eager",
               "--model-from", json.dumps({"factory": "fusionlab.experiments.real_models.bert:build"}))
    assert run["status"] == "ok", run["reason"]
    assert run["model_origin"] == "fusionlab.experiments.real_models.bert:build"


@pytest.mark.parametrize("name", ["gpt2", "llama_block"])
def test_the_decoder_factories_build_and_run(name):
    pytest.importorskip("transformers")
    import importlib
    build = importlib.import_module(f"fusionlab.experiments.real_models.{name}").build
    kwargs = {"gpt2": {"seq": 8, "num_layers": 1}, "llama_block": {"seq": 8, "hidden": 128}}[name]
    model, (x,) = build(2, torch.bfloat16, "cpu", **kwargs)
    with torch.no_grad():
        y = model(x)
    assert y.dtype == torch.bfloat16 and y.shape[:2] == (2, 8)


def test_regenerating_keeps_the_recorded_cost_of_a_model_it_cannot_import():
    from fusionlab.experiments.cost import table
    key = ("nope", 8, "inference", "bfloat16", "default")
    imports = {"nope": {"factory": "no_such_package_xyz.nets:build"}}
    recorded = [{"model": "nope", "batch": "8", "mode": "inference", "dtype": "bfloat16", "size": "default",
                 "flops": "1234", "bytes_fused": "56"}]
    assert table([key], imports, recorded) == recorded
    failed, = table([key], imports)
    assert failed["cost_error"].startswith("importing no_such_package_xyz.nets failed") and "flops" not in failed


def test_eager_has_no_compilation_latency():
    """Eager's first call against eager's own (noise, sometimes negative) is never shown as a
    compile latency; compile's is."""
    import pandas as pd
    from fusionlab.analysis.sweep import tables
    runs = pd.read_csv(os.path.join(ROOT, "tests", "data", "real_models_h100", "runs.csv"))
    s = tables.speedups(runs)
    assert s[s["variant"] == "eager"]["compilation_latency_s"].isna().all()
    assert (s[s["variant"] == "compile"]["compilation_latency_s"] > 1).all()


@pytest.mark.slow
def test_a_model_named_by_import_path_goes_through_snakemake_all(tmp_path):
    """A tiny model from a file outside the package, through the real `snakemake all` on the
    CPU: run, profiled (torch.profiler), tables, the story and the audit."""
    import pandas as pd
    res = tmp_path / "results"
    cfg = tmp_path / "byo.yaml"
    cfg.write_text(f"import_models:\n  rmsnorm: {USER}:build\nmodels: [rmsnorm]\nvariants: [eager]\n"
                   "batch_sizes: [4]\nsizes: {rmsnorm: {dim: [64]}}\nwarmup_iters: 1\nwarmup_min_s: 0\n"
                   f"measure_iters: 3\nrepeats: 1\npaired_ci: 0\ndevice: cpu\nprofiler: auto\nresults: {res}\n")
    env = dict(os.environ, FUSIONLAB_CACHE_DIR=str(tmp_path / "cache"))
    p = subprocess.run([sys.executable, "-m", "snakemake", "all", "--cores", "2", "--configfile", str(cfg)],
                       capture_output=True, text=True, cwd=ROOT, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    runs = pd.read_csv(res / "tables" / "runs.csv")
    assert list(zip(runs.model, runs.status)) == [("rmsnorm", "ok")]
    run = json.loads(next(res.glob("runs/*/rmsnorm/eager/*/*/r0/run.json")).read_text())
    assert run["model_origin"] == f"{USER}:build" and run["sizes"] == {"dim": 64}
    assert "rmsnorm" in (res / "summary.md").read_text()
    audit = subprocess.run([sys.executable, "-m", "fusionlab.cli", "audit", str(res)], capture_output=True, text=True,
                           cwd=ROOT)
    assert audit.returncode == 0 and "no contradiction" in audit.stdout, audit.stdout + audit.stderr
