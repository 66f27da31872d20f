"""What a model must compute and move per iteration, counted on the meta device (no
data, no GPU): FLOPs (torch.utils.flop_counter) and bytes.

- bytes_unfused: every aten operator reads its tensor inputs and writes its outputs
  from/to memory once (eager, one kernel per operator; seed 000's table 8.1 counts the
  same way). View and metadata ops move nothing.
- flops: matmul and convolution FLOPs (torch.utils.flop_counter, which counts only those).
- flops_pointwise: one FLOP per output element of every pointwise aten operator (those
  tagged torch.Tag.pointwise), so a model with no matmul still has an arithmetic
  intensity and a place on the roofline.
- bytes_fused: the ideal of full fusion: the model's inputs and parameters are read
  once and its outputs written once (train mode: plus the parameter gradients written).

    python -m fusionlab.experiments.cost --model mlp --batch 128 [--mode inference] [--dtype float32] [--size hidden256]
"""
from __future__ import annotations

import argparse
import json
import sys

from fusionlab.core import axes
from fusionlab.core.axes import DTYPES

# operators that alias or describe tensors without moving data
NO_TRAFFIC = {"view", "_unsafe_view", "reshape", "expand", "as_strided", "t", "transpose", "permute",
              "unsqueeze", "squeeze", "detach", "alias", "slice", "select", "_reshape_alias",
              "empty", "empty_like", "empty_strided", "lift_fresh", "resolve_conj", "resolve_neg"}


def _nbytes(x) -> int:
    import torch
    return x.numel() * x.element_size() if isinstance(x, torch.Tensor) else 0


def count(model_name: str, batch: int, mode: str = "inference", dtype: str = "float32",
          size: str = "default") -> dict:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten
    from torch.utils.flop_counter import FlopCounterMode

    from fusionlab.experiments.registry import MODELS

    class Traffic(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.bytes = 0
            self.pointwise = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func.__name__.split(".")[0] not in NO_TRAFFIC:
                ins, _ = tree_flatten((args, kwargs or {}))
                outs, _ = tree_flatten(out)
                self.bytes += sum(map(_nbytes, ins)) + sum(map(_nbytes, outs))
                if torch.Tag.pointwise in getattr(func, "tags", ()):
                    self.pointwise += sum(o.numel() for o in outs if isinstance(o, torch.Tensor))
            return out

    torch.manual_seed(0)
    spec = MODELS[model_name]
    model, inputs = spec.build(batch, getattr(torch, axes.weights_dtype(dtype)), "meta", **spec.resolve_sizes(size))
    model.train(mode == "train")
    params = list(model.parameters()) + list(model.buffers())
    traffic, flops = Traffic(), FlopCounterMode(display=False)
    with flops, traffic:
        if mode == "train":
            out = model(*inputs)
            out.float().mean().backward()
        else:
            with torch.no_grad():
                out = model(*inputs)
    outs, _ = tree_flatten(out)
    fused = sum(map(_nbytes, inputs)) + sum(map(_nbytes, params)) + sum(map(_nbytes, outs))
    if mode == "train":
        fused += sum(_nbytes(p) for p in model.parameters())
    return {"model": model_name, "batch": batch, "mode": mode, "dtype": dtype, "size": size,
            "flops": int(flops.get_total_flops()), "flops_pointwise": int(traffic.pointwise),
            "bytes_unfused": int(traffic.bytes),
            "bytes_fused": int(fused)}


def table(keys, imports: dict | None = None, recorded: list | None = None) -> "list[dict]":
    """count() for each (model, batch, mode, dtype[, size]); a model that cannot be counted
    on the meta device gets empty values and the reason. `imports`: the config's
    import_models, registered first (one that cannot be imported here gets the reason).
    `recorded`: rows of a costs table already written (regenerating a sweep elsewhere): a
    configuration that cannot be counted here keeps its recorded row."""
    from fusionlab.experiments.registry import ImportError_, import_model
    not_imported = {}
    for name, e in sorted((imports or {}).items()):
        try:
            import_model(name, e["factory"], default_batch=e.get("default_batch"), modes=e.get("modes"),
                         description=e.get("description"))
        except ImportError_ as err:   # its configurations fail below, with this reason
            not_imported[name] = str(err)
    kept = {(r["model"], int(r["batch"]), r["mode"], r["dtype"], r.get("size") or "default"): r
            for r in (recorded or []) if str(r.get("flops", "")) not in ("", "nan", "None")}
    rows = []
    for model, batch, mode, dtype, *size in keys:
        size = size[0] if size else "default"
        try:
            rows.append(count(model, int(batch), mode, dtype, size))
        except Exception as e:  # noqa: BLE001 - recorded, the other models go on
            if (model, int(batch), mode, dtype, size) in kept:
                rows.append(kept[(model, int(batch), mode, dtype, size)])
                continue
            rows.append({"model": model, "batch": batch, "mode": mode, "dtype": dtype, "size": size,
                         "cost_error": not_imported.get(model) or f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"})
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m fusionlab.experiments.cost", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--batch", required=True, type=int)
    p.add_argument("--mode", default="inference", choices=["inference", "train"])
    p.add_argument("--dtype", default="float32", choices=DTYPES)
    p.add_argument("--size", default="default", help="size label, e.g. dim1024-num_layers8")
    a = p.parse_args(argv)
    print(json.dumps(count(a.model, a.batch, a.mode, a.dtype, a.size), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
