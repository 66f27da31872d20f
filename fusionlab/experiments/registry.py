"""The one registry of models and variants.

Each built-in model lives in its own file under fusionlab/experiments/models/ and each
variant under fusionlab/experiments/variants/; a file registers itself with the decorators
below. A model outside the package joins by import path (`import_model`: a config's
`import_models` entry, the runner's --model-from). The runner and the tests read MODELS and
VARIANTS from here; the Snakefile reads their light metadata, experiments.catalog, which is
computed from this registry.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil
import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Optional

from fusionlab.core import sizes as size_labels

MODELS: dict[str, "ModelSpec"] = {}
VARIANTS: dict[str, "VariantSpec"] = {}


@dataclass(frozen=True)
class SizeAxis:
    """One build argument a sweep may vary (config key sizes): an integer in [min, max]."""
    name: str
    default: int
    min: int
    max: int
    description: str = ""


@dataclass(frozen=True)
class ModelSpec:
    name: str
    build: Callable  # build(batch, dtype, device, **sizes) -> (torch.nn.Module, tuple of inputs)
    description: str
    seed: str                     # where the definition comes from
    default_batch: int
    modes: tuple = ("inference", "train")
    # what rewrites can see in it: matmul_bias, add_relu, conv_bn, lstm, hand (has a
    # forward_hand(ops, *inputs) for the hand-written kernels), gelu_tanh, library_op
    tags: frozenset = frozenset()
    sizes: tuple = ()             # the SizeAxis of each sweepable build argument
    origin: str = ""              # the import path of a model from outside the package

    def size_defaults(self) -> dict:
        return {a.name: a.default for a in self.sizes}

    def resolve_sizes(self, label: str) -> dict:
        """Every size axis's value for a size label ("default", "dim1024-num_layers8").
        ValueError naming the axis and what is allowed."""
        values = self.size_defaults()
        axes = {a.name: a for a in self.sizes}
        for k, v in size_labels.parse(label).items():
            if k not in axes:
                raise ValueError(f"model {self.name} has no size axis {k!r}; its axes: "
                                 + (", ".join(axes) or "none (only batch)"))
            if not axes[k].min <= v <= axes[k].max:
                raise ValueError(f"model {self.name} size {k}={v} is outside {axes[k].min}..{axes[k].max}")
            values[k] = v
        return values


class Unsupported(Exception):
    """Raised by a variant's apply() when it finds, on the built model, that it cannot
    apply (a pattern it rewrites is absent, a dtype its kernel lacks). The runner records
    the run as `unsupported` with this message as the reason."""


@dataclass(frozen=True)
class VariantSpec:
    name: str
    apply: Callable  # apply(model, example_inputs, options) -> callable
    description: str
    # supports(model_name, device, mode) -> None if supported, else the reason it is not
    supports: Callable = field(default=lambda model, device, mode: None)
    # prepare(options) -> None: CPU-only work a run can do before it takes its GPU's lock
    # (imports, building a CUDA extension): never GPU work, which would disturb the run
    # measuring there
    prepare: Callable = field(default=lambda options: None)


def register_model(name: str, *, description: str, seed: str, default_batch: int,
                   modes=("inference", "train"), tags=(), sizes: dict | None = None):
    """`sizes`: axis name -> (min, max) or (min, max, description) for build arguments a
    sweep may vary; the default is the build function's own keyword default."""
    def deco(build):
        if name in MODELS:
            raise ValueError(f"model {name!r} registered twice")
        params = inspect.signature(build).parameters
        axes = []
        for axis, bounds in sorted((sizes or {}).items()):
            if not size_labels.NAME.match(axis) or axis in ("batch", "default"):
                raise ValueError(f"model {name}: size axis {axis!r} must be lowercase letters and _")
            if axis not in params or not isinstance(params[axis].default, int):
                raise ValueError(f"model {name}: size axis {axis!r} is not an integer keyword "
                                 "argument (with a default) of its build function")
            lo, hi, *doc = bounds
            axes.append(SizeAxis(axis, params[axis].default, lo, hi, doc[0] if doc else ""))
        MODELS[name] = ModelSpec(name, build, description, seed, default_batch, tuple(modes),
                                 frozenset(tags), tuple(axes))
        return build
    return deco


