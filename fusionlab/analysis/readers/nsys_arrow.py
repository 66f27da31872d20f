"""Columnar reads of an nsys SQLite export: its kernel and launch-call tables as int64
numpy arrays, through ADBC's SQLite driver (adbc-driver-sqlite), which steps SQLite in C
and hands back Arrow record batches: no Python object per value. The batches are taken
from the driver's Arrow C stream directly (ArrowArrayStream, the Arrow C data interface,
read with ctypes), so neither pyarrow nor pandas is imported.

Used by nsys_sqlite.Report where the driver is installed (FUSIONLAB_SQLITE_READER=sqlite3
forces the sqlite3 path): on the synthetic 1M-kernel export the runtime and kernel tables
read in under half the CPU time sqlite3's fetchmany takes.

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

import ctypes
import os

import numpy as np

MISSING = -1   # the correlation id of a launch call or kernel without one (SQL coalesce)
BAD_ID = -(1 << 40)   # id_sql's value for an id outside CUPTI's unsigned 32-bit range


def id_sql(column: str) -> str:
    """SQL of a correlation id column as the readers take it: MISSING where NULL, BAD_ID
    where outside 0..2**32-1 (negative ids would collide with MISSING and nsys_pass.OTHER)."""
    return (f"CASE WHEN {column} IS NULL THEN {MISSING} WHEN {column} >= 0 AND {column} <= 4294967295 "
            f"THEN {column} ELSE {BAD_ID} END")


class _Schema(ctypes.Structure):
    pass


_Schema._fields_ = [("format", ctypes.c_char_p), ("name", ctypes.c_char_p), ("metadata", ctypes.c_void_p),
                    ("flags", ctypes.c_int64), ("n_children", ctypes.c_int64),
                    ("children", ctypes.POINTER(ctypes.POINTER(_Schema))), ("dictionary", ctypes.c_void_p),
                    ("release", ctypes.CFUNCTYPE(None, ctypes.POINTER(_Schema))), ("private_data", ctypes.c_void_p)]


class _Array(ctypes.Structure):
    pass


_Array._fields_ = [("length", ctypes.c_int64), ("null_count", ctypes.c_int64), ("offset", ctypes.c_int64),
                   ("n_buffers", ctypes.c_int64), ("n_children", ctypes.c_int64),
                   ("buffers", ctypes.POINTER(ctypes.c_void_p)), ("children", ctypes.POINTER(ctypes.POINTER(_Array))),
                   ("dictionary", ctypes.c_void_p), ("release", ctypes.CFUNCTYPE(None, ctypes.POINTER(_Array))),
                   ("private_data", ctypes.c_void_p)]


class _Stream(ctypes.Structure):
    pass


_Stream._fields_ = [("get_schema", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_Stream), ctypes.POINTER(_Schema))),
                    ("get_next", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_Stream), ctypes.POINTER(_Array))),
                    ("get_last_error", ctypes.CFUNCTYPE(ctypes.c_char_p, ctypes.POINTER(_Stream))),
                    ("release", ctypes.CFUNCTYPE(None, ctypes.POINTER(_Stream))), ("private_data", ctypes.c_void_p)]

# Arrow C formats of the numbers the driver gives (n: a column of NULLs only)
_TYPES = {b"l": np.int64, b"i": np.int32, b"s": np.int16, b"c": np.int8, b"g": np.float64, b"f": np.float32, b"n": None}


def available() -> bool:
    """ADBC's SQLite driver is importable and not turned off (FUSIONLAB_SQLITE_READER)."""
    if os.environ.get("FUSIONLAB_SQLITE_READER", "").lower() == "sqlite3":
        return False
    try:
        import adbc_driver_manager  # noqa: F401
        import adbc_driver_sqlite  # noqa: F401
    except ImportError:
        return False
    return True


def _columns(schema: _Schema) -> list[tuple[type, str]]:
    """numpy types and names of the stream's columns (a struct of numeric columns)."""
    out = []
    for i in range(schema.n_children):
        fmt = schema.children[i].contents.format
        name = (schema.children[i].contents.name or b"?").decode(errors="replace")
        if fmt not in _TYPES:
            raise ValueError(f"column {name[:80]} holds Arrow type {fmt!r}, not numbers")
        out.append((_TYPES[fmt], name))
    return out


