"""Reader of nsys SQLite exports, defensive across nsys versions (2022.4 .. 2025.x): the
export's tables, columns and facts are looked up through readers.nsys_schema. Kernels are
attributed to NVTX ranges through their launching API call, as nsys' nvtx_gpu_proj_trace
does; the join of API call and kernel is cuda_kern_exec's (correlationId).

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
import re
import sqlite3

from typing import TYPE_CHECKING

import numpy as np

from fusionlab.analysis.readers import nsys_arrow
from fusionlab.analysis.readers import nsys_schema as NS
from fusionlab.analysis.readers.trace import (API_COLUMNS, CONFIG_COLUMNS, KERNEL_COLUMNS, ReportError, Trace, empty,
                                              join_launches)

if TYPE_CHECKING:
    import pandas as pd

# CUDA runtime/driver calls that launch GPU work (names carry _v7000, _ptsz, ... suffixes)
LAUNCH_API = re.compile(r"^cu(da)?(LaunchKernel|LaunchCooperativeKernel|GraphLaunch|LaunchKernelEx)")
VERSION = re.compile(r"_v\d+$")   # an API name's version suffix (cudaLaunchKernel_v7000)

CHUNK = 1 << 14   # rows per streamed chunk (Report.kernel_chunks, launch_chunks)


def _api(con, strings) -> pd.DataFrame:
    import pandas as pd
    if "CUPTI_ACTIVITY_KIND_RUNTIME" not in NS.table_names(con):
        return empty(API_COLUMNS + ["correlation"])
    cols = NS.column_names(con, "CUPTI_ACTIVITY_KIND_RUNTIME")
    name = NS.pick(cols, "nameId", "name")
    corr = NS.pick(cols, "correlationId", "correlation")
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
    if "CUPTI_ACTIVITY_KIND_KERNEL" not in NS.table_names(con):
        return empty(KERNEL_COLUMNS + CONFIG_COLUMNS)
    cols = NS.column_names(con, "CUPTI_ACTIVITY_KIND_KERNEL")
    name = NS.pick(cols, "shortName", "demangledName", "mangledName", "name")
    corr = NS.pick(cols, "correlationId", "correlation")
    if not name or not corr:
        raise ReportError(f"CUPTI_ACTIVITY_KIND_KERNEL lacks a name or correlationId column (columns: {sorted(cols)})")
    full = NS.pick(cols, "demangledName", "mangledName") or name
    stream = "streamId" if "streamId" in cols else "0"
    config = "".join(f", {e} AS {c}" for e, c in zip(NS.config_sql(cols), CONFIG_COLUMNS))
    k = pd.read_sql_query(f"SELECT start, end, {name} AS name, {full} AS full_name, {corr} AS correlation, "
                          f"{stream} AS stream{config} FROM CUPTI_ACTIVITY_KIND_KERNEL", con)
    for c in ("name", "full_name"):
        if pd.api.types.is_integer_dtype(k[c]):
            k[c] = k[c].map(strings).fillna("")
    k = k.astype({c: "int64" for c in CONFIG_COLUMNS})
    k = join_launches(k, api)
    return k[KERNEL_COLUMNS + CONFIG_COLUMNS].sort_values("start", ignore_index=True)


class Report:
    """An nsys export opened for streaming (module doc): range_table (the ranges;
    ranges: as a DataFrame of Trace.ranges' columns, made on first use), device, tool_version, gpu and gpus (Trace.gpus) are read at open; kernels and launch
    calls stay in the file until kernel_chunks() / launch_chunks() stream them."""
    backend = "nsys"

    def __init__(self, path: str):
        con = NS.open_report(path)
        try:
            tables = NS.table_names(con)
            self.source = path
            self.range_table = NS.nvtx_ranges(con, NS.string_ids(con))
            self._runtime = self._kernel = None
            if NS.RUNTIME_TABLE in tables:
                cols = NS.column_names(con, NS.RUNTIME_TABLE)
                name, corr = NS.pick(cols, "nameId", "name"), NS.pick(cols, "correlationId", "correlation")
                if not name or not corr:
                    raise ReportError(f"{NS.RUNTIME_TABLE} lacks nameId/correlationId (columns: {sorted(cols)})")
                launch, twice, ids = self._launch_api(con, name)
                self._runtime = {"name": name, "corr": corr, "launch": launch, "twice": twice, "launch_ids": ids}
            if NS.KERNEL_TABLE in tables:
                cols = NS.column_names(con, NS.KERNEL_TABLE)
                name = NS.pick(cols, "shortName", "demangledName", "mangledName", "name")
                corr = NS.pick(cols, "correlationId", "correlation")
                if not name or not corr:
                    raise ReportError(f"{NS.KERNEL_TABLE} lacks a name or correlationId column "
                                      f"(columns: {sorted(cols)})")
                types = {r[1]: (r[2] or "").upper() for r in con.execute(f"PRAGMA table_info({NS.KERNEL_TABLE})")}
                full = NS.pick(cols, "demangledName", "mangledName") or name
                self._kernel = {"name": name, "full": full, "corr": corr, "config": NS.config_sql(cols, "k."),
                                "ids": types[name].startswith("INT") and types[full].startswith("INT")}
            has_calls = self._runtime is not None and con.execute(
                f"SELECT EXISTS (SELECT 1 FROM {NS.RUNTIME_TABLE})").fetchone()[0]
            self.notes = NS.complete(con, tables, self._runtime and self._runtime["launch"])
            self.device = "cuda" if has_calls else "cpu"
            self.tool_version = NS.meta(con).get("EXPORT_PRODUCT_VERSION")
            self.gpu = NS.gpu_name(con)
            self.gpus = NS.gpu_limits(con)
        except ReportError as e:
            raise ReportError(f"{path}: {e}") from None
        except sqlite3.DatabaseError as e:
            raise NS.unreadable(path, e) from None
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
                if "StringIds" in NS.table_names(con) else []
            cond = f"nameId IN ({','.join(str(i) for i, _ in pairs)})"
            names, ids = [v for _, v in pairs], [i for i, _ in pairs]
        else:
            names = [v for (v,) in con.execute(f"SELECT DISTINCT name FROM {NS.RUNTIME_TABLE}")
                     if LAUNCH_API.match(v or "")]
            cond = "name IN ({})".format(",".join("'" + v.replace("'", "''") + "'" for v in names))
            ids = None
        return cond, len({VERSION.sub("", v) for v in names}) < len(set(names)), ids

    def _stream(self, setup: list[str], query: str, names: bool, chunk: int | None):
        con = NS.open_report(self.source)
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
            raise NS.unreadable(self.source, e) from None
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
                                 f"FROM {NS.KERNEL_TABLE} k ORDER BY k.start, k.end",
                    nsys_arrow.first_launches(self._launch_calls()), chunk or CHUNK)
            except Exception as e:      # the driver's own errors: a file SQLite cannot read
                raise NS.unreadable(self.source, e) from None
            return
        setup = ["CREATE TEMP TABLE fl_launch (corr INTEGER PRIMARY KEY, ls INTEGER, le INTEGER, tid INTEGER)",
                 f"INSERT OR IGNORE INTO temp.fl_launch SELECT {r['corr']}, start, end, coalesce(globalTid, 0) "
                 f"FROM {NS.RUNTIME_TABLE} WHERE {r['corr']} IS NOT NULL AND {r['launch']} ORDER BY rowid"]
        yield from self._stream(setup, f"SELECT k.start, k.end, l.ls, l.le, l.tid{extra} FROM {NS.KERNEL_TABLE} k "
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
                                 f"coalesce(globalTid, 0) FROM {NS.RUNTIME_TABLE} WHERE {r['launch']} ORDER BY rowid",
                    CHUNK * 4)
            except Exception as e:
                raise NS.unreadable(self.source, e) from None
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
        once = (f" AND ({r['corr']} IS NULL OR rowid IN (SELECT min(rowid) FROM {NS.RUNTIME_TABLE} WHERE {r['launch']} "
                f"GROUP BY {r['corr']}))") if r["twice"] else ""
        yield from self._stream([], f"SELECT start, end, coalesce(globalTid, 0) FROM {NS.RUNTIME_TABLE} "
                                    f"WHERE {r['launch']}{once}", False, chunk)

    def strings(self, ids) -> dict[int, str]:
        """The kernel names of name ids from kernel_chunks(names=True) ("" where unknown)."""
        ids = sorted({int(i) for i in ids})
        if self._kernel is not None and not self._kernel["ids"]:
            back = {v: k for k, v in self._names.items()}
            return {i: back.get(i) or "" for i in ids}
        con = NS.open_report(self.source)
        try:
            out = {}
            for n in range(0, len(ids), 500):
                part = ids[n:n + 500]
                out.update(con.execute(f"SELECT id, value FROM StringIds WHERE id IN ({','.join('?' * len(part))})",
                                       part).fetchall())
        except sqlite3.DatabaseError as e:
            raise NS.unreadable(self.source, e) from None
        finally:
            con.close()
        return {i: out.get(i) or "" for i in ids}


def scan(path: str) -> Report:
    """Open an nsys SQLite export for streaming analysis; ReportError (one line) if it cannot be."""
    return Report(path)


def load(path: str) -> Trace:
    """Load an nsys SQLite export into a Trace; ReportError (one line) if it cannot be."""
    con = NS.open_report(path)
    try:
        strings = NS.string_ids(con)
        tables = NS.table_names(con)
        if NS.RUNTIME_TABLE in tables:
            cols = NS.column_names(con, NS.RUNTIME_TABLE)
            NS.complete(con, tables, Report._launch_filter(con, NS.pick(cols, "nameId", "name") or "name"))
        else:
            NS.complete(con, tables, None)
        ranges = NS.nvtx_ranges(con, strings).frame()
        api = _api(con, strings)
        kernels = _kernels(con, strings, api)
        m = NS.meta(con)
        gpu = NS.gpu_name(con)
        gpus = NS.gpu_limits(con)
    except ReportError as e:
        raise ReportError(f"{path}: {e}") from None
    except sqlite3.DatabaseError as e:
        raise NS.unreadable(path, e) from None
    except Exception as e:
        import pandas as pd
        if not isinstance(e, pd.errors.DatabaseError):
            raise
        raise NS.unreadable(path, e) from None
    finally:
        con.close()
    return Trace(source=path, backend="nsys", device="cuda" if len(kernels) or len(api) else "cpu",
                 ranges=ranges, api=api[API_COLUMNS], kernels=kernels,
                 tool_version=m.get("EXPORT_PRODUCT_VERSION"), gpu=gpu, gpus=gpus)
