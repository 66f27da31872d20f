"""What each table was made from: RESULTS/tables/made_from.json maps a table (its path
relative to the results folder) to the files it was read from, each with the SHA-256 of its
bytes when it was read. The audit (report.audit_inputs) judges a table stale by these where
they are recorded, not by file times, which a copy does not keep (cp -r, scp, a git
checkout give the files the times they were copied at, in any order).

Each job that writes a table the audit reads records it after writing it (the tables job,
the headline and the suite); the jobs run one after another in the workflow, each replacing
its own entries only, atomically. A record is data: an entry naming a path outside the
results folder is dropped, and only regular files are read (never through a link).
"""
from __future__ import annotations

import hashlib
import os
import stat

from fusionlab.core.io import load_json, write_json_atomic

RECORD = "made_from.json"   # in the tables' folder


def digest(path: str) -> str | None:
    """The SHA-256 of the file's bytes (hex), None where it is not a regular file (a link,
    a pipe or a device is never read)."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
    except OSError:
        return None
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def record(tables: list[str], inputs: list[str]) -> str:
    """Record that each of tables (written now, in one folder RESULTS/tables) was made from
    inputs (paths under RESULTS); returns the record's path."""
    folder = os.path.dirname(os.path.abspath(tables[0]))
    root = os.path.dirname(folder)
    path = os.path.join(folder, RECORD)
    made = read_record(path)
    sources = {os.path.relpath(os.path.abspath(p), root): digest(p) for p in inputs}
    for t in tables:
        made[os.path.relpath(os.path.abspath(t), root)] = sources
    write_json_atomic(path, made)
    return path


def read_record(path: str) -> dict:
    """The record at path: table -> {input: digest}; {} where it is missing or not one."""
    try:
        made = load_json(path)
    except (OSError, ValueError):
        return {}
    if not isinstance(made, dict):
        return {}
    return {t: src for t, src in made.items() if inside(t) and isinstance(src, dict)
            and all(inside(k) and isinstance(v, (str, type(None))) for k, v in src.items())}


def inside(rel) -> bool:
    """rel is a path inside the results folder: relative, without `..` (an entry of a
    record from someone else's folder never names a file outside it)."""
    return isinstance(rel, str) and bool(rel) and not os.path.isabs(rel) and ".." not in rel.split(os.sep)


def read(results: str) -> dict:
    """RESULTS/tables/made_from.json (read_record)."""
    return read_record(os.path.join(results, "tables", RECORD))
