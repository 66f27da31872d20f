"""The one registry of models and variants.

Each model lives in its own file under fusionlab/experiments/models/ and each variant under
fusionlab/experiments/variants/; a file registers itself with the decorators below. The
Snakefile, the runner and the tests all read MODELS and VARIANTS from here, so adding
a model or a variant is a one-file change.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil
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


def _load(package: str) -> None:
    pkg = importlib.import_module(package)
    for mod in pkgutil.iter_modules(pkg.__path__):
        if not mod.name.startswith("_"):
            importlib.import_module(f"{package}.{mod.name}")


_load("fusionlab.experiments.models")
_load("fusionlab.experiments.variants")

MODEL_NAMES = tuple(sorted(MODELS))
VARIANT_NAMES = tuple(sorted(VARIANTS))
