"""Reader of nsys SQLite exports, defensive across nsys versions (2022.4 .. 2025.x).

Tables are created lazily (a missing CUPTI table means no such events) and column
names drift between versions, so every table and column is looked up before use.
Kernels are attributed to NVTX ranges through their launching API call, as nsys'
nvtx_gpu_proj_trace does; the join of API call and kernel is cuda_kern_exec's
(correlationId).
"""
from __future__ import annotations

import os
import re
import sqlite3

import pandas as pd

from fusionlab.analysis.trace import (API_COLUMNS, KERNEL_COLUMNS, RANGE_COLUMNS, ReportError,
                            Trace, empty, join_launches)

# NVTX event types (ENUM_NSYS_EVENT_TYPE): push/pop and start/end ranges, domain create
NVTX_PUSHPOP, NVTX_STARTEND, NVTX_DOMAIN_CREATE = 59, 60, 75
# CUDA runtime/driver calls that launch GPU work (names carry _v7000, _ptsz, ... suffixes)
LAUNCH_API = re.compile(r"^cu(da)?(LaunchKernel|LaunchCooperativeKernel|GraphLaunch|LaunchKernelEx)")

SQLITE_MAGIC = b"SQLite format 3\x00"


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
    if os.path.getsize(path) == 0:
        raise ReportError(f"{path}: empty file (the profiled run left no report)")
    with open(path, "rb") as f:
        head = f.read(16)
    if head != SQLITE_MAGIC:
        raise ReportError(f"{path}: not an SQLite file (export .nsys-rep files with `nsys export --type sqlite`)")
    try:
        con = sqlite3.connect(f"file:{os.path.abspath(path)}?mode=ro", uri=True)
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


def _ranges(con, strings) -> pd.DataFrame:
    if "NVTX_EVENTS" not in _tables(con):
        return empty(RANGE_COLUMNS)
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
    return pd.DataFrame(out, columns=RANGE_COLUMNS).astype({"start": "int64", "end": "int64", "tid": "int64"})


def _api(con, strings) -> pd.DataFrame:
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
    return df


def _kernels(con, strings, api: pd.DataFrame) -> pd.DataFrame:
    if "CUPTI_ACTIVITY_KIND_KERNEL" not in _tables(con):
        return empty(KERNEL_COLUMNS)
    cols = _columns(con, "CUPTI_ACTIVITY_KIND_KERNEL")
    name = _pick(cols, "shortName", "demangledName", "mangledName", "name")
    corr = _pick(cols, "correlationId", "correlation")
    if not name or not corr:
        raise ReportError(f"CUPTI_ACTIVITY_KIND_KERNEL lacks a name or correlationId column (columns: {sorted(cols)})")
    full = _pick(cols, "demangledName", "mangledName") or name
    stream = "streamId" if "streamId" in cols else "0"
    k = pd.read_sql_query(f"SELECT start, end, {name} AS name, {full} AS full_name, {corr} AS correlation, "
                          f"{stream} AS stream FROM CUPTI_ACTIVITY_KIND_KERNEL", con)
    for c in ("name", "full_name"):
        if pd.api.types.is_integer_dtype(k[c]):
            k[c] = k[c].map(strings).fillna("")
    k = join_launches(k, api)
    return k[KERNEL_COLUMNS].sort_values("start", ignore_index=True)


def _gpu_name(con) -> str | None:
    if "TARGET_INFO_GPU" in _tables(con):
        cols = _columns(con, "TARGET_INFO_GPU")
        if "name" in cols:
            row = con.execute("SELECT name FROM TARGET_INFO_GPU LIMIT 1").fetchone()
            return row[0] if row else None
    return None


def load(path: str) -> Trace:
    """Load an nsys SQLite export into a Trace; ReportError (one line) if it cannot be."""
    con = open_report(path)
    try:
        strings = _strings(con)
        ranges = _ranges(con, strings)
        api = _api(con, strings)
        kernels = _kernels(con, strings, api)
        m = meta(con)
        gpu = _gpu_name(con)
    except ReportError as e:
        raise ReportError(f"{path}: {e}") from None
    except (sqlite3.DatabaseError, pd.errors.DatabaseError) as e:
        raise ReportError(f"{path}: unreadable nsys export ({str(e).splitlines()[0]})") from None
    finally:
        con.close()
    return Trace(source=path, backend="nsys", device="cuda" if len(kernels) or len(api) else "cpu",
                 ranges=ranges, api=api[API_COLUMNS], kernels=kernels,
                 tool_version=m.get("EXPORT_PRODUCT_VERSION"), gpu=gpu)
