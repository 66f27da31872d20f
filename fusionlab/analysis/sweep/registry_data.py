"""The registry's light metadata, read as data: fusionlab/experiments/catalog.json, the
file experiments.catalog writes (analysis never imports experiments). Missing or
unreadable, it reads as empty: tables and figures still build, with no size axes and
hashed colours."""
from __future__ import annotations

import functools
import json
import os

PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "experiments", "catalog.json")


@functools.lru_cache(maxsize=1)
def catalog() -> dict:
    try:
        with open(PATH) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def variant_names() -> tuple:
    return tuple(sorted(catalog().get("variants", {})))


def size_axes() -> tuple:
    """Every size axis any model declares (dim, num_layers, hidden, ...)."""
    return tuple(sorted({a for m in catalog().get("models", {}).values() for a in m.get("sizes", {})}))
