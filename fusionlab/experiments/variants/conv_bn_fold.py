"""Conv + BatchNorm folding for inference (seed 001, 3.2): W' = gamma W / sqrt(var + eps),
b' = gamma (b - mean) / sqrt(var + eps) + beta, by torch.nn.utils.fusion.fuse_conv_bn_eval
through torch.fx.experimental.optimization.fuse (every Conv -> BatchNorm pair in the
traced graph). Inference only: training BatchNorm uses batch statistics."""
import torch
from torch.fx.experimental.optimization import fuse

from fusionlab.experiments.registry import Unsupported, register_variant, requires


def _count_bn(m):
    return sum(isinstance(x, torch.nn.modules.batchnorm._BatchNorm) for x in m.modules())


@register_variant("conv_bn_fold", description="fold BatchNorm into the preceding Conv (fuse_conv_bn_eval)",
                  supports=requires(tag="conv_bn", modes=("inference",),
                                    why="; folding uses BatchNorm's running statistics"))
def apply(model, example_inputs, options):
    before = _count_bn(model)
    folded = fuse(model.eval(), inplace=False)
    if _count_bn(folded) == before:
        raise Unsupported("no Conv -> BatchNorm pair to fold in the traced graph")
    return folded