def _column(a: _Array, dtype, name: str = "?") -> np.ndarray:
    """One numeric Arrow column as a fresh int64 array (a NULL reads as 0); ValueError
    naming the column where a float is not a whole number that int64 holds (NaN, inf,
    1e30, 1.5)."""
    n = a.length
    if not n or dtype is None:
        return np.zeros(n, np.int64)
    size = np.dtype(dtype).itemsize
    raw = (ctypes.c_char * ((a.offset + n) * size)).from_address(a.buffers[1])
    got = np.frombuffer(raw, dtype)[a.offset:]
    valid = None
    if a.null_count and a.buffers[0]:
        bits = np.frombuffer((ctypes.c_char * ((a.offset + n + 7) // 8)).from_address(a.buffers[0]), np.uint8)
        valid = np.unpackbits(bits, bitorder="little")[a.offset:a.offset + n].astype(bool)
    if got.dtype.kind == "f":
        x = got if valid is None else got[valid]
        bad = ~np.isfinite(x) | (np.abs(x) >= 2.0 ** 63) | (x != np.round(x))
        if bad.any():
            raise ValueError(f"column {name[:80]} holds {x[bad][0]!r}, not an integer")
    out = got.astype(np.int64)
    if valid is not None:
        out[~valid] = 0
    return out


def _error(stream: _Stream) -> Exception:
    msg = stream.get_last_error(ctypes.byref(stream))
    return RuntimeError(msg.decode(errors="replace") if msg else "ADBC stream error")


def column_batches(path: str, query: str, chunk: int):
    """The query's result as lists of 1-D int64 arrays (one per column), one list per Arrow
    record batch of `chunk` rows."""
    import adbc_driver_manager as adbc
    import adbc_driver_sqlite
    from fusionlab.analysis.readers.sqlite_pages import uri
    db = adbc_driver_sqlite.connect(uri(path))
    con = adbc.AdbcConnection(db)
    stmt = adbc.AdbcStatement(con)
    try:
        stmt.set_options(**{"adbc.sqlite.query.batch_rows": str(chunk)})
        stmt.set_sql_query(query)
        handle, _ = stmt.execute_query()
        stream = _Stream.from_address(handle.address)
        try:
            schema = _Schema()
            if stream.get_schema(ctypes.byref(stream), ctypes.byref(schema)):
                raise _error(stream)
            try:
                types = _columns(schema)
            finally:
                schema.release(ctypes.byref(schema))
            while True:
                batch = _Array()
                if stream.get_next(ctypes.byref(stream), ctypes.byref(batch)):
                    raise _error(stream)
                if not batch.release:       # the end of the stream
                    break
                try:
                    cols = [_column(batch.children[i].contents, t, name) for i, (t, name) in enumerate(types)] \
                        if batch.length else None
                finally:
                    batch.release(ctypes.byref(batch))
                if cols is not None:
                    yield cols
        finally:
            if stream.release:
                stream.release(ctypes.byref(stream))
    finally:
        stmt.close()
        con.close()
        db.close()


def _batches(path: str, query: str, chunk: int):
    """The query's result as 2-D int64 arrays, one per Arrow record batch of `chunk` rows."""
    for cols in column_batches(path, query, chunk):
        yield np.column_stack(cols)


def launch_calls(path: str, query: str, chunk: int) -> np.ndarray:
    """Every row of `query` (correlation id, start, end, tid) in one (n, 4) int64 array."""
    parts = list(_batches(path, query, chunk))
    out = np.concatenate(parts) if parts else np.empty((0, 4), np.int64)
    _refuse_bad_ids(out[:, 0])
    return out


def _refuse_bad_ids(ids: np.ndarray) -> None:
    if (ids == BAD_ID).any():
        raise ValueError("a correlation id outside 0..4294967295 (CUPTI's unsigned 32-bit ids; the reader "
                         "reserves the others)")


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
        _refuse_bad_ids(b[:, 2])
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
