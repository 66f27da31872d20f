"""torch.compile with the Inductor backend, default mode (seed 000, 002)."""
import torch

from experiments.registry import register_variant


@register_variant("compile", description='torch.compile(model, backend="inductor", mode="default")')
def apply(model, example_inputs, options):
    return torch.compile(model, backend="inductor", mode=options.get("compile_mode", "default"),
                         fullgraph=options.get("fullgraph", False))
