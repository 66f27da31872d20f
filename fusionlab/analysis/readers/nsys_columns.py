"""Column reads of an nsys export's tables, for readers.nsys_pass: read_table gives a table
in rowid order as column batches, decoded from the file's pages (sqlite_pages) where the
file allows (FUSIONLAB_SQLITE_READER=adbc: never) and through ADBC's SQLite driver
(nsys_arrow) from the first row the pages do not give; rechunk cuts batches to a size;
ids_within and times_within refuse ids and times the packed columns cannot hold;
sort_columns and first_of_id order columns by an id and keep each id's first row; Index
finds sorted distinct ids (a table indexed by id where they are dense, else a binary
search)."""
from __future__ import annotations

import os
import sqlite3

import numpy as np

from fusionlab.analysis.readers import nsys_arrow, sqlite_pages
from fusionlab.analysis.readers import nsys_schema as NS
from fusionlab.analysis.readers.trace import ReportError

MISSING = nsys_arrow.MISSING
BAD_ID = nsys_arrow.BAD_ID
CHUNK = 1 << 16         # rows per batch read through ADBC, and of the pass's batches
DENSE = 4               # Index: ids spread at most this thinly are looked up in a table,
TABLE = 1 << 22         # as are ids of a span at most this (a table of 16 MB at most)


def rowid_span(report, table: str) -> int:
    """At least the table's number of rows: max(rowid) - min(rowid) + 1 (two index
    look-ups, where count(*) reads the whole table)."""
    lo, hi = fetch_all(report, f"SELECT (SELECT min(rowid) FROM {table}), (SELECT max(rowid) FROM {table})")[0]
    return 0 if lo is None else int(hi) - int(lo) + 1


def most_rows(report) -> int:
    """More rows than the file can hold (a row takes at least 4 bytes of a page): a bound on
    an allocation sized by rowids, which a damaged file may state at any size."""
    return os.path.getsize(report.source) // 4 + 1


def ids_within(packed: np.ndarray, table: str, column: str) -> None:
    """ReportError where a correlation id column (kernel_times', or Calls' packed one) holds
    an id outside CUPTI's unsigned 32-bit range (nsys_arrow.id_sql: BAD_ID), which the
    packing's MISSING and analysis.readers.nsys_pass.OTHER would take for another."""
    if len(packed) and (int(packed.min()) < -(1 << 33) or int(packed.max()) >= 1 << 32):
        raise ReportError(f"{table}.{column} holds an id outside 0..4294967295 (CUPTI's unsigned 32-bit "
                            f"correlation ids; the reader reserves the others)")


TIME_RANGE = (0, 1 << 62)     # nanoseconds a start or end may hold (2**62 ns: 146 years)


def times_within(cols: list[np.ndarray], table: str, names=("start", "end")) -> None:
    """ReportError naming the table and column where a time column holds a value outside
    TIME_RANGE (its differences and sums would overflow int64, or mean nothing)."""
    for c, name in zip(cols, names):
        if len(c) and (int(c.min()) < TIME_RANGE[0] or int(c.max()) >= TIME_RANGE[1]):
            bad = int(c.min()) if int(c.min()) < TIME_RANGE[0] else int(c.max())
            raise ReportError(f"{table}.{name} holds {'NULL or ' if bad == -1 else ''}{bad}, outside 0..2**62 ns")


