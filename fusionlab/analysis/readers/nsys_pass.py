"""Columnar reads of an nsys SQLite export for the single pass of analysis.run.single_pass:
the runtime table read once, the kernel table twice (its end and correlation id, then the
columns the pass needs in start order), the memory copies and memsets once in start order.
The runtime and kernel tables in file order are decoded from the file's pages
(sqlite_pages: numpy over the b-tree, no SQLite step per row) where the file allows
(FUSIONLAB_SQLITE_READER=adbc: never), through ADBC's SQLite driver (nsys_arrow) from the
first row it does not decode, with the rows and batches the driver gives
(readers.nsys_columns); everything else through the driver.

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

import sqlite3

import numpy as np

from fusionlab.analysis.readers import nsys_arrow, sqlite_pages
from fusionlab.analysis.readers import nsys_columns as C
from fusionlab.analysis.readers import nsys_schema as NS
from fusionlab.analysis.readers.trace import ReportError
from fusionlab.analysis.readers import nsys_sqlite as N

MISSING = nsys_arrow.MISSING
OTHER = -2             # Calls' packed column: a call that is not a launch, without an id (id c: OTHER - 1 - c)
CHUNK = C.CHUNK         # rows per batch of the pass
HELD = 1 << 20          # held_kernels: at most this many kernels held in memory (56 MB)
MEMOPS = (("CUPTI_ACTIVITY_KIND_MEMCPY", 1), ("CUPTI_ACTIVITY_KIND_MEMSET", 2))
KERNEL_NAME = ("shortName", "demangledName", "name")    # readers.gpu_ops' kernel name


def usable(report) -> bool:
    return (isinstance(report, N.Report) and report.columnar and report._kernel is not None
            and report._runtime is not None and report._kernel["ids"])


class Calls:
    """The runtime table of an nsys export (module doc)."""

    def __init__(self, report):
        r = report._runtime
        n = min(C.rowid_span(report, NS.RUNTIME_TABLE), C.most_rows(report))
        lc = [np.empty(n, np.int64) for _ in range(4)]     # corr, start, end, tid of the launch calls
        other = [[], []]                                           # corr, start of the other calls with an id
        i = 0
        corr_sql = nsys_arrow.id_sql(r["corr"])
        q = (f"SELECT CASE WHEN {r['launch']} THEN {corr_sql} "
             f"ELSE {OTHER} - 1 - {corr_sql} END, coalesce(start, -1), coalesce(end, -1), coalesce(globalTid, 0) "
             f"FROM {NS.RUNTIME_TABLE} {{where}} ORDER BY rowid")
        names = [r["corr"], "start", "end", "globalTid", r["name"]]

        def convert(c):
            if r.get("launch_ids") is None:
                raise sqlite_pages.Unsupported("launch calls named by text")
            corr = C.correlation_ids(c[r["corr"]])
            launch = np.isin(c[r["name"]][0], r["launch_ids"]) & ~c[r["name"]][1]
            return [np.where(launch, corr, OTHER - 1 - corr), C.coalesce(c["start"], -1), C.coalesce(c["end"], -1),
                    c["globalTid"][0]]
        for b in C.read_table(report, NS.RUNTIME_TABLE, names, convert, q, None):
            C.ids_within(b[0], NS.RUNTIME_TABLE, r["corr"])
            C.times_within(b[1:3], NS.RUNTIME_TABLE)
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
        self.join = C.first_of_id(C.sort_columns(lc))
        oc = np.concatenate(other[0]) if other[0] else np.empty(0, np.int64)
        os_ = np.concatenate(other[1]) if other[1] else np.empty(0, np.int64)
        oc, os_ = C.first_of_id(C.sort_columns([oc, os_]))
        ids = self.join[0]
        both = oc[ids[np.minimum(np.searchsorted(ids, oc), len(ids) - 1)] == oc] if len(ids) else oc[:0]
        if len(both):      # an id with a launch call and another call: the first of either, in file order
            first = {}
            for m in range(0, len(both), 500):
                part = ",".join(str(int(x)) for x in both[m:m + 500])
                for c, s in C.fetch_all(report, f"SELECT {r['corr']}, start FROM {NS.RUNTIME_TABLE} "
                                         f"WHERE {r['corr']} IN ({part}) ORDER BY rowid"):
                    first.setdefault(c, s)
            at = np.searchsorted(oc, both)
            os_[at] = [first[int(c)] for c in both]
        self.other = (oc, os_)
        self._ids, self._other_ids = C.Index(self.join[0]), C.Index(oc)

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
    q = (f"SELECT coalesce(start, -1), coalesce(end, -1), {nsys_arrow.id_sql(k['corr'])} FROM {NS.KERNEL_TABLE} "
         f"{{where}} ORDER BY rowid")
    def convert(c):
        return [C.coalesce(c["start"], -1), C.coalesce(c["end"], -1), C.correlation_ids(c[k["corr"]])]
    for b in C.read_table(report, NS.KERNEL_TABLE, ["start", "end", k["corr"]], convert, q, CHUNK):
        C.ids_within(b[2], NS.KERNEL_TABLE, k["corr"])
        C.times_within(b[:2], NS.KERNEL_TABLE)
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
    con = NS.open_report(report.source)
    try:
        cols = NS.column_names(con, NS.KERNEL_TABLE)
        top = con.execute("SELECT min(id), max(id) FROM StringIds").fetchone() if "StringIds" in NS.table_names(con) \
            else (None, None)
    except sqlite3.DatabaseError as e:
        raise NS.unreadable(report.source, e) from None
    finally:
        con.close()
    return {"cols": cols, "packed": top[0] is not None and top[0] >= 0 and top[1] < (1 << 31)}


def kernel_name_column(report) -> str | None:
    """readers.gpu_ops' kernel name column (where it is the short name the pass reads)."""
    return NS.pick(_kernel_columns(report)["cols"], *KERNEL_NAME)


