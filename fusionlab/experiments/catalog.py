"""The light metadata of the registry: model and variant names, each model's default batch,
size axes, modes and description, and every variant's support on every (model, device, mode), read
from catalog.json without importing torch or any model code (as TorchBench reads a model's
metadata before it loads the model). The Snakefile builds its DAG from it; the runner
loads the model code when a job runs it.

catalog.json is generated from the registry and kept in git; a test fails when the two
differ. After adding or changing a model or a variant:

    python -m fusionlab.experiments.catalog --write
"""
from __future__ import annotations

import functools
import json
import os
import sys

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "catalog.json")
DEVICES = ("cuda", "cpu")
MODES = ("inference", "train")


def from_registry() -> dict:
    """The catalog as the registry defines it (imports every model and variant, so torch)."""
    from fusionlab.experiments.registry import MODELS, VARIANTS
    models = {m.name: {"default_batch": m.default_batch, "modes": list(m.modes), "seed": m.seed,
                       "description": m.description,
                       "sizes": {a.name: {"type": "int", "default": a.default, "min": a.min, "max": a.max,
                                          "description": a.description} for a in m.sizes}}
              for m in sorted(MODELS.values(), key=lambda m: m.name)}
    variants = {}
    for v in sorted(VARIANTS.values(), key=lambda v: v.name):
        unsupported = {f"{model}/{device}/{mode}": why for model in models for device in DEVICES
                       for mode in MODES if (why := v.supports(model, device, mode))}
        variants[v.name] = {"description": v.description, "unsupported": unsupported}
    return {"models": models, "variants": variants}


@functools.lru_cache(maxsize=1)
def load() -> dict:
    """catalog.json (no torch)."""
    with open(PATH) as f:
        return json.load(f)


def model_names() -> tuple:
    return tuple(sorted(load()["models"]))


def variant_names() -> tuple:
    return tuple(sorted(load()["variants"]))


def default_batch(model: str) -> int:
    return load()["models"][model]["default_batch"]


def sizes(model: str) -> dict:
    """The model's size axes: name -> {type, default, min, max, description}."""
    return load()["models"][model].get("sizes", {})


def size_axes() -> tuple:
    """Every size axis name any model declares."""
    return tuple(sorted({a for m in load()["models"].values() for a in m.get("sizes", {})}))


def modes(model: str) -> list:
    return load()["models"][model]["modes"]


def unsupported_reason(model: str, variant: str, device: str, mode: str) -> str | None:
    """Why the variant cannot run this model there (the variant's supports()), or None."""
    return load()["variants"][variant]["unsupported"].get(f"{model}/{device}/{mode}")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    text = json.dumps(from_registry(), indent=1, sort_keys=True) + "\n"
    if argv == ["--write"]:
        with open(PATH, "w") as f:
            f.write(text)
        print(f"wrote {PATH}")
        return 0
    with open(PATH) as f:
        same = f.read() == text
    print("catalog.json matches the registry" if same else
          "catalog.json differs from the registry: run python -m fusionlab.experiments.catalog --write")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
