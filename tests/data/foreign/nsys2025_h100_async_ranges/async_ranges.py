"""NVTX ranges around launches with no synchronize (their GPU work runs after the range
closes), and one synchronized range, 5 iterations (torch.cuda.nvtx, the default domain)."""
import torch
import torch.cuda.nvtx as nvtx

torch.backends.cuda.matmul.allow_tf32 = False
torch.manual_seed(0)
dev = "cuda"
a = torch.randn(8192, 8192, device=dev)
b = torch.randn(8192, 8192, device=dev)
x = torch.randn(1 << 22, device=dev)
c = a @ b
torch.cuda.synchronize()
for i in range(5):
    nvtx.range_push("step")
    nvtx.range_push("launch_matmul")
    c = a @ b
    nvtx.range_pop()
    nvtx.range_push("launch_small")
    for _ in range(40):
        x = x * 1.0001 + 1.0
    nvtx.range_pop()
    nvtx.range_push("sync")
    torch.cuda.synchronize()
    nvtx.range_pop()
    nvtx.range_pop()
print("done", float(c[0, 0]), float(x[0]))
