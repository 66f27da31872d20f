"""Columnar reads of an nsys SQLite export for the single pass of analysis.run.single_pass:
the runtime table read once, the kernel table twice (its end and correlation id, then the
columns the pass needs in start order), the memory copies and memsets once in start order.
The runtime and kernel tables in file order are decoded from the file's pages
(sqlite_pages: numpy over the b-tree, no SQLite step per row) where the file allows
(FUSIONLAB_SQLITE_READER=adbc: never), through ADBC's SQLite driver (nsys_arrow) from the
first row it does not decode, with the rows and batches the driver gives; everything else
through the driver.

- usable(report): the export can be read this way (nsys_sqlite.Report with the columnar
  reader, kernel names stored as string ids).
- Calls(report): every runtime call, as column arrays: the first launch call (LAUNCH_API)
  of each correlation id sorted by id (join: id, start, end, tid; trace.join_launches'
  rule), the launch calls without an id (loose), and per id the start of its first call
  of any name where that is not its first launch call (readers.gpu_ops' launch_start);
  ids are looked up in a table indexed by id where they are dense, else by binary search.
  Memory: 32 bytes per launch call, 16 per other call.
- kernel_times(report): (start, end, correlation id) of every kernel, in file order, as
  column batches.
- kernel_rows(report, in_order): every kernel as columns start, end, correlation id,
  short name id, full name id, device, stream, ordered by (start, end, rowid), in
  batches; in_order: the file holds them so already (nsys writes kernels in start order),
  so SQLite reads without sorting.
- held_kernels(report): kernel_rows' columns of every kernel in file order, read once
  into memory (56 bytes a kernel), for exports of at most HELD kernels (kernel_count:
  at most the span of the table's rowids, found without reading the table), which so
  skip kernel_times' second read of the table.
The driver's cost grows with the number of values it hands over, so in its queries pairs
of small numbers travel packed in one column: a runtime call's launch flag with its correlation
id (CUPTI's ids are unsigned 32-bit numbers: a call that is not a launch reads as
OTHER - id, OTHER where it has none), a kernel's short and full name ids (where they are
below 2**31) and its device and stream (unsigned 32-bit numbers in CUPTI, as
device * 2**32 + stream).
- memops(report): every memory copy and memset as rows start, end, device, stream,
  correlation id, kind (1 memcpy, 2 memset), ordered by (start, end, kind, rowid).
"""
from __future__ import annotations

import os
import sqlite3

import numpy as np

from fusionlab.analysis.readers import nsys_arrow, sqlite_pages
from fusionlab.analysis.readers import nsys_sqlite as N

MISSING = nsys_arrow.MISSING
BAD_ID = nsys_arrow.BAD_ID
OTHER = -2             # Calls' packed column: a call that is not a launch, without an id (id c: OTHER - 1 - c)
CHUNK = 1 << 16
DENSE = 4               # _Index: ids spread at most this thinly are looked up in a table,
TABLE = 1 << 22         # as are ids of a span at most this (a table of 16 MB at most)
HELD = 1 << 20          # held_kernels: at most this many kernels held in memory (56 MB)
MEMOPS = (("CUPTI_ACTIVITY_KIND_MEMCPY", 1), ("CUPTI_ACTIVITY_KIND_MEMSET", 2))
KERNEL_NAME = ("shortName", "demangledName", "name")    # readers.gpu_ops' kernel name


def usable(report) -> bool:
    return (isinstance(report, N.Report) and report.columnar and report._kernel is not None
            and report._runtime is not None and report._kernel["ids"])


def _rowid_span(report, table: str) -> int:
    """At least the table's number of rows: max(rowid) - min(rowid) + 1 (two index
    look-ups, where count(*) reads the whole table)."""
    lo, hi = _one(report, f"SELECT (SELECT min(rowid) FROM {table}), (SELECT max(rowid) FROM {table})")[0]
    return 0 if lo is None else int(hi) - int(lo) + 1


def _most_rows(report) -> int:
    """More rows than the file can hold (a row takes at least 4 bytes of a page): a bound on
    an allocation sized by rowids, which a damaged file may state at any size."""
    return os.path.getsize(report.source) // 4 + 1


