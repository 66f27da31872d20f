"""`nsys stats` to CSV, accepting both the 2022 and the 2023+ report names.

Canonical name -> candidate report names, newest first. The CSVs land in one folder
with canonical names, plus manifest.json saying which report made each (or why none).
"""
from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys

REPORTS = {
    "kern_sum": ("cuda_gpu_kern_sum", "gpukernsum"),
    "api_sum": ("cuda_api_sum", "cudaapisum"),
    "nvtx_sum": ("nvtx_sum", "nvtxsum"),
    "nvtx_kern_sum": ("nvtx_kern_sum", "nvtxkernsum"),
    "kern_exec_sum": ("cuda_kern_exec_sum", "kernexecsum"),
}


def available_reports(nsys: str = "nsys") -> set[str]:
    out = subprocess.run([nsys, "stats", "--help-reports"], capture_output=True, text=True).stdout
    return set(re.findall(r"^\s+([a-z0-9_]+)(?:\[|\s+--)", out, flags=re.M))


def choose(available: set[str]) -> dict[str, str | None]:
    return {canon: next((n for n in names if n in available), None) for canon, names in REPORTS.items()}


def export_stats(sqlite: str, outdir: str, nsys: str = "nsys") -> dict:
    tmp = outdir.rstrip("/") + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    if os.path.getsize(sqlite) == 0:  # the marker of a run nsys wrote no report for
        manifest = {"note": "no report: nsys wrote none for this run (see its run.json)"}
    else:
        manifest = _stats_csvs(sqlite, tmp, nsys)
    with open(os.path.join(tmp, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
    shutil.rmtree(outdir, ignore_errors=True)
    os.replace(tmp, outdir)
    return manifest


def _stats_csvs(sqlite: str, tmp: str, nsys: str) -> dict:
    """Run `nsys stats` into tmp, name the CSVs by their canonical report; the manifest."""
    picked = choose(available_reports(nsys))
    names = [n for n in picked.values() if n]
    proc = subprocess.run([nsys, "stats", "--force-export=false", "-r", ",".join(names), "-f", "csv",
                           "--force-overwrite", "true", "-o", os.path.join(tmp, "stats"), sqlite],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise RuntimeError(f"nsys stats failed on {sqlite} (exit {proc.returncode})")
    manifest = {}
    for canon, name in picked.items():
        if name is None:
            manifest[canon] = {"report": None, "note": "this nsys has no such report"}
            continue
        found = glob.glob(os.path.join(tmp, f"stats_{name}*.csv"))
        if found:
            os.replace(found[0], os.path.join(tmp, f"{canon}.csv"))
            manifest[canon] = {"report": name, "file": f"{canon}.csv"}
            if os.path.getsize(os.path.join(tmp, f"{canon}.csv")) == 0:
                manifest[canon]["note"] = "no data of this kind in the report (empty file)"
        else:
            manifest[canon] = {"report": name, "note": "no data of this kind in the report"}
    return manifest