def requires(*, tag: str | None = None, devices=None, modes=None, why: str = "") -> Callable:
    """A supports() from declared needs: a model tag, devices, modes. The reason names
    what is missing and, with `why`, the cause."""
    def supports(model: str, device: str, mode: str):
        spec = MODELS.get(model)
        if tag and (spec is None or tag not in spec.tags):
            return f"applies only to models tagged {tag!r} ({', '.join(tagged(tag)) or 'none'})"
        if devices and device not in devices:
            return f"needs device {'/'.join(devices)}, this run is on {device}{why}"
        if modes and mode not in modes:
            return f"{'/'.join(modes)} mode only{why}"
        return None
    return supports


def tagged(tag: str) -> list[str]:
    return sorted(n for n, m in MODELS.items() if tag in m.tags)


def register_variant(name: str, *, description: str,
                     supports: Optional[Callable] = None, prepare: Optional[Callable] = None):
    def deco(apply):
        if name in VARIANTS:
            raise ValueError(f"variant {name!r} registered twice")
        VARIANTS[name] = VariantSpec(name, apply, description,
                                     supports or (lambda model, device, mode: None),
                                     prepare or (lambda options: None))
        return apply
    return deco


NAME_PATTERN = r"^[a-z][a-z0-9_]*$"


class ImportError_(ValueError):
    """A model named by import path that cannot join the registry; the message is one line."""


def _factory(target: str) -> tuple[Callable, str]:
    """The callable an import path names, and its module's file: `package.module:name`
    or `path/to/file.py:name`."""
    import importlib.util
    import os
    import sys
    where, sep, attr = target.rpartition(":")
    if not sep or not where or not attr.isidentifier():
        raise ImportError_(f"{target!r} is not an import path; give package.module:factory "
                           "or path/to/file.py:factory")
    try:
        if where.endswith(".py"):
            path = os.path.abspath(where)
            if not os.path.isfile(path):
                raise ImportError_(f"{where}: no such file")
            mod_name = "fusionlab_user_" + os.path.splitext(os.path.basename(path))[0]
            module = sys.modules.get(mod_name)
            if module is None or getattr(module, "__file__", None) != path:
                spec = importlib.util.spec_from_file_location(mod_name, path)
                module = importlib.util.module_from_spec(spec)
                sys.modules[mod_name] = module
                spec.loader.exec_module(module)
        else:
            module = importlib.import_module(where)
    except ImportError_:
        raise
    except Exception as e:  # the user's module: any error in its import is the answer
        raise ImportError_(f"importing {where} failed: {type(e).__name__}: "
                           f"{' '.join(str(e).split())[:300]}") from None
    factory = getattr(module, attr, None)
    if factory is None:
        raise ImportError_(f"{where} has no {attr!r}")
    if not callable(factory):
        raise ImportError_(f"{target}: {type(factory).__name__} is not callable; give a factory "
                           "build(batch, dtype, device, **sizes) -> (module, inputs)")
    return factory, getattr(module, "__file__", "") or ""


