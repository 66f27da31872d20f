"""A CUDA program without NVTX: an MLP forward and a reduction, 150 iterations."""
import torch

torch.manual_seed(0)
dev = "cuda"
w1 = torch.randn(2048, 2048, device=dev)
w2 = torch.randn(2048, 2048, device=dev)
x = torch.randn(512, 2048, device=dev)
side = torch.cuda.Stream()
for i in range(150):
    h = torch.relu(x @ w1)
    y = h @ w2
    s = y.sum()
    if i % 10 == 0:
        with torch.cuda.stream(side):
            z = torch.randn(1 << 20, device=dev).cumsum(0)
    if i % 25 == 0:
        s.item()
torch.cuda.synchronize()
print("done", float(s))
