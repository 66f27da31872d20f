"""Reader of nsys SQLite exports, defensive across nsys versions (2022.4 .. 2025.x).

Tables are created lazily (a missing CUPTI table means no such events) and column
names drift between versions, so every table and column is looked up before use.
Kernels are attributed to NVTX ranges through their launching API call, as nsys'
nvtx_gpu_proj_trace does; the join of API call and kernel is cuda_kern_exec's
(correlationId).

Each kernel launch's configuration (trace.CONFIG_COLUMNS: registers, shared memory, local
memory per thread, block and grid sizes) is read from the kernel table's columns where
the export has them (config_sql; a column an older nsys does not write reads as
trace.NO_VALUE), and each GPU's limits from TARGET_INFO_GPU (gpu_limits), for
analysis.run.occupancy.

Two ways in:
- scan(path) -> Report: the ranges (one row per NVTX range) and the report's facts, with
  the kernels and launch calls left in the file: Report.kernel_chunks() streams the
  kernels joined to their launch call (in SQLite) in start order, a fixed number of
  rows at a time, reading only the columns the metrics need; analysis.run.stream computes
  every range's metrics from that stream, in memory bounded by the number of ranges.
  The pipeline's path, for reports of any size.
- load(path) -> Trace: everything in pandas frames (analysis.readers.trace): for small reports,
  the tests' reference and tools that want every row.
"""
from __future__ import annotations

import itertools
import os
import re
import sqlite3
import stat

from typing import TYPE_CHECKING

import numpy as np

from fusionlab.analysis.readers import nsys_arrow, sqlite_pages
from fusionlab.analysis.readers.trace import (API_COLUMNS, CONFIG_COLUMNS, DEVICE_FIELDS, KERNEL_COLUMNS, NO_VALUE,
                                              RANGE_COLUMNS, RangeTable, ReportError, Trace, empty, join_launches)

if TYPE_CHECKING:
    import pandas as pd

# NVTX event types (ENUM_NSYS_EVENT_TYPE): push/pop and start/end ranges, domain create
NVTX_PUSHPOP, NVTX_STARTEND, NVTX_DOMAIN_CREATE = 59, 60, 75
# CUDA runtime/driver calls that launch GPU work (names carry _v7000, _ptsz, ... suffixes)
LAUNCH_API = re.compile(r"^cu(da)?(LaunchKernel|LaunchCooperativeKernel|GraphLaunch|LaunchKernelEx)")
VERSION = re.compile(r"_v\d+$")   # an API name's version suffix (cudaLaunchKernel_v7000)

SQLITE_MAGIC = b"SQLite format 3\x00"
CHUNK = 1 << 14   # rows per streamed chunk (Report.kernel_chunks, launch_chunks)
MAX_BYTES = int(os.environ.get("FUSIONLAB_MAX_SQLITE_BYTES") or 256 << 30)   # an export's size, at most
KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
# trace.CONFIG_COLUMNS from the kernel table's columns (their product where several)
CONFIG_SOURCES = {"device_id": ("deviceId",), "registers_per_thread": ("registersPerThread",),
                  "static_smem_bytes": ("staticSharedMemory",), "dynamic_smem_bytes": ("dynamicSharedMemory",),
                  "local_mem_per_thread_bytes": ("localMemoryPerThread",),
                  "block_threads": ("blockX", "blockY", "blockZ"), "grid_blocks": ("gridX", "gridY", "gridZ")}


def _tables(con) -> set[str]:
    return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table','view')")}


def _columns(con, table: str) -> set[str]:
    return {r[1] for r in con.execute(f"PRAGMA table_info({table})")}


def _pick(cols: set[str], *names: str) -> str | None:
    return next((n for n in names if n in cols), None)


