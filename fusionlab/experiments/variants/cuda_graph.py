"""Manual CUDA graph of the eager model (seed 002: CUDA graphs need static shapes):
warm up on a side stream, capture one forward with torch.cuda.graph, then replay it.
Inputs are copied into the captured (static) tensors when a call passes other tensors.
Inference only: capturing backward and optimizer too is what compile_reduce_overhead does."""
import torch

from fusionlab.experiments.registry import register_variant, requires


@register_variant("cuda_graph", description="torch.cuda.CUDAGraph capture of the eager forward, replayed",
                  supports=requires(devices=("cuda",), modes=("inference",),
                                    why="; CUDA graphs are a GPU feature and this captures the forward only"))
def apply(model, example_inputs, options):
    static = tuple(example_inputs)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(side):
        for _ in range(3):
            model(*static)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        out = model(*static)

    def replay(*inputs):
        for s, x in zip(static, inputs):
            if s is not x:
                s.copy_(x)
        graph.replay()
        return out
    return replay