def import_model(name: str, target: str, *, default_batch: int | None = None, modes=None,
                 description: str | None = None) -> "ModelSpec":
    """Register the factory `target` (an import path) as model `name`, as register_model
    would: build(batch, dtype, device, **sizes) -> (nn.Module, tuple of inputs). Its integer
    keyword arguments with defaults are its size axes (1..2**31-1). A factory already
    registered by its module's own @register_model keeps that metadata under `name`.
    ImportError_ (one line) where it cannot."""
    import re as _re
    if not _re.match(NAME_PATTERN, name):
        raise ImportError_(f"model name {name!r}: lowercase letters, digits and _, starting with a letter")
    if name in MODELS:
        if MODELS[name].origin == target:
            return MODELS[name]
        raise ImportError_(f"model name {name!r} is taken by {MODELS[name].origin or 'a built-in model'}")
    factory, _ = _factory(target)
    known = next((m for m in MODELS.values() if m.build is factory), None)
    if known is not None:
        spec = dataclasses.replace(known, name=name, origin=target)
    else:
        try:
            params = inspect.signature(factory).parameters
        except (TypeError, ValueError):
            raise ImportError_(f"{target}: its signature cannot be read") from None
        positional = [p for p in params.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
        if len(positional) != 3 and not any(p.kind == p.VAR_POSITIONAL for p in params.values()):
            raise ImportError_(f"{target}: a factory takes (batch, dtype, device, **sizes); "
                               f"it takes ({', '.join(params)})")
        axes = tuple(SizeAxis(p.name, p.default, 1, 2**31 - 1)
                     for p in params.values()
                     if p.default is not p.empty and type(p.default) is int and size_labels.NAME.match(p.name)
                     and p.name not in ("batch", "default"))
        doc = (inspect.getdoc(factory) or "").strip().splitlines()
        spec = ModelSpec(name, factory, description or (doc[0] if doc else target), seed=target,
                         default_batch=int(default_batch or 1), modes=tuple(modes or ("inference", "train")),
                         sizes=axes, origin=target)
    if default_batch is not None or modes is not None or description is not None:
        spec = dataclasses.replace(spec, default_batch=int(default_batch or spec.default_batch),
                                   modes=tuple(modes or spec.modes), description=description or spec.description)
    MODELS[name] = spec
    return spec


def _load(package: str) -> None:
    pkg = importlib.import_module(package)
    for mod in pkgutil.iter_modules(pkg.__path__):
        if not mod.name.startswith("_"):
            importlib.import_module(f"{package}.{mod.name}")


_load("fusionlab.experiments.models")
_load("fusionlab.experiments.variants")

MODEL_NAMES = tuple(sorted(MODELS))
VARIANT_NAMES = tuple(sorted(VARIANTS))


def import_models(entries: dict) -> None:
    """import_model for each entry of a config's import_models (name -> {factory, ...})."""
    for name, e in sorted((entries or {}).items()):
        import_model(name, e["factory"], default_batch=e.get("default_batch"), modes=e.get("modes"),
                     description=e.get("description"))


def check_model(spec: "ModelSpec", batch: int = 2) -> None:
    """Build the model on the CPU in float32 at `batch` and run its inputs through it once:
    ImportError_ (one line) naming what is wrong (the return type, an input that does not
    run, an output that is not tensors)."""
    import torch
    try:
        built = spec.build(batch, torch.float32, "cpu", **spec.size_defaults())
    except Exception as e:
        raise ImportError_(f"{spec.origin or spec.name}: building it (batch {batch}, float32, cpu) raised "
                           f"{type(e).__name__}: {' '.join(str(e).split())[:300]}") from None
    if not (isinstance(built, tuple) and len(built) == 2 and isinstance(built[0], torch.nn.Module)
            and isinstance(built[1], tuple) and all(isinstance(x, torch.Tensor) for x in built[1])):
        raise ImportError_(f"{spec.origin or spec.name}: returned {_shape_of(built)}; a factory returns "
                           "(torch.nn.Module, tuple of input tensors)")
    model, inputs = built
    try:
        with torch.no_grad():
            out = model(*inputs)
    except Exception as e:
        raise ImportError_(f"{spec.origin or spec.name}: its inputs do not run through it: "
                           f"{type(e).__name__}: {' '.join(str(e).split())[:300]}") from None
    outs = out if isinstance(out, (tuple, list)) else (out,)
    if not outs or not all(isinstance(o, torch.Tensor) for o in outs):
        raise ImportError_(f"{spec.origin or spec.name}: its output is {_shape_of(out)}; a model returns "
                           "a tensor or a tuple of tensors (the train mode's loss is their mean)")


def _shape_of(value) -> str:
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of ({', '.join(type(v).__name__ for v in value)})"
    return f"a {type(value).__name__}"
