"""Every GPU activity of a profile (kernels, memory copies, memsets), one row each, for the
whole-profile breakdowns of analysis.run.whole (HTA's temporal and idle breakdowns read
the same events).

COLUMNS: kind (kernel, memcpy, memset), name (kernels: the short name; else the kind),
start, end (ns), device, stream, launch_start (start of the CUDA API call of the same
correlation id, any call, not only launches: HTA's join; -1 without one), tid (that
call's thread; -1 without one).

- nsys(path): from an nsys SQLite export (CUPTI_ACTIVITY_KIND_KERNEL, _MEMCPY, _MEMSET
  joined to CUPTI_ACTIVITY_KIND_RUNTIME on correlationId). The rows are held in memory
  (about 60 bytes each).
- torch.profiler traces: readers.torch_trace.gpu_ops(path).
"""
from __future__ import annotations

import sqlite3

import pandas as pd

from fusionlab.analysis.readers import nsys_schema as NS
from fusionlab.analysis.readers.trace import ReportError

COLUMNS = ["kind", "name", "start", "end", "device", "stream", "launch_start", "tid"]
TABLES = {"kernel": NS.KERNEL_TABLE, "memcpy": "CUPTI_ACTIVITY_KIND_MEMCPY", "memset": "CUPTI_ACTIVITY_KIND_MEMSET"}


def frame(rows, columns=COLUMNS) -> pd.DataFrame:
    """COLUMNS' frame of rows, sorted by (device, stream, start, end)."""
    df = pd.DataFrame(rows, columns=columns)
    df = df.astype({c: "int64" for c in columns if c not in ("kind", "name")})
    return df.sort_values(["device", "stream", "start", "end"], kind="stable", ignore_index=True)


def nsys(path: str) -> pd.DataFrame:
    """COLUMNS of every GPU activity of an nsys SQLite export (module doc)."""
    con = NS.open_report(path)
    try:
        tables = NS.table_names(con)
        runtime = None
        if NS.RUNTIME_TABLE in tables:
            cols = NS.column_names(con, NS.RUNTIME_TABLE)
            corr = NS.pick(cols, "correlationId", "correlation")
            if corr:
                con.execute("CREATE TEMP TABLE fl_call (corr INTEGER PRIMARY KEY, ls INTEGER, tid INTEGER)")
                con.execute(f"INSERT OR IGNORE INTO temp.fl_call SELECT {corr}, start, coalesce(globalTid, -1) "
                            f"FROM {NS.RUNTIME_TABLE} WHERE {corr} IS NOT NULL ORDER BY rowid")
                runtime = True
        parts = []
        for kind, table in TABLES.items():
            if table not in tables:
                continue
            cols = NS.column_names(con, table)
            corr = NS.pick(cols, "correlationId", "correlation")
            name = "NULL"
            if kind == "kernel":
                name = NS.pick(cols, "shortName", "demangledName", "name") or "NULL"
            dev = "deviceId" if "deviceId" in cols else "0"
            stream = "streamId" if "streamId" in cols else "0"
            join = f"LEFT JOIN temp.fl_call c ON c.corr = t.{corr}" if (runtime and corr) else ""
            sel = "coalesce(c.ls, -1), coalesce(c.tid, -1)" if join else "-1, -1"
            rows = con.execute(f"SELECT t.start, t.end, t.{name} AS name, {dev}, {stream}, {sel} FROM {table} t {join}"
                               if name != "NULL" else
                               f"SELECT t.start, t.end, NULL, {dev}, {stream}, {sel} FROM {table} t {join}").fetchall()
            df = pd.DataFrame(rows, columns=["start", "end", "name", "device", "stream", "launch_start", "tid"])
            if kind == "kernel" and pd.api.types.is_integer_dtype(df["name"]) and len(df):
                strings = NS.string_ids(con)
                df["name"] = df["name"].map(strings).fillna("")
            else:
                df["name"] = df["name"].fillna(kind)
            df.insert(0, "kind", kind)
            parts.append(df)
    except sqlite3.DatabaseError as e:
        raise ReportError(f"{path}: unreadable nsys export ({str(e).splitlines()[0]})") from None
    finally:
        con.close()
    if not parts:
        return frame([], COLUMNS)
    return frame(pd.concat(parts, ignore_index=True)[COLUMNS])