def open_report(path: str) -> sqlite3.Connection:
    """Open an nsys SQLite export read-only, or raise ReportError with a one-line reason."""
    if not os.path.exists(path):
        raise ReportError(f"{path}: no such file")
    if os.path.isdir(path):
        raise ReportError(f"{path}: a directory, not an nsys SQLite export")
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise ReportError(f"{path}: not a regular file (a pipe or device): an nsys SQLite export is a file")
    if os.path.getsize(path) > MAX_BYTES:
        raise ReportError(f"{path}: {os.path.getsize(path)} bytes, over the cap of {MAX_BYTES} bytes for an nsys "
                          f"export (FUSIONLAB_MAX_SQLITE_BYTES sets another)")
    if os.path.getsize(path) == 0:
        raise ReportError(f"{path}: empty file (the profiled run left no report)")
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError as e:
        raise ReportError(f"{path}: unreadable ({e.strerror or type(e).__name__})") from None
    if head != SQLITE_MAGIC:
        raise ReportError(f"{path}: not an SQLite file (export .nsys-rep files with `nsys export --type sqlite`)")
    try:
        con = sqlite3.connect(sqlite_pages.uri(path), uri=True)
        tables = _tables(con)
    except sqlite3.DatabaseError as e:
        raise ReportError(f"{path}: corrupt SQLite file ({e})") from None
    if "StringIds" not in tables and "NVTX_EVENTS" not in tables and not any(t.startswith("CUPTI_") for t in tables):
        con.close()
        raise ReportError(f"{path}: not an nsys export (no StringIds, NVTX_EVENTS or CUPTI_* tables)")
    return con


def meta(con) -> dict:
    for t in ("EXPORT_META_DATA", "META_DATA_EXPORT"):
        if t in _tables(con):
            try:
                return dict(con.execute(f"SELECT name, value FROM {t}").fetchall())
            except sqlite3.DatabaseError:
                return {}
    return {}


def _strings(con) -> dict[int, str]:
    if "StringIds" not in _tables(con):
        return {}
    return dict(con.execute("SELECT id, value FROM StringIds").fetchall())


def _ranges(con, strings) -> RangeTable:
    if "NVTX_EVENTS" not in _tables(con):
        return RangeTable([], [], [], [], [])
    cols = _columns(con, "NVTX_EVENTS")
    text = "text" if "text" in cols else "NULL"
    text_id = "textId" if "textId" in cols else "NULL"
    dom = "domainId" if "domainId" in cols else "0"
    rows = con.execute(f"SELECT start, end, {text}, {text_id}, {dom}, eventType, globalTid "
                       f"FROM NVTX_EVENTS").fetchall()
    domains = {r[4]: (r[2] if r[2] is not None else strings.get(r[3]))
               for r in rows if r[5] == NVTX_DOMAIN_CREATE}
    out = [(r[2] if r[2] is not None else strings.get(r[3], ""), domains.get(r[4], ""),
            r[0], r[1], r[6]) for r in rows
           if r[5] in (NVTX_PUSHPOP, NVTX_STARTEND) and r[1] is not None]
    return RangeTable(*zip(*out)) if out else RangeTable([], [], [], [], [])


def _api(con, strings) -> pd.DataFrame:
    import pandas as pd
    if "CUPTI_ACTIVITY_KIND_RUNTIME" not in _tables(con):
        return empty(API_COLUMNS + ["correlation"])
    cols = _columns(con, "CUPTI_ACTIVITY_KIND_RUNTIME")
    name = _pick(cols, "nameId", "name")
    corr = _pick(cols, "correlationId", "correlation")
    if not name or not corr:
        raise ReportError(f"CUPTI_ACTIVITY_KIND_RUNTIME lacks nameId/correlationId (columns: {sorted(cols)})")
    df = pd.read_sql_query(f"SELECT start, end, {name} AS name, {corr} AS correlation, globalTid AS tid "
                           f"FROM CUPTI_ACTIVITY_KIND_RUNTIME", con)
    if name == "nameId":
        df["name"] = df["name"].map(strings).fillna("")
    df["is_launch"] = df["name"].str.match(LAUNCH_API)
    launch = df["is_launch"] & df["correlation"].notna()
    again = launch & df["correlation"].where(launch).duplicated()
    df.loc[again, "is_launch"] = False      # one launch per correlation id (Report.launch_chunks)
    return df


