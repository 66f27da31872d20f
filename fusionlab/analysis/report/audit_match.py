"""How the audits (audit, audit_figures, audit_gap) match a number to its record: close()
within a relative tolerance, and record_key(), a record's identity as text."""
from __future__ import annotations

import math

REL = 1e-6   # records and figure data: the same float, written and read back


def close(a, b, rel=REL, abs_=1e-9) -> bool:
    """Whether a and b agree within rel of the larger (and abs_); NaN or None agrees only
    with another."""
    if a is None or b is None:
        return a is b
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= abs_ + rel * max(abs(a), abs(b))


def record_key(r, keys) -> tuple:
    """r's values at keys as text: batch as an integer, an empty size as 'default'."""
    out = []
    for k in keys:
        v = r.get(k)
        if k == "batch" and v == v and v is not None:
            v = int(float(v))
        out.append("default" if k == "size" and (v is None or v != v) else str(v))
    return tuple(out)
