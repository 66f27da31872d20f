"""The cost model on transformers' GPT-2 and Llama block: their meta run reads a tensor's
value, so they are counted on FakeTensors; the oracle is the same count on real CPU tensors
(torch's FlopCounterMode, attention by its math decomposition, as on the meta device)."""
import functools

import pytest
import torch

from fusionlab.experiments import cost
from fusionlab.experiments.registry import MODELS, import_model

pytest.importorskip("transformers")

SMALL = {"gpt2": "num_layers1-seq8", "llama_block": "hidden128-seq8"}


@pytest.fixture(scope="module", autouse=True)
def registered():
    for name in SMALL:
        import_model(name, f"fusionlab.experiments.real_models.{name}:build")


@functools.lru_cache(maxsize=None)
def built_on_cpu(name, batch):
    spec = MODELS[name]
    torch.manual_seed(0)
    return spec.build(batch, torch.float32, "cpu", **spec.resolve_sizes(SMALL[name]))


def on_real_tensors(name, batch, mode):
    """FlopCounterMode and the byte count on the CPU, real weights and tokens (one train
    iteration per model: its gradients start empty)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    model, inputs = built_on_cpu(name, batch)
    with sdpa_kernel(SDPBackend.MATH):
        return cost.measure(model, inputs, mode)


@pytest.mark.parametrize("name", sorted(SMALL))
@pytest.mark.parametrize("mode", ["inference", "train"])
def test_decoders_are_counted_on_fake_tensors_as_on_real_ones(name, mode):
    counted = cost.count(name, 2, mode, "float32", SMALL[name])
    real = on_real_tensors(name, 2, mode)
    assert counted["cost_method"] == "fake_tensor" and "cost_error" not in counted
    assert counted["flops"] > 0 and abs(counted["flops"] / real["flops"] - 1) < 0.01
    assert counted["bytes_fused"] == real["bytes_fused"]   # GPT-2's tied embedding once
    # the tracing path builds the causal mask as a tensor: its bytes only
    assert 0 < counted["bytes_unfused"] - real["bytes_unfused"] < 1e-3 * real["bytes_unfused"]


def test_gpt2_flops_by_hand():
    """One layer, batch 2, seq 8, hidden 768, vocabulary 50257: 2 FLOPs per multiply-add of
    the four projections (qkv 3h, out h, MLP 4h and back), the LM head and attention's two
    batched matmuls (12 heads, 64 wide)."""
    b, s, h, v = 2, 8, 768, 50257
    tokens = b * s
    flops = 2 * tokens * h * (3 * h + h + 4 * h + 4 * h) + 2 * tokens * h * v + 2 * (2 * b * 12 * s * s * 64)
    assert cost.count("gpt2", b, "inference", "float32", SMALL["gpt2"])["flops"] == flops


def test_a_model_no_method_runs_gets_its_error_in_the_row():
    from fusionlab.experiments.registry import register_model

    @register_model("reads_a_value_twice", seed="test", default_batch=2, description="x.sum().item() twice")
    def build(batch, dtype, device):
        class M(torch.nn.Module):
            def forward(self, x):
                return x * int(x.sum().item())
        return M(), (torch.ones(batch, 4, device=device, dtype=dtype),)

    try:
        row, = cost.table([("reads_a_value_twice", 2, "inference", "float32", "default")])
    finally:
        MODELS.pop("reads_a_value_twice")
    assert row["cost_method"] == "none" and "flops" not in row
    assert row["cost_error"] == "DataDependentOutputException: aten._local_scalar_dense.default"