def _kernels(con, strings, api: pd.DataFrame) -> pd.DataFrame:
    import pandas as pd
    if "CUPTI_ACTIVITY_KIND_KERNEL" not in _tables(con):
        return empty(KERNEL_COLUMNS + CONFIG_COLUMNS)
    cols = _columns(con, "CUPTI_ACTIVITY_KIND_KERNEL")
    name = _pick(cols, "shortName", "demangledName", "mangledName", "name")
    corr = _pick(cols, "correlationId", "correlation")
    if not name or not corr:
        raise ReportError(f"CUPTI_ACTIVITY_KIND_KERNEL lacks a name or correlationId column (columns: {sorted(cols)})")
    full = _pick(cols, "demangledName", "mangledName") or name
    stream = "streamId" if "streamId" in cols else "0"
    config = "".join(f", {e} AS {c}" for e, c in zip(config_sql(cols), CONFIG_COLUMNS))
    k = pd.read_sql_query(f"SELECT start, end, {name} AS name, {full} AS full_name, {corr} AS correlation, "
                          f"{stream} AS stream{config} FROM CUPTI_ACTIVITY_KIND_KERNEL", con)
    for c in ("name", "full_name"):
        if pd.api.types.is_integer_dtype(k[c]):
            k[c] = k[c].map(strings).fillna("")
    k = k.astype({c: "int64" for c in CONFIG_COLUMNS})
    k = join_launches(k, api)
    return k[KERNEL_COLUMNS + CONFIG_COLUMNS].sort_values("start", ignore_index=True)


def config_sql(cols: set[str], alias: str = "") -> list[str]:
    """SQL expressions of trace.CONFIG_COLUMNS over the kernel table (columns cols,
    prefixed with alias): NO_VALUE where the export lacks a column or holds NULL."""
    out = []
    for name in CONFIG_COLUMNS:
        src = CONFIG_SOURCES[name]
        if all(c in cols for c in src):
            out.append(f"coalesce({' * '.join(alias + c for c in src)}, {NO_VALUE})")
        else:
            out.append(str(NO_VALUE))
    return out


def gpu_limits(con) -> dict[int, dict]:
    """Device id -> its limits (trace.DEVICE_FIELDS that TARGET_INFO_GPU has, as nsys
    read them from the device; None where NULL); {} without the table."""
    if "TARGET_INFO_GPU" not in _tables(con):
        return {}
    cols = _columns(con, "TARGET_INFO_GPU")
    if "id" not in cols:
        return {}
    fields = [f for f in DEVICE_FIELDS if f in cols]
    rows = con.execute(f"SELECT id{''.join(', ' + f for f in fields)} FROM TARGET_INFO_GPU ORDER BY rowid").fetchall()
    out: dict[int, dict] = {}
    for r in rows:
        if r[0] is not None:
            out.setdefault(int(r[0]), dict(zip(fields, r[1:])))
    return out


def _gpu_name(con) -> str | None:
    if "TARGET_INFO_GPU" in _tables(con):
        cols = _columns(con, "TARGET_INFO_GPU")
        if "name" in cols:
            row = con.execute("SELECT name FROM TARGET_INFO_GPU LIMIT 1").fetchone()
            return row[0] if row else None
    return None


def complete(con, tables: set[str], launch: str | None) -> list[str]:
    """Notes on an export that holds no GPU activity; ReportError where it holds half of
    it: launch calls (launch: Report's SQL condition on the runtime table) without a kernel
    table, or kernels without the runtime table that attributes them."""
    kernels = KERNEL_TABLE in tables and con.execute(f"SELECT EXISTS (SELECT 1 FROM {KERNEL_TABLE})").fetchone()[0]
    if RUNTIME_TABLE not in tables:
        if kernels:
            raise ReportError(f"kernels but no CUDA runtime table ({RUNTIME_TABLE}): they cannot be attributed to "
                              "ranges (a partial export?)")
        return ["no CUDA activity in this report (no kernel or CUDA runtime table: recorded without `-t cuda`, or "
                "no GPU work ran): every range has its CPU-side duration only"]
    if KERNEL_TABLE in tables:
        return []
    calls = con.execute(f"SELECT count(*) FROM {RUNTIME_TABLE} WHERE {launch}").fetchone()[0] if launch else 0
    if calls:
        raise ReportError(f"{calls} kernel launch calls but no kernel table ({KERNEL_TABLE}): a partial export "
                          "(export the .nsys-rep again)")
    return []


