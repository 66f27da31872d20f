"""Every registered (model, variant) pair runs through the runner on this machine's
device: supported pairs must be `ok` (checked against eager before timing), the others
`unsupported` with the reason their supports() gives. On the CPU machine the GPU-only
variants (CUDA graphs, Triton and CUDA kernels) are the unsupported ones; on the GPU
machine the same test runs them."""
import json

import pytest
import torch

from fusionlab.runner import cli
from fusionlab.experiments.registry import MODELS, VARIANTS

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
PAIRS = [(m, v) for m in sorted(MODELS) for v in sorted(VARIANTS)]
# train mode on the CPU: every rewrite, and compile on the models with a backward worth checking
TRAIN = [(m, v) for m, v in PAIRS if "train" in MODELS[m].modes
         and (not v.startswith("compile") or (v == "compile" and m in ("mlp", "lstm_cell", "conv_bn_relu")))]


# on the CPU, the largest models at smaller sizes (core.sizes labels): each pair still runs
# the whole runner (build, check against eager, paired timing, the traced range); the
# default sizes are the GPU's (matmul_heavy's 4096-wide layers took 17-22 s a pair, most of
# it the float64 check of 64M gradients)
CPU_SIZES = {"matmul_heavy": "dim512", "matmul": "dim256", "lstm_cell": "input_size256-hidden256",
             "transformer_block": "seq32", "pointwise_heavy": "dim512"}


def go(tmp_path, model, variant, mode="inference", dtype="float32", batch=2):
    out = tmp_path / "run.json"
    size = CPU_SIZES.get(model, "default") if DEVICE == "cpu" else "default"
    assert cli.main(["--model", model, "--variant", variant, "--batch", str(batch), "--size", size, "--warmup", "1",
                     "--warmup-min-s", "0", "--iters", "1", "--device", DEVICE, "--mode", mode, "--dtype", dtype,
                     "--paired-eager", "--paired-ci", "0", "--out", str(out)]) == 0
    # as the workflow runs it (paired_eager), at exactly --windows pairs: one-iteration
    # windows never reach the default 2% CI, and 40 pairs took 0.7-0.9 s a pair
    # (test_timing checks that pairs are added up to the CI, the window cap or the time cap);
    # one warm-up iteration without the warm-up's time floor (test_runner checks the floor)
    return json.loads(out.read_text())


def expect(r, model, variant, mode):
    why = VARIANTS[variant].supports(model, DEVICE, mode) or \
        (None if mode in MODELS[model].modes else f"model {model} has no {mode} mode")
    if why:
        assert r["status"] == "unsupported" and r["reason"] == why
        assert "timing" not in r
    else:
        assert r["status"] == "ok", f"{model}/{variant}/{mode}: {r['status']}: {r.get('reason')}"
        assert r["correctness"]["passed"]
        assert r["timing"]["wall_time_per_iter_ms"] > 0
        # eager timed beside the variant in its process (nothing failed, nothing left out)
        t = r["timing"]
        if variant == "eager":
            assert t["eager_windows_ms"] is None and t["paired_speedup"] is None
        else:
            assert "paired_eager_error" not in r and len(t["eager_windows_ms"]) == len(t["windows_ms"])
            assert t["paired_speedup"] > 0


# Pairs that never finish on the GPU: TorchScript's NNC fuser, compiling pointwise_heavy's
# 27-op chain on its third call, did not finish in 120 s (bf16) or 300 s (fp32) on an
# H100, in the warmup phase. The runner's time limit records them as `timeout`.
GPU_TIMEOUT = {("pointwise_heavy", "jit_script")}


# On the CPU each compile is a cold compile (seconds of a 2-core machine; a test session
# starts with Inductor's cache empty): `compile` runs on every model, the other compile
# modes on three (CPU_COMPILE_MODELS); on the GPU every mode runs on every model. Two of
# those modes are, on the CPU, their twins with Inductor's CUDA graphs on, which a CPU run
# has none of (test_cpu_twins_differ_only_in_cuda_graphs): the same generated code and path
# through the runner.
CPU_TWINS = {"compile_reduce_overhead": "compile", "compile_max_autotune": "compile_max_autotune_no_cudagraphs"}
CPU_COMPILE_MODELS = ("mlp", "conv_bn_relu", "transformer_block")


def inductor_mode(variant):
    return "default" if variant == "compile" else variant.removeprefix("compile_").replace("_", "-")


def test_cpu_twins_differ_only_in_cuda_graphs():
    from torch._inductor import list_mode_options
    for variant, twin in CPU_TWINS.items():
        a, b = list_mode_options(inductor_mode(variant)), list_mode_options(inductor_mode(twin))
        assert {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)} == {"triton.cudagraphs"}
        assert a["triton.cudagraphs"] is True and not b.get("triton.cudagraphs")


@pytest.mark.parametrize("model,variant", PAIRS, ids=[f"{m}-{v}" for m, v in PAIRS])
def test_pair_inference(tmp_path, model, variant):
    if (DEVICE == "cpu" and variant.startswith("compile_") and model not in CPU_COMPILE_MODELS
            and not VARIANTS[variant].supports(model, DEVICE, "inference")):   # it would compile
        twin = f"the same code as {CPU_TWINS[variant]} (only CUDA graphs differ); " if variant in CPU_TWINS else ""
        pytest.skip(f"on the CPU {twin}a compile mode besides compile runs on {', '.join(CPU_COMPILE_MODELS)}")
    if DEVICE == "cuda" and (model, variant) in GPU_TIMEOUT:
        import subprocess
        import sys
        out = tmp_path / "run.json"
        p = subprocess.run([sys.executable, "-m", "fusionlab.runner", "--model", model, "--variant", variant,
                            "--batch", "2", "--warmup", "1", "--iters", "1", "--timeout", "60",
                            "--out", str(out)], capture_output=True, text=True, timeout=200)
        r = json.loads(out.read_text())
        assert r["status"] in ("timeout", "error") and p.returncode != 0, r
        return
    expect(go(tmp_path, model, variant), model, variant, "inference")


