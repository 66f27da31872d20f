"""torch.compile with the Inductor backend (seed 000, 002): the default mode, each other
mode as its own variant, and dynamic shapes.

- compile: mode from config key compile_mode (default "default")
- compile_reduce_overhead: + CUDA graphs (Inductor's cudagraph trees)
- compile_max_autotune: + autotuned matmul / conv templates and CUDA graphs
- compile_max_autotune_no_cudagraphs: the autotuning without CUDA graphs
- compile_dynamic: dynamic=True, kernels generated for symbolic shapes
"""
import torch

from fusionlab.experiments.registry import register_variant


def prepare(options):
    """Before the GPU lock: dynamo's and Inductor's imports (torch.compile's first call
    imports its backend: seconds) and, unless options["compile_workers"] is
    False (a process that will find its graphs in Inductor's cache), Inductor's compile
    workers: a pool of processes that each import torch, seconds of CPU beside the
    measurement."""
    import torch._dynamo  # noqa: F401
    torch.compile(lambda x: x)  # nothing compiled until called: the imports only
    if options.get("compile_workers", True):
        from torch._inductor.async_compile import AsyncCompile
        AsyncCompile.warm_pool()


def _compile(model, mode, dynamic=None, fullgraph=False):
    return torch.compile(model, backend="inductor", mode=mode, dynamic=dynamic, fullgraph=fullgraph)


@register_variant("compile", description='torch.compile(model, backend="inductor", mode=<config compile_mode>)',
                  prepare=prepare)
def apply(model, example_inputs, options):
    return _compile(model, options.get("compile_mode", "default"), fullgraph=options.get("fullgraph", False))


def _mode_variant(mode):
    def apply_mode(model, example_inputs, options):
        return _compile(model, mode)
    return apply_mode


for _mode in ("reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"):
    register_variant(f"compile_{_mode.replace('-', '_')}",
                     description=f'torch.compile(model, backend="inductor", mode="{_mode}")',
                     prepare=prepare)(_mode_variant(_mode))


@register_variant("compile_dynamic", description='torch.compile(model, backend="inductor", dynamic=True)',
                  prepare=prepare)
def apply_dynamic(model, example_inputs, options):
    return _compile(model, "default", dynamic=True)
