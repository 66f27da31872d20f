"""Checks of a run's JSON records where they are read (run.json, timing.json, metrics.json):
a record that parses but holds what no run writes is refused with one line naming the file
and the field, so that it becomes the run's error row and never stops a table.

check(record, path) raises ReportError where:
- it nests deeper than DEPTH;
- an integer lies outside int64 (a table's column could not hold it);
- a key of the run (KEY_TYPES) or one of its parts (PART_TYPES: timing, sizes, ...) has
  another type, or batch / repeat lies outside its range;
- a time (a field under `timing`, or one ending in _ms, _us or _s) is a number that is not
  finite (a difference of times may be negative); a field ending in _ms, _us or _s holds
  text or true/false, alone or in its list, or a number past MAX_TIME (in its unit: a
  time no run takes, whose ratios and sums overflow);
- a speedup (a field whose name holds `speedup`, not its _ci) is a number outside SPEEDUPS.
"""
from __future__ import annotations

import math

from fusionlab.analysis.readers.trace import ReportError

DEPTH = 32
KEY_TYPES = {"model": str, "variant": str, "mode": str, "dtype": str, "size": str, "backend": str, "status": str}
RANGES = {"batch": (1, 1 << 31), "repeat": (0, 1 << 20)}
PART_TYPES = {"timing": dict, "sizes": dict, "versions": dict, "correctness": dict, "compile": dict,
              "host_check": dict, "compile_debug": dict, "dynamo": dict}
INT64 = (-(1 << 63), 1 << 63)
MAX_TIME = 1e12                  # a time's magnitude, at most, in its own unit (ms: 31 years)
SPEEDUPS = (1e-6, 1e6)           # a speedup, at least and at most


def _is_time(key: str) -> bool:
    return key.endswith(("_ms", "_s", "_us"))


def _is_speedup(where: str) -> bool:
    """A field named as a speedup (the last name of where, not an item of a list)."""
    last = where.rsplit(".", 1)[-1]
    return "speedup" in last and "[" not in last and not last.endswith("_ci")


def _walk(x, where: str, depth: int, timed: bool, path: str, a_time: bool = False) -> None:
    """a_time: x is the value of a field named as a time (_ms, _us, _s), or an item of one."""
    if depth > DEPTH:
        raise ReportError(f"{path}: nested deeper than {DEPTH} levels at {where or 'the top'}")
    if a_time and (isinstance(x, (bool, str))):
        raise ReportError(f"{path}: {where} holds {repr(x)[:40]}, not a time")
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return
    if isinstance(x, int) and not INT64[0] <= x < INT64[1]:
        raise ReportError(f"{path}: {where} holds an integer of {len(str(abs(x)))} digits, outside int64")
    if isinstance(x, (int, float)):
        if timed and not math.isfinite(x):
            raise ReportError(f"{path}: {where} holds {x}, not a finite time")
        if a_time and abs(x) > MAX_TIME:
            raise ReportError(f"{path}: {where} holds {x:g}, past {MAX_TIME:g} (a time no run takes)")
        if _is_speedup(where) and math.isfinite(x) and not SPEEDUPS[0] <= x <= SPEEDUPS[1]:
            raise ReportError(f"{path}: {where} holds {x:g}, not a speedup in {SPEEDUPS[0]:g}..{SPEEDUPS[1]:g}")
        return
    if isinstance(x, dict):
        for k, v in x.items():
            _walk(v, f"{where}.{k}" if where else str(k), depth + 1, timed or k == "timing" or _is_time(str(k)), path,
                  _is_time(str(k)))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            _walk(v, f"{where}[{i}]", depth + 1, timed, path, a_time)


def check(record: dict, path: str) -> dict:
    """The record, or ReportError naming the file and the field (module doc)."""
    _walk(record, "", 0, False, path)
    for k, t in KEY_TYPES.items():
        if record.get(k) is not None and not isinstance(record[k], t):
            raise ReportError(f"{path}: {k} is {type(record[k]).__name__}, not {t.__name__}")
    for k, t in PART_TYPES.items():
        if record.get(k) is not None and not isinstance(record[k], t):
            raise ReportError(f"{path}: {k} is {type(record[k]).__name__}, not an object")
    for k, (lo, hi) in RANGES.items():
        v = record.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not lo <= v < hi):
            shown = v if not isinstance(v, int) or abs(v) < 1 << 63 else f"an integer of {len(str(abs(v)))} digits"
            raise ReportError(f"{path}: {k} is {shown}, not a whole number in {lo}..{hi - 1}")
    return record