def _unreadable(path: str, e: Exception) -> ReportError:
    return ReportError(f"{path}: unreadable nsys export ({str(e).splitlines()[0]})")


class Report:
    """An nsys export opened for streaming (module doc): range_table (the ranges;
    ranges: as a DataFrame of Trace.ranges' columns, made on first use), device, tool_version, gpu and gpus (Trace.gpus) are read at open; kernels and launch
    calls stay in the file until kernel_chunks() / launch_chunks() stream them."""
    backend = "nsys"

    def __init__(self, path: str):
        con = open_report(path)
        try:
            tables = _tables(con)
            self.source = path
            self.range_table = _ranges(con, _strings(con))
            self._runtime = self._kernel = None
            if RUNTIME_TABLE in tables:
                cols = _columns(con, RUNTIME_TABLE)
                name, corr = _pick(cols, "nameId", "name"), _pick(cols, "correlationId", "correlation")
                if not name or not corr:
                    raise ReportError(f"{RUNTIME_TABLE} lacks nameId/correlationId (columns: {sorted(cols)})")
                launch, twice, ids = self._launch_api(con, name)
                self._runtime = {"name": name, "corr": corr, "launch": launch, "twice": twice, "launch_ids": ids}
            if KERNEL_TABLE in tables:
                cols = _columns(con, KERNEL_TABLE)
                name = _pick(cols, "shortName", "demangledName", "mangledName", "name")
                corr = _pick(cols, "correlationId", "correlation")
                if not name or not corr:
                    raise ReportError(f"{KERNEL_TABLE} lacks a name or correlationId column (columns: {sorted(cols)})")
                types = {r[1]: (r[2] or "").upper() for r in con.execute(f"PRAGMA table_info({KERNEL_TABLE})")}
                full = _pick(cols, "demangledName", "mangledName") or name
                self._kernel = {"name": name, "full": full, "corr": corr, "config": config_sql(cols, "k."),
                                "ids": types[name].startswith("INT") and types[full].startswith("INT")}
            has_calls = self._runtime is not None and con.execute(
                f"SELECT EXISTS (SELECT 1 FROM {RUNTIME_TABLE})").fetchone()[0]
            self.notes = complete(con, tables, self._runtime and self._runtime["launch"])
            self.device = "cuda" if has_calls else "cpu"
            self.tool_version = meta(con).get("EXPORT_PRODUCT_VERSION")
            self.gpu = _gpu_name(con)
            self.gpus = gpu_limits(con)
        except ReportError as e:
            raise ReportError(f"{path}: {e}") from None
        except sqlite3.DatabaseError as e:
            raise _unreadable(path, e) from None
        finally:
            con.close()
        self._names: dict = {}     # kernel name -> id, where the export stores names as text
        self.columnar = nsys_arrow.available()   # read the big tables through nsys_arrow
        self._calls = None         # the launch calls, once read (columnar)
        self._frame = None         # ranges, once made

    @property
    def ranges(self) -> pd.DataFrame:
        if self._frame is None:
            self._frame = self.range_table.frame()
        return self._frame

    @staticmethod
    def _launch_filter(con, name: str) -> str:
        """SQL condition on the runtime table: the call launches GPU work (LAUNCH_API)."""
        return Report._launch_api(con, name)[0]

    @staticmethod
    def _launch_api(con, name: str) -> tuple[str, bool, list[int] | None]:
        """(_launch_filter's condition, whether the export names one launch call twice: two
        launch API names that differ only in a version suffix, as nsys 2022.2 writes
        cudaLaunchKernel and cudaLaunchKernel_v7000 for the same launch, and the launch
        API names' string ids where the table names calls by id)."""
        if name == "nameId":
            pairs = [(i, v) for i, v in con.execute("SELECT id, value FROM StringIds") if LAUNCH_API.match(v or "")] \
                if "StringIds" in _tables(con) else []
            cond = f"nameId IN ({','.join(str(i) for i, _ in pairs)})"
            names, ids = [v for _, v in pairs], [i for i, _ in pairs]
        else:
            names = [v for (v,) in con.execute(f"SELECT DISTINCT name FROM {RUNTIME_TABLE}") if LAUNCH_API.match(v or "")]
            cond = "name IN ({})".format(",".join("'" + v.replace("'", "''") + "'" for v in names))
            ids = None
        return cond, len({VERSION.sub("", v) for v in names}) < len(set(names)), ids

    def _stream(self, setup: list[str], query: str, names: bool, chunk: int | None):
        con = open_report(self.source)
        try:
            for sql in setup:
                con.execute(sql)
            cur = con.execute(query)
            while True:
                rows = cur.fetchmany(chunk or CHUNK)
                if not rows:
                    break
                if not names or self._kernel["ids"]:
                    width = len(rows[0])
                    yield np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int64,
                                      count=len(rows) * width).reshape(-1, width)
                else:       # names stored as text (old exports): number them here
                    ids = self._names
                    a = np.array([r[:5] for r in rows], dtype=np.int64)
                    n = np.array([[ids.setdefault(r[5], len(ids)), ids.setdefault(r[6], len(ids))] for r in rows],
                                 dtype=np.int64)
                    rest = np.array([r[7:] for r in rows], dtype=np.int64).reshape(len(rows), -1)
                    yield np.concatenate([a, n, rest], axis=1)
        except sqlite3.DatabaseError as e:
            raise _unreadable(self.source, e) from None
        finally:
            con.close()

    def kernel_chunks(self, names: bool = False, chunk: int | None = None, config: bool = False):
        """Kernels joined to their launch call, as int64 arrays of columns start, end,
        launch_start, launch_end, tid (the launching thread's globalTid) [, name, full_name
        ids (strings())] [, trace.CONFIG_COLUMNS (with names; config)], ordered by (start,
        end, launch_start), about CHUNK rows at a time. The join is trace.join_launches'
        (the first launch call of each correlation id; a kernel without one is dropped):
        with the columnar reader (columnar), by binary search over the launch calls read
        once (nsys_arrow); else in SQLite, which sorts in bounded memory."""
        if self._kernel is None or self._runtime is None:
            return
        r, k = self._runtime, self._kernel
        extra = (f", k.{k['name']}, k.{k['full']}" if names else "") \
            + ("".join(", " + e for e in k["config"]) if names and config else "")
        if self.columnar and (k["ids"] or not names):
            try:
                yield from nsys_arrow.joined_kernels(
                    self.source, f"SELECT k.start, k.end, {nsys_arrow.id_sql('k.' + k['corr'])}{extra} "
                                 f"FROM {KERNEL_TABLE} k ORDER BY k.start, k.end",
                    nsys_arrow.first_launches(self._launch_calls()), chunk or CHUNK)
            except Exception as e:      # the driver's own errors: a file SQLite cannot read
                raise _unreadable(self.source, e) from None
            return
        setup = ["CREATE TEMP TABLE fl_launch (corr INTEGER PRIMARY KEY, ls INTEGER, le INTEGER, tid INTEGER)",
                 f"INSERT OR IGNORE INTO temp.fl_launch SELECT {r['corr']}, start, end, coalesce(globalTid, 0) "
                 f"FROM {RUNTIME_TABLE} WHERE {r['corr']} IS NOT NULL AND {r['launch']} ORDER BY rowid"]
        yield from self._stream(setup, f"SELECT k.start, k.end, l.ls, l.le, l.tid{extra} FROM {KERNEL_TABLE} k "
                                       f"JOIN temp.fl_launch l ON l.corr = k.{k['corr']} "
                                       f"ORDER BY k.start, k.end, l.ls", names, chunk)

    def _launch_calls(self) -> np.ndarray:
        """Every launch call (LAUNCH_API) as one int64 array of columns correlation id
        (nsys_arrow.MISSING where none), start, end, tid, in file order; read once
        (columnar reader only)."""
        if self._calls is None:
            r = self._runtime
            try:
                self._calls = nsys_arrow.launch_calls(
                    self.source, f"SELECT {nsys_arrow.id_sql(r['corr'])}, start, end, "
                                 f"coalesce(globalTid, 0) FROM {RUNTIME_TABLE} WHERE {r['launch']} ORDER BY rowid",
                    CHUNK * 4)
            except Exception as e:
                raise _unreadable(self.source, e) from None
        return self._calls

    def launch_chunks(self, chunk: int | None = None):
        """Every launch (LAUNCH_API calls, the first of each correlation id: one launch
        written under two API names counts once) as int64 arrays of columns start, end,
        tid, in no particular order, CHUNK rows at a time."""
        if self._runtime is None:
            return
        if self.columnar:
            calls, step = nsys_arrow.one_per_id(self._launch_calls()), chunk or CHUNK
            for i in range(0, len(calls), step):
                yield calls[i:i + step, 1:4]
            return
        r = self._runtime
        once = (f" AND ({r['corr']} IS NULL OR rowid IN (SELECT min(rowid) FROM {RUNTIME_TABLE} WHERE {r['launch']} "
                f"GROUP BY {r['corr']}))") if r["twice"] else ""
        yield from self._stream([], f"SELECT start, end, coalesce(globalTid, 0) FROM {RUNTIME_TABLE} "
                                    f"WHERE {r['launch']}{once}", False, chunk)

    def strings(self, ids) -> dict[int, str]:
        """The kernel names of name ids from kernel_chunks(names=True) ("" where unknown)."""
        ids = sorted({int(i) for i in ids})
        if self._kernel is not None and not self._kernel["ids"]:
            back = {v: k for k, v in self._names.items()}
            return {i: back.get(i) or "" for i in ids}
        con = open_report(self.source)
        try:
            out = {}
            for n in range(0, len(ids), 500):
                part = ids[n:n + 500]
                out.update(con.execute(f"SELECT id, value FROM StringIds WHERE id IN ({','.join('?' * len(part))})",
                                       part).fetchall())
        except sqlite3.DatabaseError as e:
            raise _unreadable(self.source, e) from None
        finally:
            con.close()
        return {i: out.get(i) or "" for i in ids}


