"""Every figure by name, drawn from the tables the tables rule wrote and saved as PNG and
SVG; every figure is labelled with backend and device.

FIGURES maps a figure name (figures.FIGURES, the one record of each) to (function, scope, category): scope
"model" draws one figure per model (function(tables, model)), scope "sweep" one for the
whole sweep (function(tables, None)). load_tables reads the written tables alone
(tables/*.csv, device/peaks.json) and computes none, so figures regenerate on any machine
from existing results, and a new sweep axis needs no new code."""
from __future__ import annotations

import importlib
import os

import pandas as pd

from fusionlab.analysis.report import captions as report_captions
from fusionlab.analysis.report import figures, style
from fusionlab.analysis.sweep import attribution as sweep_attribution
from fusionlab.analysis.sweep import decompose, gap_ledger, overfusion
from fusionlab.analysis.sweep import headline as sweep_headline
from fusionlab.analysis.sweep import scaling as scaling_law
from fusionlab.core.io import atomic_path, load_json, read_csv

SWEEP = figures.SWEEP


def drawer(record: figures.Figure):
    """The function a figure record names (module:function in report.figures)."""
    module, _, name = record.draws.partition(":")
    return getattr(importlib.import_module(f"fusionlab.analysis.report.figures.{module}"), name)


# name: (function, scope, report category)
FIGURES = {name: (drawer(f), f.scope, f.category) for name, f in figures.FIGURES.items()}
CROSSOVER_COLUMNS = ["model", "variant", "axis", "fixed", "starts_at", "stops_at", "note"]


def _csv(path, columns: list[str]) -> pd.DataFrame:
    """The table at path, or an empty one with these columns where there is none."""
    return read_csv(path) if path and os.path.exists(path) else pd.DataFrame(columns=columns)


def load_tables(runs_csv, speedups_csv, crossover_csv=None, peaks_json=None, scaling_csv=None,
                kernel_resources_csv=None, breakdown_csv=None, headline_csv=None, kernels_csv=None,
                suite_csv=None, gap_ledger_csv=None, attribution_csv=None) -> dict:
    """The tables a figure reads, from the files the tables and headline rules wrote: runs,
    speedups, crossover, scaling (sweep.scaling), kernel_resources (sweep.overfusion),
    breakdown (decompose.wide_from_long of tables/speedup_breakdown.csv), headline
    (sweep.headline), kernels, suite (sweep.suite), gap_ledger (sweep.gap_ledger), attribution
    (sweep.attribution) and peaks
    (device/peaks.json, {} without it); a table whose file is not given is empty."""
    # copy(): one block per dtype (read_csv leaves a wide table in a block per column, and
    # each column a figure adds to it then warns that the frame is fragmented)
    t = {"runs": read_csv(runs_csv).copy(), "speedups": read_csv(speedups_csv)}
    if "variant" in t["runs"]:
        style.use_variants(t["runs"]["variant"].dropna().unique())
    t["headline"] = _csv(headline_csv, sweep_headline.COLUMNS)
    t["kernels"] = _csv(kernels_csv, ["model", "variant", "batch", "size", "repeat", "name", "calls_per_iter",
                                      "time_per_iter_us"])
    t["kernel_resources"] = _csv(kernel_resources_csv, overfusion.COLUMNS)
    t["suite"] = _csv(suite_csv, ["variant", "mode", "dtype"]) if suite_csv and os.path.getsize(suite_csv) > 1 \
        else pd.DataFrame(columns=["variant", "mode", "dtype"])
    t["scaling"] = _csv(scaling_csv, scaling_law.COLUMNS)
    t["crossover"] = _csv(crossover_csv, CROSSOVER_COLUMNS)
    t["breakdown"] = decompose.wide_from_long(_csv(breakdown_csv, []))
    t["gap_ledger"] = _csv(gap_ledger_csv, gap_ledger.COLUMNS)
    t["attribution"] = sweep_attribution.read(attribution_csv)
    t["peaks"] = {}
    if peaks_json and os.path.exists(peaks_json):
        t["peaks"] = load_json(peaks_json)
    return t


def marker(reason: str):
    """The small figure written in place of one with nothing to draw: the reason, no axes."""
    fig = style.plt.figure(figsize=(4.5, 0.5))
    fig.text(0.5, 0.5, "no data: " + reason, ha="center", va="center", fontsize=7, wrap=True)
    style.record(fig, mark="no data", text=reason)   # its data file says so: not a drawn figure's empty one
    return fig


def save(fig, png: str, svg: str | None = None) -> None:
    for path in filter(None, (png, svg)):
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=130)
    style.plt.close(fig)


MARK_COLUMNS = ["figure", "scope", "model", "variant", "batch", "size", "mode", "dtype", "backend", "device",
                "mark", "quantity", "value", "text"]


def write_marks(fig, name: str, scope: str, path: str) -> pd.DataFrame:
    """What each mark of fig shows (style.record), as a table at path: the figure's data,
    which the audit checks against the records."""
    m = pd.DataFrame([{"figure": name, "scope": scope, **r} for r in style.marks(fig)])
    m = m.reindex(columns=MARK_COLUMNS + [c for c in m.columns if c not in MARK_COLUMNS])
    with atomic_path(path) as tmp:
        m.to_csv(tmp, index=False)
    return m


def render(name: str, t: dict, outputs: dict, captions: dict | None = None,
           data: dict | None = None) -> list[str]:
    """Figure name drawn from the tables t (load_tables) for each scope of outputs: scope
    (a model name or SWEEP) -> (png, svg), its caption written to captions[scope] and the
    data of its marks to data[scope] where given. Returns the scopes that had nothing to
    draw (a marker written instead)."""
    fn, scope, _ = FIGURES[name]
    empty = []
    for key, (png, svg) in outputs.items():
        model = None if key == SWEEP else key
        try:
            fig = fn(t, model)
            drawn = style.marks(fig)
            text = report_captions.caption(name, t, model, drawn)
            for m in report_captions.caption_marks(name, t, model, drawn):
                style.record(fig, **m)
        except style.NoData as e:
            fig, text = marker(str(e)), report_captions.safe_text(f"No data: {e}.") + "\n"
            empty.append(key)
        if data and data.get(key):
            write_marks(fig, name, key, data[key])
        save(fig, png, svg)
        if captions and captions.get(key):
            with atomic_path(captions[key]) as tmp, open(tmp, "w") as f:
                f.write(text)
    return empty
