"""The fusion ledger of a sweep: analysis.run.ledger over every compiled configuration.

- fusion_ledger.csv: one row per generated kernel of each compiled run (its first repeat),
  keyed by the run's ID columns; eager matched in the eager run of the same configuration
  (same repeat where there is one).
- missed_fusions.csv: the kernel pairs each compiled run left apart and its graph breaks,
  time_cost_us at the measured copy bandwidth (device/peaks.json copy_bandwidth_Bps;
  bandwidth_source says which, NaN where there is none: the rows then rank by bytes).

Provenance comes from the run's inductor/ folder (runner.introspect.CompileLogs) or its
compile_debug/ folder; a run with neither has no ledger rows (fusion_source in runs.csv
says `name`), only kernel-name parsing in the fusion map.
"""
from __future__ import annotations

import os

import pandas as pd

from fusionlab.analysis.readers import inductor_logs
from fusionlab.analysis.run import ledger as run_ledger
from fusionlab.analysis.run.run_metrics import debug_dir
from fusionlab.analysis.sweep.tables import ID, read_json

CONFIG = [c for c in ID if c not in ("variant", "repeat")]


def _key(row: dict, cols) -> tuple:
    return tuple(str(row.get(c)) for c in cols)


def _bandwidth(peaks: dict | None) -> tuple[float | None, str]:
    bw = (peaks or {}).get("copy_bandwidth_Bps")
    return (float(bw), "measured copy bandwidth") if bw else (None, "none")


def build(metric_files, kernels: pd.DataFrame, peaks: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(fusion ledger, missed fusions) of the runs whose metrics.json are metric_files,
    their kernels from the sweep's kernels table (module doc)."""
    kernels = kernels if kernels is not None else pd.DataFrame(columns=ID + ["name"])
    rows = [(m, read_json(m) or {}) for m in metric_files]
    id_cols = [c for c in ID if c in kernels]

    def kernels_of(row):
        return _lookup(kernels, row, id_cols)

    eager = {}
    for _, row in sorted(rows, key=lambda r: str(r[1].get("repeat"))):
        if row.get("variant") == "eager":
            eager.setdefault(_key(row, CONFIG), row)
            eager.setdefault(_key(row, CONFIG + ["repeat"]), row)
    bw, bw_source = _bandwidth(peaks)
    ledgers, missed, seen = [], [], set()
    for m, row in sorted(rows, key=lambda r: str(r[1].get("repeat"))):
        if row.get("variant") == "eager" or row.get("status", "ok") != "ok":
            continue
        if _key(row, CONFIG + ["variant"]) in seen:      # the first repeat of a configuration
            continue
        run_json = os.path.join(os.path.dirname(m), "run.json")
        run = read_json(run_json) or {}
        kept = os.path.join(os.path.dirname(m), "inductor")     # with the fusion log, else compile_debug/
        graphs = inductor_logs.read(kept if os.path.isdir(kept) else debug_dir(run_json, run))
        if not graphs:
            continue
        seen.add(_key(row, CONFIG + ["variant"]))
        e = eager.get(_key(row, CONFIG + ["repeat"])) or eager.get(_key(row, CONFIG))
        k = kernels_of(row)
        ids = {c: row.get(c) for c in ID}
        lg = run_ledger.ledger(k, graphs, kernels_of(e) if e else None)
        ms = run_ledger.missed(k, graphs, bw, (run.get("compile") or {}).get("graph_break_reasons"))
        ms["bandwidth_source"] = bw_source
        for df, out in ((lg, ledgers), (ms, missed)):
            for c in reversed(ID):
                df.insert(0, c, ids[c])
            out.append(df)
    ledger_cols = ID + run_ledger.LEDGER_COLUMNS
    missed_cols = ID + run_ledger.MISSED_COLUMNS + ["bandwidth_source"]
    return (pd.concat(ledgers, ignore_index=True) if ledgers else pd.DataFrame(columns=ledger_cols),
            pd.concat(missed, ignore_index=True) if missed else pd.DataFrame(columns=missed_cols))


def _lookup(kernels: pd.DataFrame, row: dict, cols) -> pd.DataFrame:
    """The kernels table's rows of one run (ID columns compared as text)."""
    if kernels.empty:
        return kernels
    mask = pd.Series(True, index=kernels.index)
    for c in cols:
        mask &= kernels[c].map(_text) == _text(row.get(c))
    return kernels[mask]


def _text(x) -> str:
    """An ID value as text, every missing value alike (None, NaN: 'nan')."""
    return "nan" if x is None or x != x or str(x) in ("None", "<NA>") else str(x)


def write(metric_files, kernels_csv: str, peaks_json: str | None, ledger_csv: str, missed_csv: str) -> None:
    """Snakemake's entry: the two tables from the sweep's files."""
    from fusionlab.analysis.sweep.tables import write as write_csv
    try:
        kernels = pd.read_csv(kernels_csv)
    except (pd.errors.EmptyDataError, FileNotFoundError):
        kernels = None
    peaks = read_json(peaks_json) if peaks_json and os.path.exists(peaks_json) else None
    lg, ms = build(list(metric_files), kernels, peaks)
    write_csv(lg, ledger_csv)
    write_csv(ms, missed_csv)