@pytest.mark.parametrize("model,variant", TRAIN, ids=[f"{m}-{v}" for m, v in TRAIN])
def test_pair_train(tmp_path, model, variant):
    expect(go(tmp_path, model, variant, mode="train"), model, variant, "train")


def test_every_model_and_variant_documented():
    for spec in [*MODELS.values(), *VARIANTS.values()]:
        assert spec.description
    for spec in MODELS.values():
        assert spec.seed and spec.default_batch > 0


def test_jit_script_deprecation_recorded(tmp_path):
    r = go(tmp_path, "mlp", "jit_script")
    assert r["status"] == "ok"
    assert any("DeprecationWarning" in w and "torch.jit.script" in w for w in r["warnings"])


def test_compile_introspection_recorded(tmp_path):
    r = go(tmp_path, "pointwise_heavy", "compile")
    c = r["compile"]
    assert c["graphs"] == 1 and c["graph_breaks"] == 0 and c["generated_kernels"] >= 1
    assert c["fx_graph_cache_hits"] + c["fx_graph_cache_misses"] == 1
    # the same graph again, as the nsys process compiles it after the untraced one: from
    # Inductor's cache, with its kernels still counted
    again = go(tmp_path, "pointwise_heavy", "compile")["compile"]
    assert (again["fx_graph_cache_hits"], again["fx_graph_cache_misses"]) == (1, 0)
    assert again["generated_kernels"] == c["generated_kernels"]


@pytest.mark.slow
def test_compile_debug_artifacts_kept(tmp_path):
    out = tmp_path / "run.json"
    dbg = tmp_path / "compile_debug"
    import subprocess
    import sys
    # a fresh process: TORCH_COMPILE_DEBUG is read when torch is imported
    subprocess.run([sys.executable, "-m", "fusionlab.runner", "--model", "reduction", "--variant", "compile",
                    "--batch", "4", "--warmup", "1", "--iters", "1", "--device", DEVICE,
                    "--compile-debug", str(dbg), "--out", str(out)], check=True, capture_output=True)
    r = json.loads(out.read_text())
    assert r["status"] == "ok"
    files = r["compile_debug"]["files"]
    assert files["output_code.py"] and files["ir_post_fusion.txt"]
    code = (dbg / files["output_code.py"][0]).read_text()
    assert "fused" in code  # the generated kernel of (x * 2 + 1).sum(dim=1)


def test_rewrites_change_the_graph():
    from fusionlab.experiments.variants.fx_add_relu import fuse_add_relu
    from fusionlab.experiments.variants.nn_linear import matmul_bias_to_addmm
    import torch.fx as fx
    model, _ = MODELS["mlp"].build(4, torch.float32, "cpu")
    gm = fx.symbolic_trace(model)
    assert matmul_bias_to_addmm(gm) == 3
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"].count(torch.addmm) == 3
    gm = fx.symbolic_trace(model)
    assert fuse_add_relu(gm) == 2      # the last layer has no relu
    gm = fx.symbolic_trace(MODELS["mlp_linear"].build(4, torch.float32, "cpu")[0])
    assert matmul_bias_to_addmm(gm) == 0 and fuse_add_relu(gm) == 0   # nothing to rewrite


def test_conv_bn_fold_matches_seed_formula():
    from fusionlab.experiments.variants.conv_bn_fold import apply
    model, (x,) = MODELS["conv_bn_relu"].build(2, torch.float32, "cpu")
    model.eval()
    folded = apply(model, (x,), {})
    conv, bn = model.conv, model.bn
    rsqrt = torch.rsqrt(bn.running_var + bn.eps)
    w = conv.weight * (bn.weight * rsqrt).view(-1, 1, 1, 1)
    b = (conv.bias - bn.running_mean) * bn.weight * rsqrt + bn.bias
    fconv = [m for m in folded.modules() if isinstance(m, torch.nn.Conv2d)][0]
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in folded.modules())
    torch.testing.assert_close(fconv.weight, w)
    torch.testing.assert_close(fconv.bias, b)


def test_unsupported_dtype_of_seed_kernel_is_unsupported_not_error(tmp_path):
    if DEVICE != "cuda":
        pytest.skip("the seed's CUDA kernel needs a GPU")
    r = go(tmp_path, "gelu", "cuda_seed", dtype="bfloat16", batch=4)
    assert r["status"] == "unsupported" and "fp32 only" in r["reason"]
    r = go(tmp_path, "gelu", "triton_seed", dtype="bfloat16", batch=4)
    assert r["status"] == "unsupported" and "fp32/fp64 only" in r["reason"]


def test_cudnn_lstm_runs_at_eager_matmul_precision():
    # cuDNN's RNN defaults to TF32 for fp32 (an H100 gave RMSE 1.1e-4 against 2.0e-7 for
    # eager): the variant sets it to what eager's matmuls use, and restores it after
    import torch
    from fusionlab.experiments.variants.cudnn_lstm import eager_matmul_precision
    rnn = torch.backends.cudnn.rnn
    before, matmul = rnn.fp32_precision, torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        with eager_matmul_precision():
            assert rnn.fp32_precision == "ieee"
        assert rnn.fp32_precision == before
        torch.backends.cuda.matmul.allow_tf32 = True
        with eager_matmul_precision():
            assert rnn.fp32_precision == "tf32"
        assert rnn.fp32_precision == before
    finally:
        torch.backends.cuda.matmul.allow_tf32 = matmul
