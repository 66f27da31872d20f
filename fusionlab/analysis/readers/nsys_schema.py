"""An nsys SQLite export's tables and facts, read defensively across nsys versions
(2022.4 .. 2025.x): tables are created lazily (a missing CUPTI table means no such
events) and column names drift between versions, so every table and column is looked up
before use (table_names, column_names, pick). open_report opens an export read-only or
refuses it in one line; meta, string_ids and nvtx_ranges read its metadata, string table
and NVTX ranges; complete says whether it holds its GPU activity whole.

Each kernel launch's configuration (trace.CONFIG_COLUMNS: registers, shared memory, local
memory per thread, block and grid sizes) is read from the kernel table's columns where
the export has them (config_sql; a column an older nsys does not write reads as
trace.NO_VALUE), and each GPU's name and limits from TARGET_INFO_GPU (gpu_name,
gpu_limits), for analysis.run.occupancy. readers.nsys_sqlite reads the export's kernels
and launch calls through them."""
from __future__ import annotations

import os
import sqlite3
import stat

from fusionlab.analysis.readers import sqlite_pages
from fusionlab.analysis.readers.trace import CONFIG_COLUMNS, DEVICE_FIELDS, NO_VALUE, RangeTable, ReportError

# NVTX event types (ENUM_NSYS_EVENT_TYPE): push/pop and start/end ranges, domain create
NVTX_PUSHPOP, NVTX_STARTEND, NVTX_DOMAIN_CREATE = 59, 60, 75
SQLITE_MAGIC = b"SQLite format 3\x00"
MAX_BYTES = int(os.environ.get("FUSIONLAB_MAX_SQLITE_BYTES") or 256 << 30)   # an export's size, at most
KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
# trace.CONFIG_COLUMNS from the kernel table's columns (their product where several)
CONFIG_SOURCES = {"device_id": ("deviceId",), "registers_per_thread": ("registersPerThread",),
                  "static_smem_bytes": ("staticSharedMemory",), "dynamic_smem_bytes": ("dynamicSharedMemory",),
                  "local_mem_per_thread_bytes": ("localMemoryPerThread",),
                  "block_threads": ("blockX", "blockY", "blockZ"), "grid_blocks": ("gridX", "gridY", "gridZ")}


def table_names(con) -> set[str]:
    """The export's tables and views."""
    return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table','view')")}


def column_names(con, table: str) -> set[str]:
    """A table's columns."""
    return {r[1] for r in con.execute(f"PRAGMA table_info({table})")}


def pick(cols: set[str], *names: str) -> str | None:
    """The first of names that is one of cols (a column under the names nsys gave it), or None."""
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
        tables = table_names(con)
    except sqlite3.DatabaseError as e:
        raise ReportError(f"{path}: corrupt SQLite file ({e})") from None
    if "StringIds" not in tables and "NVTX_EVENTS" not in tables and not any(t.startswith("CUPTI_") for t in tables):
        con.close()
        raise ReportError(f"{path}: not an nsys export (no StringIds, NVTX_EVENTS or CUPTI_* tables)")
    return con


def meta(con) -> dict:
    for t in ("EXPORT_META_DATA", "META_DATA_EXPORT"):
        if t in table_names(con):
            try:
                return dict(con.execute(f"SELECT name, value FROM {t}").fetchall())
            except sqlite3.DatabaseError:
                return {}
    return {}


def string_ids(con) -> dict[int, str]:
    """The string table: id -> text ({} without StringIds)."""
    if "StringIds" not in table_names(con):
        return {}
    return dict(con.execute("SELECT id, value FROM StringIds").fetchall())


def nvtx_ranges(con, strings) -> RangeTable:
    if "NVTX_EVENTS" not in table_names(con):
        return RangeTable([], [], [], [], [])
    cols = column_names(con, "NVTX_EVENTS")
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
    if "TARGET_INFO_GPU" not in table_names(con):
        return {}
    cols = column_names(con, "TARGET_INFO_GPU")
    if "id" not in cols:
        return {}
    fields = [f for f in DEVICE_FIELDS if f in cols]
    rows = con.execute(f"SELECT id{''.join(', ' + f for f in fields)} FROM TARGET_INFO_GPU ORDER BY rowid").fetchall()
    out: dict[int, dict] = {}
    for r in rows:
        if r[0] is not None:
            out.setdefault(int(r[0]), dict(zip(fields, r[1:])))
    return out


def gpu_name(con) -> str | None:
    if "TARGET_INFO_GPU" in table_names(con):
        cols = column_names(con, "TARGET_INFO_GPU")
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


def unreadable(path: str, e: Exception) -> ReportError:
    """The one-line ReportError of an export that SQLite (or the driver) cannot read."""
    return ReportError(f"{path}: unreadable nsys export ({str(e).splitlines()[0]})")
