"""torch.profiler trace of a few training steps of a small convolutional net, as a real
job records one: schedule(wait=1, warmup=1, active=3), record_function annotations,
an input copy on a side stream (CUDA), gzipped by tensorboard_trace_handler.
    python torch_steps.py OUTDIR cuda|cpu"""
import sys

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule, tensorboard_trace_handler

out, dev = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
                      nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(256, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
batches = [(torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,))) for _ in range(6)]
if dev == "cuda":
    batches = [(x.pin_memory(), y.pin_memory()) for x, y in batches]
copy = torch.cuda.Stream() if dev == "cuda" else None
acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev == "cuda" else [])
with profile(activities=acts, schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
             on_trace_ready=tensorboard_trace_handler(out, worker_name="worker0", use_gzip=True)) as prof:
    for step, (x, y) in enumerate(batches[:5]):
        with record_function("## data_copy ##"):
            if copy is not None:
                with torch.cuda.stream(copy):
                    x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
                torch.cuda.current_stream().wait_stream(copy)
        with record_function("## zero_grad ##"):
            opt.zero_grad(set_to_none=True)
        with record_function("## forward ##"):
            loss = nn.functional.cross_entropy(model(x), y)
        with record_function("## backward ##"):
            loss.backward()
        with record_function("## optimizer ##"):
            opt.step()
        prof.step()
print("done", float(loss))
