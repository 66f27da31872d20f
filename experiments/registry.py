"""The one registry of models and variants.

Each model lives in its own file under experiments/models/ and each variant under
experiments/variants/; a file registers itself with the decorators below. The
Snakefile, the runner and the tests all read MODELS and VARIANTS from here, so adding
a model or a variant is a one-file change.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Callable, Optional

MODELS: dict[str, "ModelSpec"] = {}
VARIANTS: dict[str, "VariantSpec"] = {}


@dataclass(frozen=True)
class ModelSpec:
    name: str
    build: Callable  # build(batch, dtype, device) -> (torch.nn.Module, tuple of inputs)
    description: str
    seed: str                     # where the definition comes from
    default_batch: int
    modes: tuple = ("inference", "train")


@dataclass(frozen=True)
class VariantSpec:
    name: str
    apply: Callable  # apply(model, example_inputs, options) -> callable
    description: str
    # supports(model_name, device, mode) -> None if supported, else the reason it is not
    supports: Callable = field(default=lambda model, device, mode: None)


def register_model(name: str, *, description: str, seed: str, default_batch: int,
                   modes=("inference", "train")):
    def deco(build):
        if name in MODELS:
            raise ValueError(f"model {name!r} registered twice")
        MODELS[name] = ModelSpec(name, build, description, seed, default_batch, tuple(modes))
        return build
    return deco


def register_variant(name: str, *, description: str,
                     supports: Optional[Callable] = None):
    def deco(apply):
        if name in VARIANTS:
            raise ValueError(f"variant {name!r} registered twice")
        VARIANTS[name] = VariantSpec(name, apply, description,
                                     supports or (lambda model, device, mode: None))
        return apply
    return deco


def _load(package: str) -> None:
    pkg = importlib.import_module(package)
    for mod in pkgutil.iter_modules(pkg.__path__):
        if not mod.name.startswith("_"):
            importlib.import_module(f"{package}.{mod.name}")


_load("experiments.models")
_load("experiments.variants")

MODEL_NAMES = tuple(sorted(MODELS))
VARIANT_NAMES = tuple(sorted(VARIANTS))
