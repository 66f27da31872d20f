"""What a model must compute and move per iteration, counted without data or a GPU:
FLOPs (torch.utils.flop_counter) and bytes.

- bytes_unfused: every aten operator reads its tensor inputs and writes its outputs
  from/to memory once (eager, one kernel per operator; seed 000's table 8.1 counts the
  same way). View and metadata ops move nothing.
- flops: matmul, convolution and attention FLOPs (torch.utils.flop_counter, which counts
  only those).
- flops_pointwise: one FLOP per output element of every pointwise aten operator (those
  tagged torch.Tag.pointwise), so a model with no matmul still has an arithmetic
  intensity and a place on the roofline.
- bytes_fused: the ideal of full fusion: the model's inputs and parameters are read
  once and its outputs written once (train mode: plus the parameter gradients written).
- cost_method: how the model ran while counted.
  `meta`: built and run on the meta device (shapes only).
  `fake_tensor`: built on the meta device, run on FakeTensors of its parameters, buffers
  and inputs (torch's FakeTensorMode, shapes only), for a model whose meta run reads a
  tensor's value (`Tensor.item()`: transformers' mask code asks whether position ids are
  packed). transformers sees FakeTensors as tracing and takes the path torch.compile
  traces: the causal mask is built as a tensor, whose operators' bytes are counted
  (eager on a GPU passes is_causal instead). FLOPs are the same on both paths.
  A model neither method can run gets `cost_error` (the exception's first line).

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


def _traffic_mode():
    """A dispatch mode that adds up the bytes every aten operator reads and writes
    (`.bytes`) and the output elements of the pointwise ones (`.pointwise`)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class Traffic(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.bytes = 0
            self.pointwise = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func.namespace == "aten" and func.__name__.split(".")[0] not in NO_TRAFFIC:
                ins, _ = tree_flatten((args, kwargs or {}))
                outs, _ = tree_flatten(out)
                self.bytes += sum(map(_nbytes, ins)) + sum(map(_nbytes, outs))
                if torch.Tag.pointwise in getattr(func, "tags", ()):
                    self.pointwise += sum(o.numel() for o in outs if isinstance(o, torch.Tensor))
            return out

    return Traffic()


def measure(model, inputs, mode: str, call=None) -> dict:
    """flops, flops_pointwise, bytes_unfused and bytes_fused of one iteration of `model`
    on `inputs` (train mode: forward, the output's mean, backward), on whatever tensors
    they hold (meta, fake or real). `call(inputs)`: how to run the model (default model(*inputs))."""
    import torch
    from torch.utils._pytree import tree_flatten
    from torch.utils.flop_counter import FlopCounterMode

    call = call or (lambda xs: model(*xs))
    model.train(mode == "train")
    params = list(model.parameters()) + list(model.buffers())
    traffic, flops = _traffic_mode(), FlopCounterMode(display=False)
    with flops, traffic:
        if mode == "train":
            out = call(inputs)
            out.float().mean().backward()
        else:
            with torch.no_grad():
                out = call(inputs)
    outs, _ = tree_flatten(out)
    fused = sum(map(_nbytes, inputs)) + sum(map(_nbytes, params)) + sum(map(_nbytes, outs))
    if mode == "train":
        fused += sum(_nbytes(p) for p in model.parameters())
    return {"flops": int(flops.get_total_flops()), "flops_pointwise": int(traffic.pointwise),
            "bytes_unfused": int(traffic.bytes), "bytes_fused": int(fused)}


def _on_fake_tensors(model, inputs, mode: str) -> dict:
    """measure() with the meta-built model's parameters, buffers and inputs as FakeTensors
    (torch.func.functional_call; tied parameters stay tied)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.func import functional_call

    fake = FakeTensorMode()
    state = {k: fake.from_tensor(v) for k, v in (*model.named_parameters(), *model.named_buffers())}
    fake_inputs = tuple(fake.from_tensor(x) for x in inputs)
    with fake:
        return measure(model, fake_inputs, mode, call=lambda xs: functional_call(model, state, xs))


def count(model_name: str, batch: int, mode: str = "inference", dtype: str = "float32",
          size: str = "default") -> dict:
    """The cost row of one configuration: measure() on the meta device, else on FakeTensors
    (cost_method says which); the exception of the last method if neither runs."""
    import torch

    from fusionlab.experiments.registry import MODELS

    spec = MODELS[model_name]

    def built():
        # meta as the default device too: a factory that builds its layers on the CPU and
        # moves them (.to) would untie its tied parameters (GPT-2's embedding and LM head)
        torch.manual_seed(0)
        with torch.device("meta"):
            return spec.build(batch, getattr(torch, axes.weights_dtype(dtype)), "meta", **spec.resolve_sizes(size))

    row = {"model": model_name, "batch": batch, "mode": mode, "dtype": dtype, "size": size}
    try:
        return {**row, **measure(*built(), mode), "cost_method": "meta"}
    except (RuntimeError, NotImplementedError) as e:   # a meta kernel that reads data
        if not _reads_data(e):
            raise
    return {**row, **_on_fake_tensors(*built(), mode), "cost_method": "fake_tensor"}


def _reads_data(e: BaseException) -> bool:
    """Whether a meta run failed because an operator needs a tensor's values."""
    text = str(e)
    return any(s in text for s in ("cannot be called on meta tensors", "data-dependent",
                                   "Cannot copy out of meta tensor", "_local_scalar_dense"))


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
                         "cost_method": "none", "cost_error": not_imported.get(model) or f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"})
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
