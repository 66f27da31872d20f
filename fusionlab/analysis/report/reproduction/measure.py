"""What a sweep measured for each claim, read from its written outputs only: tables/
runs.csv, speedups.csv, costs.csv, device/peaks.json, the run folders' timing.json
(nsys sweeps), run.json and stats/api_sum.csv, and reproduction/claims.json (the claims
measured in their own configuration, fusionlab.bench.claims).

A claim's configuration is looked up as the text states it; where the sweep has no such
row (a CPU sweep at small sizes), the nearest batch of the same size (by log distance), or
the model's size with the most elements, is picked and the result says so: a proxy.
"""
from __future__ import annotations

import json
import math
import os

import pandas as pd

from fusionlab.core.ratios import median_ratio_ci
from fusionlab.analysis.report.reproduction import verdict as V


class Sweep:
    """The written tables of one sweep."""

    def __init__(self, runs: pd.DataFrame, speedups: pd.DataFrame, costs: pd.DataFrame | None = None,
                 peaks: dict | None = None, runs_root: str | None = None, claims: dict | None = None):
        for df in (runs, speedups):  # tables written before the size axis
            if len(df) and "size" not in df:
                df["size"] = "default"
        self.runs, self.speedups = runs, speedups
        self.costs = costs if costs is not None else pd.DataFrame()
        self.peaks, self.runs_root = peaks or {}, runs_root
        self.claims = (claims or {}).get("claims", {})   # claim id -> one record per process
        self.claims_sha256 = (claims or {}).get("claims_sha256")   # the claims file the processes read
        ok = runs[runs.get("status", pd.Series("ok", index=runs.index)) == "ok"] if len(runs) else runs
        self.device = str(ok["device"].mode().iloc[0]) if len(ok) and "device" in ok else "cpu"

    @classmethod
    def from_files(cls, runs: str, speedups: str, costs: str | None = None, peaks: str | None = None,
                   runs_root: str | None = None, claims: str | None = None) -> "Sweep":
        pk, cl = None, None
        if peaks and os.path.exists(peaks):
            with open(peaks) as f:
                pk = json.load(f)
        if claims and os.path.exists(claims):
            with open(claims) as f:
                cl = json.load(f)
        c = pd.read_csv(costs) if costs and os.path.exists(costs) else None
        return cls(pd.read_csv(runs), pd.read_csv(speedups), c, pk, runs_root, cl)

    def hardware(self) -> str:
        """The GPU's name (peaks.json, else runs.csv), or the CPU's."""
        if self.device == "cuda":
            name = self.peaks.get("name") or _first(self.runs, "gpu")
            return str(name or "GPU")
        return "CPU" + (f" ({_first(self.runs, 'host')})" if _first(self.runs, "host") else "")

    # --- rows --------------------------------------------------------------------------

    def pick(self, model: str, variants: list, batch: int, size: str, mode: str) -> tuple[pd.DataFrame, str]:
        """speedups.csv rows of these variants at the claim's configuration, or the nearest
        one the sweep has (with a note saying which); empty if the model is not swept."""
        sp = self.speedups
        d = sp[(sp["model"] == model) & (sp["mode"] == mode) & sp["variant"].isin(variants)] if len(sp) else sp
        if not len(d):
            return d, ""
        sizes = d["size"].fillna("default").astype(str)
        note = []
        if size not in set(sizes):
            size = _largest_size(set(sizes))
            note.append(f"size {size}")
        d = d[sizes == size]
        batches = sorted(set(d["batch"].astype(int)))
        b = min(batches, key=lambda x: (abs(math.log(x / batch)), -x))
        if b != batch:
            note.append(f"batch {b}")
        d = d[d["batch"].astype(int) == b]
        return d, ("measured at " + ", ".join(note) + " (the sweep's nearest)") if note else ""

    def row(self, d: pd.DataFrame, variant: str) -> pd.Series | None:
        r = d[(d["variant"] == variant) & (d["status"].astype(str).str.contains("ok"))] if len(d) else d
        return r.iloc[0] if len(r) else None

    def status(self, d: pd.DataFrame, variant: str) -> str:
        r = d[d["variant"] == variant] if len(d) else d
        if not len(r):
            return f"{variant} not swept"
        x = r.iloc[0]
        why = x.get("reason")
        return f"{variant}: {x['status']}" + (f" ({why})" if isinstance(why, str) and why else "")

    def speedup(self, d: pd.DataFrame, variant: str) -> tuple:
        """(speedup, lo, hi) of the variant over eager: paired where measured, its CI over
        repeats, else the run's own CI over its timing windows (timing.json / run.json)."""
        r = self.row(d, variant)
        if r is None:
            return None, None, None
        for col in ("speedup_paired", "speedup_wall"):
            v = _f(r.get(col))
            if v is not None:
                lo, hi = _f(r.get(f"{col}_lo")), _f(r.get(f"{col}_hi"))
                if (lo is None or hi is None) and col == "speedup_paired":
                    lo, hi = self._run_ci(r)
                return v, lo, hi
        return None, None, None

    def _run_ci(self, r) -> tuple:
        t = self.timing(r)
        if t and t.get("windows_ms") and t.get("eager_windows_ms"):   # the reported ratio's own CI
            ci = median_ratio_ci(t["windows_ms"], t["eager_windows_ms"])
            return ci if ci else (None, None)
        ci = t.get("paired_speedup_ci") if t else None
        return (ci[0], ci[1]) if ci and len(ci) == 2 and None not in ci else (None, None)

    def run_dir(self, r, repeat: int = 0) -> str | None:
        if not self.runs_root:
            return None
        size = str(r.get("size") or "default")
        sfx = "" if size in ("", "default") else "-" + size
        return os.path.join(self.runs_root, str(r["backend"]), str(r["model"]), str(r["variant"]),
                            f"{r['mode']}_{r['dtype']}", f"bs{int(r['batch'])}{sfx}", f"r{repeat}")

    def timing(self, r) -> dict:
        """The run's untraced timing record: timing.json (nsys sweeps) or run.json's."""
        d = self.run_dir(r)
        for name in ("timing.json", "run.json"):
            p = d and os.path.join(d, name)
            if p and os.path.exists(p):
                with open(p) as f:
                    rec = json.load(f)
                t = rec.get("timing", rec)
                if t:
                    return t
        return {}

    def run_metric(self, r, col: str):
        """A runs.csv column of the run of this speedups.csv row (median over repeats)."""
        m = self.runs
        sel = m[(m["model"] == r["model"]) & (m["variant"] == r["variant"]) & (m["batch"] == r["batch"])
                & (m["size"].fillna("default").astype(str) == str(r.get("size") or "default"))
                & (m["mode"] == r["mode"]) & (m["status"] == "ok")]
        return _f(sel[col].median()) if col in sel and len(sel) else None

    def _runs_of(self, r) -> pd.DataFrame:
        m = self.runs
        if not len(m):
            return m
        return m[(m["model"] == r["model"]) & (m["variant"] == r["variant"]) & (m["batch"] == r["batch"])
                 & (m["size"].fillna("default").astype(str) == str(r.get("size") or "default"))
                 & (m["mode"] == r["mode"]) & (m.get("status", pd.Series("ok", index=m.index)) == "ok")]

    def per_process(self, r, col: str) -> list:
        """A runs.csv column of every process (repeat) of this speedups.csv row."""
        sel = self._runs_of(r)
        return [v for v in (_f(x) for x in sel[col])] if col in sel else []

    def kernel_ms(self, r) -> list:
        """GPU kernel time per iteration of every process (busy time: overlapping kernels
        once; else the summed kernel time)."""
        sel = self._runs_of(r)
        busy = sel["gpu_busy_per_iter_ms"] if "gpu_busy_per_iter_ms" in sel else pd.Series(float("nan"), index=sel.index)
        gpu = sel["gpu_time_per_iter_ms"] if "gpu_time_per_iter_ms" in sel else pd.Series(float("nan"), index=sel.index)
        return [v for v in (_f(x) for x in busy.fillna(gpu)) if v is not None]

    def host_share(self, r) -> float | None:
        """The median share of the untraced wall time that is exposed host time (the GPU
        waiting on the host: analysis.sweep.shares) over this row's processes."""
        from fusionlab.analysis.sweep import shares
        sel = self._runs_of(r)
        if not len(sel) or "wall_time_per_iter_ms" not in sel:
            return None
        return _f(shares.per_run(sel)["host_share"].median())

    def api_share(self, r, name: str = "cudaLaunchKernel") -> float | None:
        """The share of the whole profile's CUDA API time spent in `name` (nsys stats)."""
        d = self.run_dir(r)
        p = d and os.path.join(d, "stats", "api_sum.csv")
        if not p or not os.path.exists(p):
            return None
        a = pd.read_csv(p)
        total = a["Total Time (ns)"].sum()
        return float(a.loc[a["Name"] == name, "Total Time (ns)"].sum() / total) if total else None

    def cost(self, model: str, batch: int, size: str, mode: str) -> pd.Series | None:
        c = self.costs
        if not len(c):
            return None
        sel = c[(c["model"] == model) & (c["batch"] == batch) & (c["mode"] == mode)
                & (c["size"].fillna("default").astype(str) == size)]
        return sel.iloc[0] if len(sel) else None


def _f(x):
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


def _first(df: pd.DataFrame, col: str):
    if col not in df:
        return None
    v = df[col].dropna()
    return v.iloc[0] if len(v) else None


def _elements(label: str) -> float:
    """Relative size of a size label: the product of its values (default: 1)."""
    import re
    nums = [int(n) for n in re.findall(r"(\d+)", label)]
    return math.prod(nums) if nums else 1


def _largest_size(labels: set) -> str:
    return max(sorted(labels), key=_elements)


def ms_spread(timing: dict) -> float:
    """Half the relative range of the run's timing windows, between 0.02 (also when
    unknown) and 0.10: two times closer than that count as tied in an ordering."""
    w = [x for x in (timing or {}).get("windows_ms") or [] if x]
    if len(w) < 2:
        return 0.02
    med = sorted(w)[len(w) // 2]
    return min(0.10, max(0.02, (max(w) - min(w)) / 2 / med))


__all__ = ["Sweep", "ms_spread", "V"]