def kernel_rows(report, in_order: bool = False, chunk: int | None = CHUNK):
    k = report._kernel
    info = _kernel_columns(report)
    cols = info["cols"]
    dev = "coalesce(k.deviceId, 0)" if "deviceId" in cols else "0"
    stream = "coalesce(k.streamId, 0)" if "streamId" in cols else "0"
    names = f"(k.{k['name']} << 31) | k.{k['full']}" if info["packed"] else f"k.{k['name']}, k.{k['full']}"
    q = (f"SELECT coalesce(k.start, -1), coalesce(k.end, -1), {nsys_arrow.id_sql('k.' + k['corr'])}, {names}, {dev} * 4294967296 + {stream} "
         f"FROM {NS.KERNEL_TABLE} k {{where}} ORDER BY " + ("k.rowid" if in_order else "k.start, k.end, k.rowid"))
    read = ["start", "end", k["corr"], k["name"], k["full"]] + [c for c in ("deviceId", "streamId") if c in cols]

    def convert(c):     # the columns the query's give unpacked (below), where they are the same
        out = [C.coalesce(c["start"], -1), C.coalesce(c["end"], -1), C.correlation_ids(c[k["corr"]])]
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
        batches = C.read_table(report, NS.KERNEL_TABLE, read, convert, q, chunk, unpack)
    else:
        batches = (unpack(b) for b in nsys_arrow.column_batches(report.source, q.format(where=""), chunk))
    try:
        for b in batches:
            C.ids_within(b[2], NS.KERNEL_TABLE, k["corr"])
            C.times_within(b[:2], NS.KERNEL_TABLE)
            yield b
    except ReportError:
        raise
    except Exception as e:
        raise NS.unreadable(report.source, e) from None


def _within(x: np.ndarray, lo: int, hi: int) -> None:
    """Raise sqlite_pages.Unsupported unless lo <= x < hi (where the query's packing into
    one column and its unpacking give x back)."""
    if len(x) and (int(x.min()) < lo or int(x.max()) >= hi):
        raise sqlite_pages.Unsupported("a value the query's packed column would not give back")


def kernel_count(report) -> int:
    """At least the number of kernels (C.rowid_span)."""
    return C.rowid_span(report, NS.KERNEL_TABLE)


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
    con = NS.open_report(report.source)
    try:
        tables = NS.table_names(con)
        parts = []
        for table, kind in MEMOPS:
            if table not in tables:
                continue
            cols = NS.column_names(con, table)
            corr = NS.pick(cols, "correlationId", "correlation")
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
