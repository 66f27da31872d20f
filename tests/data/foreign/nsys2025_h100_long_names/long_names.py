"""Ranges with long names, two of them alike in their first 62 characters, around a few
small GPU (or CPU) operations, 3 iterations:
    python long_names.py nvtx              # NVTX ranges (torch.cuda.nvtx), under nsys profile
    python long_names.py OUTDIR cpu        # record_function annotations, a torch.profiler trace
"""
import sys

import torch

PREFIX = "DistributedDataParallel.forward/model.transformer.layers.11.self_attention"
NAMES = [PREFIX + ".query_key_value", PREFIX + ".dense",
         "optimizer.step/" + "/".join(f"param_group_{i}.fused_adamw_multi_tensor_apply" for i in range(4))]


def work(x: torch.Tensor, ranges) -> torch.Tensor:
    for _ in range(3):
        for name in NAMES:
            with ranges(name):
                x = torch.tanh(x @ x.T / x.shape[0])
    return x


if __name__ == "__main__":
    torch.manual_seed(0)
    if sys.argv[1] == "nvtx":
        import torch.cuda.nvtx as nvtx
        x = work(torch.randn(256, 256, device="cuda"), nvtx.range)
        torch.cuda.synchronize()
    else:
        from torch.profiler import ProfilerActivity, profile, record_function, tensorboard_trace_handler
        with profile(activities=[ProfilerActivity.CPU],
                     on_trace_ready=tensorboard_trace_handler(sys.argv[1], worker_name="worker0", use_gzip=True)):
            x = work(torch.randn(64, 64), record_function)
    print("done", float(x.sum()))
