"""One measured iteration of a run, read from its Nsight Systems SQLite export with plain
SQL: the runner's NVTX `iteration` ranges (inside `measure`), the CUDA runtime calls made
in the chosen iteration (launches among them) and the kernels those calls launched (joined
on correlationId, so a kernel that runs after its iteration's range still belongs to it).

iteration(path, which="median"): the iteration whose duration is the median of the
measured ones ("first": the first), as a dict of numpy-free plain tables (pandas):
  range:    start, end (ns) of its NVTX range
  nvtx:     every NVTX range that overlaps it (text, start, end, thread)
  calls:    runtime calls in it (name, start, end, correlationId)
  kernels:  the kernels those calls launched (name, full_name, start, end, streamId)
  others:   the other kernels that ran in the window from the range's start to the last of
            its kernels' end (start, end): earlier iterations' kernels still running where
            the GPU runs behind the host, so that an idle gap is idle
  n:        the number of measured iterations."""
from __future__ import annotations

import sqlite3

import pandas as pd

ITERATION = "iteration"
MEASURE = "measure"


def _text(con, table: str) -> str:
    """The SQL expression of an NVTX row's text (text or its StringIds entry)."""
    cols = {r[1] for r in con.execute(f"PRAGMA table_info({table})")}
    return "coalesce(e.text, s.value)" if "textId" in cols else "e.text"


def iteration(path: str, which: str = "median") -> dict:
    """The chosen measured iteration of the export at path (module doc); ValueError where
    the export has no NVTX iteration range or no kernel."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        text = _text(con, "NVTX_EVENTS")
        nvtx = pd.read_sql_query(
            f"SELECT {text} AS text, e.start, e.end, e.globalTid AS thread FROM NVTX_EVENTS e "
            "LEFT JOIN StringIds s ON s.id = e.textId WHERE e.end IS NOT NULL", con)
        measure = nvtx[nvtx["text"] == MEASURE]
        its = nvtx[nvtx["text"] == ITERATION].sort_values("start")
        if len(measure):
            m = measure.iloc[0]
            its = its[(its["start"] >= m["start"]) & (its["end"] <= m["end"])]
        if its.empty:
            raise ValueError(f"{path}: no NVTX '{ITERATION}' range (an export of the runner's measured loop)")
        dur = (its["end"] - its["start"]).to_numpy()
        pick = its.iloc[0] if which == "first" else its.iloc[int(abs(dur - pd.Series(dur).median()).argmin())]
        lo, hi = int(pick["start"]), int(pick["end"])
        calls = pd.read_sql_query(
            "SELECT s.value AS name, r.start, r.end, r.correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
            "JOIN StringIds s ON s.id = r.nameId WHERE r.start >= ? AND r.start < ?", con, params=(lo, hi))
        kernels = pd.read_sql_query(
            "SELECT sn.value AS name, dn.value AS full_name, k.start, k.end, k.streamId, k.correlationId "
            "FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds sn ON sn.id = k.shortName "
            "LEFT JOIN StringIds dn ON dn.id = k.demangledName", con)
    finally:
        con.close()
    mine = kernels["correlationId"].isin(set(calls["correlationId"]))
    others = kernels[~mine]
    kernels = kernels[mine].sort_values("start")
    if kernels.empty:
        raise ValueError(f"{path}: no kernel launched in the chosen iteration")
    last = max(hi, int(kernels["end"].max()))
    near = nvtx[(nvtx["end"] > lo) & (nvtx["start"] < last)]
    others = others[(others["end"] > lo) & (others["start"] < last)].sort_values("start")
    return {"range": (lo, hi), "nvtx": near.reset_index(drop=True), "calls": calls.reset_index(drop=True),
            "kernels": kernels.reset_index(drop=True), "others": others[["start", "end"]].reset_index(drop=True),
            "n": len(its)}
