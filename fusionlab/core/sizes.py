"""A run's sizes besides batch: the model's own build arguments (dim, num_layers, hidden,
...) that a sweep may vary, and their two spellings.

- label:  "default" (every size at the model's default) or the sizes that differ from the
          defaults, sorted by name, as name+value joined by '-': "dim1024-num_layers8".
          It is the `size` column of the tables and run.json, and the runner's --size.
- suffix: the label as the run folder carries it after the batch: "" for the defaults,
          else "-" + label ("bs256-dim1024-num_layers8"). One experiment has one folder,
          whichever sweep asked for it.

Axis names are lowercase letters and underscores (no digits), values positive integers,
so both spellings are shell-safe and parse back unambiguously.
"""
from __future__ import annotations

import re

DEFAULT = "default"
NAME = re.compile(r"^[a-z][a-z_]*$")
_PART = re.compile(r"([a-z][a-z_]*?)([0-9]+)")
SUFFIX_PATTERN = r"(-[a-z][a-z_]*[0-9]+)*"   # the Snakemake wildcard constraint


def label(values: dict, defaults: dict) -> str:
    """The label of `values` (axis -> int) for a model whose defaults are `defaults` (a
    default of None, not known, is no value's: the label names the axis)."""
    diff = {k: int(v) for k, v in values.items() if defaults[k] is None or int(v) != int(defaults[k])}
    return "-".join(f"{k}{v}" for k, v in sorted(diff.items())) or DEFAULT


def parse(text: str) -> dict:
    """axis -> value from a label or a suffix ("default" and "" give {}). ValueError if
    it is neither."""
    text = text.lstrip("-")
    if text in ("", DEFAULT):
        return {}
    out = {}
    for part in text.split("-"):
        m = _PART.fullmatch(part)
        if not m:
            raise ValueError(f"size {text!r}: {part!r} is not a name followed by an integer "
                             "(e.g. dim1024-num_layers8, or default)")
        out[m.group(1)] = int(m.group(2))
    return out


def suffix(lbl: str) -> str:
    return "" if lbl in ("", DEFAULT) else "-" + lbl


def from_suffix(sfx: str) -> str:
    return sfx.lstrip("-") or DEFAULT
