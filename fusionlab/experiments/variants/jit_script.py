"""torch.jit.script (seed 003, 001): TorchScript with its fuser (NNC / TensorExpr) fusing
pointwise ops on the GPU after its profiling runs (the warm-up covers them). TorchScript
is deprecated in recent PyTorch; the runner records the warning it gives in run.json
(warnings) and the log, it is not hidden."""
import torch

from fusionlab.experiments.registry import register_variant


@register_variant("jit_script", description="torch.jit.script(model), TorchScript fuser (NNC)")
def apply(model, example_inputs, options):
    return torch.jit.script(model)
