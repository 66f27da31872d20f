"""Hand-written kernels (experiments/kernels/) in place of the model's fusable ops: the
model's forward_hand(ops, *inputs) calls gelu, bias_gelu, add_relu, softmax or lstm_gates
of one implementation; matmuls stay in cuBLAS.

- triton_kernel / cuda_kernel: the tuned Triton and CUDA C++ kernels (GPU), inference and
  train: GELU, bias+GELU, add+ReLU and the LSTM gates are autograd.Functions with a
  hand-written backward kernel in the same language (kernels/functions.py); softmax is
  forward-only, and its model has no train mode
- aten_op: PyTorch's own fused op where the model's math has one (F.gelu, torch.softmax)
- triton_seed / cuda_seed: the seed's naive GELU kernels (seed 004), for comparison
  (inference: they define no backward)
"""
import functools

from fusionlab.experiments import kernels
from fusionlab.experiments.kernels import seed
from fusionlab.experiments.registry import register_variant, requires

GPU = dict(devices=("cuda",), why="; the hand-written kernels run on the GPU")
GPU_INFERENCE = dict(devices=("cuda",), modes=("inference",),
                     why="; the seed's naive kernels run on the GPU and define no backward")


def _prepare(impl):
    # before the GPU lock: import Triton, or build (first time: nvcc, tens of seconds) and
    # load the CUDA extension
    def prepare(options):
        module = kernels.load(impl)
        if impl == "cuda":
            module.extension()
    return prepare


def _hand(impl):
    def apply(model, example_inputs, options):
        return functools.partial(model.forward_hand, kernels.load(impl))
    return apply


register_variant("triton_kernel", description="hand-written Triton kernels for the fusable ops",
                 supports=requires(tag="hand", **GPU), prepare=_prepare("triton"))(_hand("triton"))
register_variant("cuda_kernel", description="hand-written CUDA C++ kernels (load_inline) for the fusable ops",
                 supports=requires(tag="hand", **GPU), prepare=_prepare("cuda"))(_hand("cuda"))
register_variant("aten_op", description="PyTorch's fused library op for the model's math (F.gelu, softmax)",
                 supports=requires(tag="library_op"))(_hand("aten"))


@register_variant("triton_seed", description="the seed's naive Triton GELU kernel (seed 004)",
                  supports=requires(tag="gelu_tanh", **GPU_INFERENCE))
def apply_triton_seed(model, example_inputs, options):
    return seed.triton_gelu


@register_variant("cuda_seed", description="the seed's naive CUDA GELU kernel (seed 004), fp32 only",
                  supports=requires(tag="gelu_tanh", **GPU_INFERENCE),
                  prepare=lambda options: seed.cuda_module())
def apply_cuda_seed(model, example_inputs, options):
    return seed.cuda_gelu
