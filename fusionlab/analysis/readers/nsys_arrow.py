"""Columnar reads of an nsys SQLite export: its kernel and launch-call tables as int64
numpy arrays, through ADBC's SQLite driver (adbc-driver-sqlite), which steps SQLite in C
and hands back Arrow record batches: no Python object per value.

Used by nsys_sqlite.Report where the driver is installed (FUSIONLAB_SQLITE_READER=sqlite3
forces the sqlite3 path): on a real 1M-kernel export (nsys 2025.3, 155 MB) the two passes
of the analysis read in about 0.8 s against 2.2 s through sqlite3.

- launch_calls(path, query): every launch call as one array (correlation id, start, end,
  tid), read once: the launch-call pass slices it and first_launches() makes the join table.
- first_launches(calls): the first launch call (in file order) of each correlation id,
  sorted by id: trace.join_launches' rule.
- joined_kernels(path, query, join, chunk): the kernels, which the query reads ordered by
  (start, end) with the correlation id third, joined to their first launch call by
  binary search (a kernel without one is dropped), as rows start, end, launch_start,
  launch_end, tid, then the query's other columns, ordered by (start, end,
  launch_start): within a batch by lexsort, the rows sharing the batch's last (start,
  end) carried into the next batch.
Memory: the launch calls (32 bytes each) and one batch of kernels.
"""
from __future__ import annotations

import os

import numpy as np

MISSING = -1   # the correlation id of a launch call or kernel without one (SQL coalesce)


def available() -> bool:
    """ADBC's SQLite driver is importable and not turned off (FUSIONLAB_SQLITE_READER)."""
    if os.environ.get("FUSIONLAB_SQLITE_READER", "").lower() == "sqlite3":
        return False
    try:
        import adbc_driver_sqlite.dbapi  # noqa: F401
    except ImportError:
        return False
    return True


def column_batches(path: str, query: str, chunk: int):
    """The query's result as lists of 1-D int64 arrays (one per column), one list per Arrow
    record batch of `chunk` rows."""
    import adbc_driver_sqlite.dbapi as adbc
    con = adbc.connect(f"file:{os.path.abspath(path)}?mode=ro")
    cur = con.cursor()
    try:
        cur.adbc_statement.set_options(**{"adbc.sqlite.query.batch_rows": str(chunk)})
        cur.execute(query)
        for b in cur.fetch_record_batch():
            if b.num_rows:
                yield [b.column(i).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
                       for i in range(b.num_columns)]
    finally:
        cur.close()
        con.close()


def _batches(path: str, query: str, chunk: int):
    """The query's result as 2-D int64 arrays, one per Arrow record batch of `chunk` rows."""
    for cols in column_batches(path, query, chunk):
        yield np.column_stack(cols)


def launch_calls(path: str, query: str, chunk: int) -> np.ndarray:
    """Every row of `query` (correlation id, start, end, tid) in one (n, 4) int64 array."""
    parts = list(_batches(path, query, chunk))
    return np.concatenate(parts) if parts else np.empty((0, 4), np.int64)


def first_launches(calls: np.ndarray) -> np.ndarray:
    """Rows of calls (first_launches' rule, module doc) sorted by correlation id."""
    c = calls[calls[:, 0] != MISSING]
    if len(c) > 1 and not (c[1:, 0] >= c[:-1, 0]).all():     # ids mostly come in order already
        c = c[np.argsort(c[:, 0], kind="stable")]
    first = np.ones(len(c), bool)
    first[1:] = c[1:, 0] != c[:-1, 0]
    return c[first]


def one_per_id(calls: np.ndarray) -> np.ndarray:
    """The calls (launch_calls' rows) with one per correlation id, the first in file order
    (calls without an id all kept); in file order."""
    has = calls[:, 0] != MISSING
    if not has.any():
        return calls
    ids = calls[has, 0]
    _, first = np.unique(ids, return_index=True)
    if len(first) == len(ids):
        return calls
    keep = ~has
    keep[np.flatnonzero(has)[first]] = True
    return calls[keep]


def _order(rows: np.ndarray) -> np.ndarray:
    return rows[np.lexsort((rows[:, 2], rows[:, 1], rows[:, 0]))]


def joined_kernels(path: str, query: str, join: np.ndarray, chunk: int):
    """The query's kernels (start, end, correlation id, extra columns...) joined to `join`
    (first_launches), as int64 arrays start, end, launch_start, launch_end, tid, extra
    columns...; in (start, end, launch_start) order (module doc)."""
    ids = join[:, 0]
    carry = None
    for b in _batches(path, query, chunk):
        if len(ids):
            i = np.minimum(np.searchsorted(ids, b[:, 2]), len(ids) - 1)
            hit = ids[i] == b[:, 2]
        else:
            i, hit = np.zeros(len(b), np.int64), np.zeros(len(b), bool)
        b, j = b[hit], i[hit]
        rows = np.column_stack([b[:, 0], b[:, 1], join[j, 1], join[j, 2], join[j, 3], b[:, 3:]])
        if carry is not None:
            rows = np.concatenate([carry, rows])
        if not len(rows):
            continue
        last = rows[-1, :2]
        tail = (rows[:, 0] == last[0]) & (rows[:, 1] == last[1])
        carry, rows = rows[tail], rows[~tail]
        if len(rows):
            yield _order(rows)
    if carry is not None and len(carry):
        yield _order(carry)