def _ids_within(packed: np.ndarray, table: str, column: str) -> None:
    """ReportError where a correlation id column (kernel_times', or Calls' packed one) holds
    an id outside CUPTI's unsigned 32-bit range (nsys_arrow.id_sql: BAD_ID), which the
    packing's MISSING and OTHER would take for another."""
    if len(packed) and (int(packed.min()) < -(1 << 33) or int(packed.max()) >= 1 << 32):
        raise N.ReportError(f"{table}.{column} holds an id outside 0..4294967295 (CUPTI's unsigned 32-bit "
                            f"correlation ids; the reader reserves the others)")


TIME_RANGE = (0, 1 << 62)     # nanoseconds a start or end may hold (2**62 ns: 146 years)


def times_within(cols: list[np.ndarray], table: str, names=("start", "end")) -> None:
    """ReportError naming the table and column where a time column holds a value outside
    TIME_RANGE (its differences and sums would overflow int64, or mean nothing)."""
    for c, name in zip(cols, names):
        if len(c) and (int(c.min()) < TIME_RANGE[0] or int(c.max()) >= TIME_RANGE[1]):
            bad = int(c.min()) if int(c.min()) < TIME_RANGE[0] else int(c.max())
            raise N.ReportError(f"{table}.{name} holds {'NULL or ' if bad == -1 else ''}{bad}, outside 0..2**62 ns")


