"""Every table of a sweep (analysis.sweep.tables' module doc), written from the per-run files."""
from __future__ import annotations

import os

import pandas as pd

from fusionlab.analysis.sweep import decompose, made_from, overfusion, scaling, traffic
from fusionlab.analysis.sweep.tables import (NOISE_CV, crossover, kernels_table, long_table, read_json, runs_table,
                                             speedups)


def build(metric_files, kernel_files, costs_csv, peaks_json, out: dict, noise_cv: float = NOISE_CV,
          ncu_note: str | None = None) -> None:
    """Every table of the sweep; out maps runs, runs_pq, long, long_pq, speedups,
    crossover, kernels (and optionally breakdown: analysis.sweep.decompose; scaling:
    analysis.sweep.scaling; kernel_resources: analysis.sweep.overfusion) to paths. The
    measured traffic (analysis.sweep.traffic) is read from each run folder's traffic.json;
    ncu_note says why runs have none. runs, speedups and kernels are recorded as made from
    metric_files (analysis.sweep.made_from)."""
    costs = pd.read_csv(costs_csv) if costs_csv and os.path.exists(costs_csv) else None
    peaks = read_json(peaks_json) if peaks_json and os.path.exists(peaks_json) else None
    measured = traffic.traffic_files(metric_files)
    # every table is made before any is written: a failure leaves the last tables whole
    runs = traffic.add_to_runs(runs_table(list(metric_files), costs, peaks), measured, ncu_note)
    sp = traffic.add_to_speedups(speedups(runs, noise_cv), runs)
    kernels = traffic.add_to_kernels(kernels_table(list(zip(metric_files, kernel_files))), measured)
    made = {"runs": runs, "long": long_table(runs), "speedups": sp, "crossover": crossover(sp), "kernels": kernels}
    if out.get("breakdown"):
        made["breakdown"] = decompose.breakdown(runs, sp, peaks)
    if out.get("scaling"):
        made["scaling"] = scaling.table(runs)
    if out.get("kernel_resources"):
        made["kernel_resources"] = overfusion.kernel_resources(kernels, runs)
    parquet = {"runs": out.get("runs_pq"), "long": out.get("long_pq")}
    write_all([(df, out[name], parquet.get(name)) for name, df in made.items()])
    made_from.record([out["runs"], out["speedups"], out["kernels"]], list(metric_files))


def write_all(tables: list[tuple[pd.DataFrame, str, str | None]]) -> None:
    """Each (table, csv path, parquet path or None) written to a temporary name beside its
    path, then all renamed: a table that cannot be written (a value pyarrow refuses, a full
    disk: named) leaves every earlier table as it was."""
    done = []
    try:
        for df, csv, parquet in tables:
            for path, how in ((csv, "csv"), (parquet, "parquet")):
                if not path:
                    continue
                os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
                root, ext = os.path.splitext(path)
                tmp = f"{root}.tmp{os.getpid()}{ext}"
                done.append((tmp, path))
                try:
                    df.to_csv(tmp, index=False) if how == "csv" else df.to_parquet(tmp, index=False)
                except OSError as e:   # a full disk: named, and every table left as it was
                    raise type(e)(e.errno, f"{path}: cannot be written ({e.strerror or e})") from None
        for tmp, path in done:
            os.replace(tmp, path)
    finally:
        for tmp, _ in done:
            if os.path.exists(tmp):
                os.remove(tmp)
