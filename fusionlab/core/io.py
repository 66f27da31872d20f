"""Atomic file writes: a killed or failing writer never leaves half a file under the real name."""
from __future__ import annotations

import contextlib
import json
import os


@contextlib.contextmanager
def atomic_path(path: str):
    """Yield a temporary name next to path (same extension, so writers that pick the
    format by it still work); rename it to path when the block ends."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    root, ext = os.path.splitext(path)
    tmp = f"{root}.tmp{os.getpid()}{ext}"
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def read_json(path: str) -> dict | None:
    """The JSON object at path, or None when it is missing, unreadable, half written or
    not an object."""
    try:
        with open(path) as f:
            obj = json.load(f)
    except (OSError, ValueError):
        return None
    return obj if isinstance(obj, dict) else None


def write_json_atomic(path: str, obj: dict) -> None:
    """obj as indented JSON at path, written atomically."""
    with atomic_path(path) as tmp, open(tmp, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True, default=str)
        f.write("\n")