def scan(path: str) -> Report:
    """Open an nsys SQLite export for streaming analysis; ReportError (one line) if it cannot be."""
    return Report(path)


def load(path: str) -> Trace:
    """Load an nsys SQLite export into a Trace; ReportError (one line) if it cannot be."""
    con = open_report(path)
    try:
        strings = _strings(con)
        tables = _tables(con)
        if RUNTIME_TABLE in tables:
            cols = _columns(con, RUNTIME_TABLE)
            complete(con, tables, Report._launch_filter(con, _pick(cols, "nameId", "name") or "name"))
        else:
            complete(con, tables, None)
        ranges = _ranges(con, strings).frame()
        api = _api(con, strings)
        kernels = _kernels(con, strings, api)
        m = meta(con)
        gpu = _gpu_name(con)
        gpus = gpu_limits(con)
    except ReportError as e:
        raise ReportError(f"{path}: {e}") from None
    except sqlite3.DatabaseError as e:
        raise _unreadable(path, e) from None
    except Exception as e:
        import pandas as pd
        if not isinstance(e, pd.errors.DatabaseError):
            raise
        raise _unreadable(path, e) from None
    finally:
        con.close()
    return Trace(source=path, backend="nsys", device="cuda" if len(kernels) or len(api) else "cpu",
                 ranges=ranges, api=api[API_COLUMNS], kernels=kernels,
                 tool_version=m.get("EXPORT_PRODUCT_VERSION"), gpu=gpu, gpus=gpus)