def correlation_ids(col: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """sqlite_pages' correlation ids as id_sql gives them: MISSING for NULL, BAD_ID outside
    0..2**32-1."""
    v, null = col
    return np.where(null, MISSING, np.where((v >= 0) & (v <= 0xFFFFFFFF), v, BAD_ID))


def fetch_all(report, sql: str):
    con = NS.open_report(report.source)
    try:
        return con.execute(sql).fetchall()
    except sqlite3.DatabaseError as e:
        raise NS.unreadable(report.source, e) from None
    finally:
        con.close()


def pages_usable() -> bool:
    """The tables may be read from the file's pages (FUSIONLAB_SQLITE_READER=adbc: through ADBC)."""
    return os.environ.get("FUSIONLAB_SQLITE_READER", "").lower() != "adbc"


def rechunk(batches, chunk: int | None):
    """Column batches cut into batches of `chunk` rows (the last fewer); None: as they come."""
    if chunk is None:
        yield from batches
        return
    parts, rows = [], 0
    for b in batches:
        parts.append(b)
        rows += len(b[0])
        if rows < chunk:
            continue
        cols = [np.concatenate(c) for c in zip(*parts)] if len(parts) > 1 else b
        k = rows // chunk * chunk
        for i in range(0, k, chunk):
            yield [c[i:i + chunk] for c in cols]
        parts, rows = ([[c[k:] for c in cols]], rows - k) if rows > k else ([], 0)
    if rows:
        yield [np.concatenate(c) for c in zip(*parts)] if len(parts) > 1 else parts[0]


def read_table(report, table: str, names: list[str], convert, query: str, chunk: int | None, post=None):
    """The rows of `query` (the table in rowid order, its text ending in ORDER BY rowid;
    {where} before it) as column batches (rechunk): read from the file's pages
    (sqlite_pages; convert makes the named columns, name -> (values, NULL mask), into the
    query's columns) where the file allows, through ADBC (its batches through post, where
    given) from the first row the pages did not give (OFFSET: SQLite walks the b-tree as
    the pages were walked, and answers or refuses where they stopped). An error of either
    is a ReportError naming the file."""
    def rows():
        done = 0
        try:
            if pages_usable():
                for cols, _ in sqlite_pages.columns(report.source, table, names):
                    out = convert(dict(zip(names, cols)))
                    done += len(out[0])
                    yield out
                return
        except sqlite_pages.Unsupported:
            pass
        q = query.format(where="") + (f" LIMIT -1 OFFSET {done}" if done else "")
        for b in nsys_arrow.column_batches(report.source, q, CHUNK):
            yield post(b) if post is not None else b
    try:
        yield from rechunk(rows(), chunk)
    except ReportError:
        raise
    except Exception as e:          # SQLite's or the driver's refusal, a value out of range
        raise ReportError(f"{report.source}: unreadable nsys export ({table}: "
                            f"{(str(e).splitlines() or [type(e).__name__])[0]})") from None


def coalesce(col: tuple[np.ndarray, np.ndarray], value: int) -> np.ndarray:
    """sqlite_pages' (values, NULL mask) with value for NULL."""
    v, null = col
    return np.where(null, value, v) if null.any() else v


def sort_columns(cols: list[np.ndarray]) -> list[np.ndarray]:
    """The columns ordered by the first (stable), one column copied at a time."""
    key = cols[0]
    if len(key) < 2 or (key[1:] >= key[:-1]).all():
        return cols
    o = np.argsort(key, kind="stable")
    return [c[o] for c in cols]


def first_of_id(cols: list[np.ndarray]) -> list[np.ndarray]:
    """Rows of id-sorted columns that are the first of their id."""
    key = cols[0]
    if len(key) < 2:
        return cols
    first = np.empty(len(key), bool)
    first[0] = True
    np.not_equal(key[1:], key[:-1], out=first[1:])
    return cols if first.all() else [c[first] for c in cols]


def search_near(ids: np.ndarray, x: np.ndarray) -> np.ndarray:
    """np.searchsorted(ids, x) clipped to the last index, searched within the ids between
    x's least and greatest (a chunk's ids are close together)."""
    if not len(x):
        return np.zeros(0, np.int64)
    a, b = np.searchsorted(ids, [x.min(), x.max()])
    b = min(int(b) + 1, len(ids))
    return np.minimum(int(a) + np.searchsorted(ids[a:b], x), len(ids) - 1)


class Index:
    """Positions of sorted distinct ids: a table indexed by id where the ids are dense
    (their span at most DENSE times their number, or at most TABLE), else a binary search
    (search_near)."""

    def __init__(self, ids: np.ndarray):
        self.ids = ids
        self.table = None
        span = int(ids[-1]) - int(ids[0]) if len(ids) else 0
        if len(ids) and int(ids[0]) >= 0 and (span < DENSE * len(ids) or span < TABLE):
            self.lo = int(ids[0])
            self.table = np.full(int(ids[-1]) - self.lo + 1, -1, np.int32 if len(ids) < 1 << 31 else np.int64)
            self.table[ids - self.lo] = np.arange(len(ids))

    def find(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(hit, position) of each x among the ids; a position where there is no hit is any
        position."""
        if self.table is None:
            i = search_near(self.ids, x)
            return self.ids[i] == x, i
        k = x - self.lo
        inside = (k >= 0) & (k < len(self.table))
        i = self.table[np.where(inside, k, 0)]
        hit = inside & (i >= 0)
        return hit, np.where(hit, i, 0)