def _ids(col: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """sqlite_pages' correlation ids as id_sql gives them: MISSING for NULL, BAD_ID outside
    0..2**32-1."""
    v, null = col
    return np.where(null, MISSING, np.where((v >= 0) & (v <= 0xFFFFFFFF), v, BAD_ID))


def _one(report, sql: str):
    con = N.open_report(report.source)
    try:
        return con.execute(sql).fetchall()
    except sqlite3.DatabaseError as e:
        raise N._unreadable(report.source, e) from None
    finally:
        con.close()


def _pages_usable() -> bool:
    """The tables may be read from the file's pages (FUSIONLAB_SQLITE_READER=adbc: through ADBC)."""
    return os.environ.get("FUSIONLAB_SQLITE_READER", "").lower() != "adbc"


def _rechunk(batches, chunk: int | None):
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


def _table(report, table: str, names: list[str], convert, query: str, chunk: int | None, post=None):
    """The rows of `query` (the table in rowid order, its text ending in ORDER BY rowid;
    {where} before it) as column batches (_rechunk): read from the file's pages
    (sqlite_pages; convert makes the named columns, name -> (values, NULL mask), into the
    query's columns) where the file allows, through ADBC (its batches through post, where
    given) from the first row the pages did not give (OFFSET: SQLite walks the b-tree as
    the pages were walked, and answers or refuses where they stopped). An error of either
    is a ReportError naming the file."""
    def rows():
        done = 0
        try:
            if _pages_usable():
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
        yield from _rechunk(rows(), chunk)
    except N.ReportError:
        raise
    except Exception as e:          # SQLite's or the driver's refusal, a value out of range
        raise N.ReportError(f"{report.source}: unreadable nsys export ({table}: "
                            f"{(str(e).splitlines() or [type(e).__name__])[0]})") from None


def _coalesce(col: tuple[np.ndarray, np.ndarray], value: int) -> np.ndarray:
    """sqlite_pages' (values, NULL mask) with value for NULL."""
    v, null = col
    return np.where(null, value, v) if null.any() else v


def _sort_columns(cols: list[np.ndarray]) -> list[np.ndarray]:
    """The columns ordered by the first (stable), one column copied at a time."""
    key = cols[0]
    if len(key) < 2 or (key[1:] >= key[:-1]).all():
        return cols
    o = np.argsort(key, kind="stable")
    return [c[o] for c in cols]


def _first(cols: list[np.ndarray]) -> list[np.ndarray]:
    """Rows of id-sorted columns that are the first of their id."""
    key = cols[0]
    if len(key) < 2:
        return cols
    first = np.empty(len(key), bool)
    first[0] = True
    np.not_equal(key[1:], key[:-1], out=first[1:])
    return cols if first.all() else [c[first] for c in cols]


def _search(ids: np.ndarray, x: np.ndarray) -> np.ndarray:
    """np.searchsorted(ids, x) clipped to the last index, searched within the ids between
    x's least and greatest (a chunk's ids are close together)."""
    if not len(x):
        return np.zeros(0, np.int64)
    a, b = np.searchsorted(ids, [x.min(), x.max()])
    b = min(int(b) + 1, len(ids))
    return np.minimum(int(a) + np.searchsorted(ids[a:b], x), len(ids) - 1)


class _Index:
    """Positions of sorted distinct ids: a table indexed by id where the ids are dense
    (their span at most DENSE times their number, or at most TABLE), else a binary search
    (_search)."""

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
            i = _search(self.ids, x)
            return self.ids[i] == x, i
        k = x - self.lo
        inside = (k >= 0) & (k < len(self.table))
        i = self.table[np.where(inside, k, 0)]
        hit = inside & (i >= 0)
        return hit, np.where(hit, i, 0)


class Calls:
    """The runtime table of an nsys export (module doc)."""

    def __init__(self, report):
        r = report._runtime
        n = min(_rowid_span(report, N.RUNTIME_TABLE), _most_rows(report))
        lc = [np.empty(n, np.int64) for _ in range(4)]     # corr, start, end, tid of the launch calls
        other = [[], []]                                           # corr, start of the other calls with an id
        i = 0
        corr_sql = nsys_arrow.id_sql(r["corr"])
        q = (f"SELECT CASE WHEN {r['launch']} THEN {corr_sql} "
             f"ELSE {OTHER} - 1 - {corr_sql} END, coalesce(start, -1), coalesce(end, -1), coalesce(globalTid, 0) "
             f"FROM {N.RUNTIME_TABLE} {{where}} ORDER BY rowid")
        names = [r["corr"], "start", "end", "globalTid", r["name"]]

        def convert(c):
            if r.get("launch_ids") is None:
                raise sqlite_pages.Unsupported("launch calls named by text")
            corr = _ids(c[r["corr"]])
            launch = np.isin(c[r["name"]][0], r["launch_ids"]) & ~c[r["name"]][1]
            return [np.where(launch, corr, OTHER - 1 - corr), _coalesce(c["start"], -1), _coalesce(c["end"], -1),
                    c["globalTid"][0]]
        for b in _table(report, N.RUNTIME_TABLE, names, convert, q, None):
            _ids_within(b[0], N.RUNTIME_TABLE, r["corr"])
            times_within(b[1:3], N.RUNTIME_TABLE)
            is_launch = b[0] >= MISSING
            k = int(is_launch.sum())
            if i + k > len(lc[0]):          # more rows than the rowids span (the table grew while read)
                lc = [np.concatenate([c[:i], np.empty(max(len(c), k), np.int64)]) for c in lc]
            every = k == len(is_launch)
            for j in range(4):
                lc[j][i:i + k] = b[j] if every else b[j][is_launch]
            i += k
            if not every:
                o = b[0] < OTHER
                other[0].append(OTHER - 1 - b[0][o])
                other[1].append(b[1][o])
        for c in lc:
            c.resize(i, refcheck=False)      # in place: the rows of the other calls given back
        missing = lc[0] == MISSING
        self.loose = np.column_stack([c[missing] for c in lc[1:]]) if missing.any() else np.empty((0, 3), np.int64)
        if missing.any():
            lc = [c[~missing] for c in lc]
        self.join = _first(_sort_columns(lc))
        oc = np.concatenate(other[0]) if other[0] else np.empty(0, np.int64)
        os_ = np.concatenate(other[1]) if other[1] else np.empty(0, np.int64)
        oc, os_ = _first(_sort_columns([oc, os_]))
        ids = self.join[0]
        both = oc[ids[np.minimum(np.searchsorted(ids, oc), len(ids) - 1)] == oc] if len(ids) else oc[:0]
        if len(both):      # an id with a launch call and another call: the first of either, in file order
            first = {}
            for m in range(0, len(both), 500):
                part = ",".join(str(int(x)) for x in both[m:m + 500])
                for c, s in _one(report, f"SELECT {r['corr']}, start FROM {N.RUNTIME_TABLE} "
                                         f"WHERE {r['corr']} IN ({part}) ORDER BY rowid"):
                    first.setdefault(c, s)
            at = np.searchsorted(oc, both)
            os_[at] = [first[int(c)] for c in both]
        self.other = (oc, os_)
        self._ids, self._other_ids = _Index(self.join[0]), _Index(oc)

    def launches(self, chunk: int = CHUNK * 4):
        """Every launch (one per correlation id, and those without one) as columns start,
        end, tid, in no particular order."""
        corr, s, e, t = self.join
        for i in range(0, len(corr), chunk):
            yield s[i:i + chunk], e[i:i + chunk], t[i:i + chunk]
        if len(self.loose):
            yield self.loose[:, 0], self.loose[:, 1], self.loose[:, 2]

    def launch_of(self, corr: np.ndarray):
        """(hit, start, end, tid) of each id's launch call (join)."""
        ids = self.join[0]
        if not len(ids):
            z = np.zeros(len(corr), np.int64)
            return np.zeros(len(corr), bool), z, z, z
        hit, i = self._ids.find(corr)
        return hit, self.join[1][i], self.join[2][i], self.join[3][i]

    def first_call(self, corr: np.ndarray, hit: np.ndarray | None = None, ls: np.ndarray | None = None) -> np.ndarray:
        """The start of each id's first call of any name, -1 where none (readers.gpu_ops);
        hit, ls: launch_of's answer for the same ids, where known."""
        if hit is None:
            hit, ls, _, _ = self.launch_of(corr)
        out = np.where(hit, ls, -1)
        oc, os_ = self.other
        if len(oc):
            there, i = self._other_ids.find(corr)
            out = np.where(there, os_[i], out)
        out[corr == MISSING] = -1
        return out


def kernel_times(report):
    k = report._kernel
    q = (f"SELECT coalesce(start, -1), coalesce(end, -1), {nsys_arrow.id_sql(k['corr'])} FROM {N.KERNEL_TABLE} "
         f"{{where}} ORDER BY rowid")
    for b in _table(report, N.KERNEL_TABLE, ["start", "end", k["corr"]],
                    lambda c: [_coalesce(c["start"], -1), _coalesce(c["end"], -1), _ids(c[k["corr"]])], q, CHUNK):
        _ids_within(b[2], N.KERNEL_TABLE, k["corr"])
        times_within(b[:2], N.KERNEL_TABLE)
        yield b


def sorted_after(last: tuple | None, s: np.ndarray, e: np.ndarray) -> tuple[bool, tuple | None]:
    """Whether rows (s, e) continue a sequence in (start, end) order whose last row was
    `last` (None: none yet), and the new last row."""
    if not len(s):
        return True, last
    ok = last is None or (int(s[0]), int(e[0])) >= last
    if ok and len(s) > 1:
        ds = s[1:] - s[:-1]
        ok = bool((ds >= 0).all()) and bool(((ds > 0) | (e[1:] >= e[:-1])).all())
    return ok, (int(s[-1]), int(e[-1]))


def _kernel_columns(report) -> dict:
    con = N.open_report(report.source)
    try:
        cols = N._columns(con, N.KERNEL_TABLE)
        top = con.execute("SELECT min(id), max(id) FROM StringIds").fetchone() if "StringIds" in N._tables(con) \
            else (None, None)
    except sqlite3.DatabaseError as e:
        raise N._unreadable(report.source, e) from None
    finally:
        con.close()
    return {"cols": cols, "packed": top[0] is not None and top[0] >= 0 and top[1] < (1 << 31)}


def kernel_name_column(report) -> str | None:
    """readers.gpu_ops' kernel name column (where it is the short name the pass reads)."""
    return N._pick(_kernel_columns(report)["cols"], *KERNEL_NAME)


def kernel_rows(report, in_order: bool = False, chunk: int | None = CHUNK):
    k = report._kernel
    info = _kernel_columns(report)
    cols = info["cols"]
    dev = "coalesce(k.deviceId, 0)" if "deviceId" in cols else "0"
    stream = "coalesce(k.streamId, 0)" if "streamId" in cols else "0"
    names = f"(k.{k['name']} << 31) | k.{k['full']}" if info["packed"] else f"k.{k['name']}, k.{k['full']}"
    q = (f"SELECT coalesce(k.start, -1), coalesce(k.end, -1), {nsys_arrow.id_sql('k.' + k['corr'])}, {names}, {dev} * 4294967296 + {stream} "
         f"FROM {N.KERNEL_TABLE} k {{where}} ORDER BY " + ("k.rowid" if in_order else "k.start, k.end, k.rowid"))
    read = ["start", "end", k["corr"], k["name"], k["full"]] + [c for c in ("deviceId", "streamId") if c in cols]

    def convert(c):     # the columns the query's give unpacked (below), where they are the same
        out = [_coalesce(c["start"], -1), _coalesce(c["end"], -1), _ids(c[k["corr"]])]
        (name, nn), (full, fn) = c[k["name"]], c[k["full"]]
        if info["packed"]:
            null = nn | fn
            if null.any():      # the packed value is NULL: both read as 0
                name, full = np.where(null, 0, name), np.where(null, 0, full)
            _within(name, 0, 1 << 32)
            _within(full, 0, 1 << 31)
        d, st = (c[x][0] if x in c else np.zeros(len(out[0]), np.int64) for x in ("deviceId", "streamId"))
        _within(d, -(1 << 31), 1 << 31)
        _within(st, 0, 1 << 32)
        return out + [name, full, d, st]

    def unpack(b):
        if info["packed"]:
            p = b[3]
            b = b[:3] + [p >> 31, p & ((1 << 31) - 1)] + b[4:]
        p = b[-1]
        return b[:-1] + [p >> 32, p & 0xFFFFFFFF]
    if in_order:
        batches = _table(report, N.KERNEL_TABLE, read, convert, q, chunk, unpack)
    else:
        batches = (unpack(b) for b in nsys_arrow.column_batches(report.source, q.format(where=""), chunk))
    try:
        for b in batches:
            _ids_within(b[2], N.KERNEL_TABLE, k["corr"])
            times_within(b[:2], N.KERNEL_TABLE)
            yield b
    except N.ReportError:
        raise
    except Exception as e:
        raise N._unreadable(report.source, e) from None


def _within(x: np.ndarray, lo: int, hi: int) -> None:
    """Raise sqlite_pages.Unsupported unless lo <= x < hi (where the query's packing into
    one column and its unpacking give x back)."""
    if len(x) and (int(x.min()) < lo or int(x.max()) >= hi):
        raise sqlite_pages.Unsupported("a value the query's packed column would not give back")


def kernel_count(report) -> int:
    """At least the number of kernels (_rowid_span)."""
    return _rowid_span(report, N.KERNEL_TABLE)


def held_kernels(report, n: int) -> list[np.ndarray]:
    """kernel_rows' columns of the n kernels in file order, each one array."""
    cols, i = None, 0
    for b in kernel_rows(report, in_order=True, chunk=None):
        if cols is None:
            cols = [np.empty(n, np.int64) for _ in b]
        k = min(len(b[0]), n - i)     # the table grew since it was counted: its first n rows
        for c, x in zip(cols, b):
            c[i:i + k] = x[:k]
        i += k
    return [c[:i] for c in cols] if cols is not None else [np.empty(0, np.int64) for _ in range(7)]


def memops(report, chunk: int = CHUNK):
    con = N.open_report(report.source)
    try:
        tables = N._tables(con)
        parts = []
        for table, kind in MEMOPS:
            if table not in tables:
                continue
            cols = N._columns(con, table)
            corr = N._pick(cols, "correlationId", "correlation")
            parts.append(f"SELECT start, end, {'deviceId' if 'deviceId' in cols else '0'} AS d, "
                         f"{'streamId' if 'streamId' in cols else '0'} AS st, "
                         f"{f'coalesce({corr}, {MISSING})' if corr else MISSING} AS c, {kind} AS kind, rowid AS r "
                         f"FROM {table}")
    finally:
        con.close()
    if not parts:
        return
    q = f"SELECT start, end, d, st, c, kind FROM ({' UNION ALL '.join(parts)}) ORDER BY start, end, kind, r"
    yield from nsys_arrow._batches(report.source, q, chunk)
