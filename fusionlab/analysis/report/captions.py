"""The caption of each figure in the HTML report: a few sentences about this sweep,
a template per figure filled with the sweep's own numbers (the tables the figure is drawn
from), written as reStructuredText beside the figure."""
from __future__ import annotations

import re

import pandas as pd

from fusionlab.analysis.report import figures
from fusionlab.analysis.report.audit_figures import FORMATS
from fusionlab.analysis.report.text import fmt_time, speedup
from fusionlab.analysis.sweep import headline as sweep_headline
from fusionlab.analysis.sweep import tables

SETUP = "Setup: {setup}."
CAPTION_MAX_CHARS = 20_000
_URI = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):(?=[^\s])")   # scheme:... (a link reStructuredText makes)


def safe_text(text: str) -> str:
    """text as a caption Snakemake's report may render: no Jinja delimiters (braces), no
    reStructuredText markup that reads files, embeds HTML or links (explicit markup `..`
    at a line's start, backquotes, substitutions `|`, backslashes, bare URIs), no control
    characters; letters, numbers and prose punctuation kept. The report reads a results
    folder's caption only where it is unchanged by this (is_safe)."""
    out = text.translate(str.maketrans({"{": "(", "}": ")", "`": "'", "|": "/", "\\": "/"}))
    out = "".join(c for c in out if c in "\n\t" or c.isprintable())
    out = re.sub(r"(?m)^(\s*)\.\.", r"\1. .", out)
    out = _URI.sub(r"\1: ", out)
    return out[:CAPTION_MAX_CHARS]


def is_safe(text: str) -> bool:
    """True for a caption safe_text leaves as it is (what the figure jobs write)."""
    return safe_text(text) == text


def _h(t, model):
    h = t["headline"]
    return h[h["model"] == model] if model else h


DRAWN_KEYS = ("model", "batch", "size", "mode", "dtype")   # a configuration, as a figure's marks name it


def _config_key(r) -> tuple:
    """A row's or a mark's configuration (DRAWN_KEYS) as comparable text (batch as an integer)."""
    def text(k):
        v = r.get(k)
        if v is None or v != v:
            return "default" if k == "size" else ""
        return str(int(float(v))) if k == "batch" else str(v)
    return tuple(text(k) for k in DRAWN_KEYS)


def _best(t, model, drawn=()) -> str:
    """The highest estimate among the configurations the figure draws (drawn: its marks;
    all of the model's where it noted none)."""
    h = _h(t, model)
    shown = {_config_key(m) for m in drawn if m.get("batch") is not None}
    if shown:
        h = h[[_config_key(r) in shown for r in h.to_dict("records")]]
    v = h[(h["variant"] != "eager") & h["speedup"].notna()]
    if v.empty:
        return "no variant besides eager ran ok"
    r = v.loc[v["speedup"].idxmax()]
    several = all(c in v for c in ("mode", "dtype")) and len(v.groupby(["mode", "dtype"])) > 1
    setting = f", {r['mode']} {r['dtype']}" if several else ""   # which of the settings drawn
    return f"the highest estimate is {r['variant']} at batch {r['batch']:g}{setting}: {speedup(r)}"


def _verdicts(t, model) -> str:
    h = _h(t, model)
    v = h[(h["variant"] != "eager") & h["speedup"].notna()]
    counts = v["verdict"].value_counts()
    return ", ".join(f"{n} {k}" for k, n in counts.items()) or "none"


def _setup(t) -> str:
    r = t["runs"]
    parts = []
    for c in ("backend", "device", "gpu"):
        if c in r and r[c].notna().any():
            parts.append(f"{c} {'/'.join(sorted(set(r[c].dropna().astype(str))))}")
    if all(c in r and r[c].notna().any() for c in ("mode", "dtype")):   # a dtype belongs to its mode
        pairs = sorted({f"{m} {d}" for m, d in r[["mode", "dtype"]].dropna().astype(str).itertuples(index=False)})
        parts.append(f"mode and dtype {', '.join(pairs)}")
    else:
        parts += [f"{c} {'/'.join(sorted(set(r[c].dropna().astype(str))))}" for c in ("dtype", "mode")
                  if c in r and r[c].notna().any()]
    return ", ".join(parts)


def drawn_configs(drawn: list[dict]) -> int | None:
    """The configurations a figure's marks show (style.record), None where it noted none."""
    keys = [k for k in tables.GROUP if k != "backend"]
    seen = {tuple(m.get(k) for k in keys) for m in drawn if m.get("batch") is not None}
    return len(seen) if seen else None


def _numbers(name, t, model, drawn=()) -> dict:
    h = _h(t, model)
    ok = h[h["wall_ms"].notna()]
    configs = drawn_configs(list(drawn))
    n = {"model": model or "every model", "best": _best(t, model, drawn), "verdicts": _verdicts(t, model),
         "configs": configs if configs is not None else
         (len(ok.groupby(list(tables.GROUP), dropna=False)) if len(ok) else 0),
         "variants": ", ".join(sorted(set(ok["variant"]))) or "none",
         "host_max": f"{100 * ok['host_share'].max():.0f}%" if ok["host_share"].notna().any() else "n/a",
         "setup": _setup(t), "ci_min": sweep_headline.CI_MIN,
         "split": ("CPU operator time and time outside operators" if set(ok.get("device", pd.Series(dtype=str))
                                                                         .dropna()) == {"cpu"}
                   else "kernel time and exposed host time")}
    quote = _Quote(n)
    if name == "compile_cost":
        c = h[(h["variant"] != "eager") & (h["compile_s"] > 0)]
        n["compile"] = "; ".join(
            f"{v} {quote('compile', 'headline.compile_s', 'min', g['compile_s'].min(), 's', model=model, variant=v)}"
            + ("" if g["compile_s"].nunique() == 1 else
               f" to {quote('compile', 'headline.compile_s', 'max', g['compile_s'].max(), 's', model=model, variant=v)}")
            for v, g in c.groupby("variant")) or "none measured"
        be = c[c["break_even_iters"] > 0]
        n["even"] = "; ".join(
            f"{v} {quote('even', 'headline.break_even_iters', 'min', g['break_even_iters'].min(), 'iterations', model=model, variant=v)}"
            f" to {quote('even', 'headline.break_even_iters', 'max', g['break_even_iters'].max(), 'iterations', model=model, variant=v)}"
            " iterations" for v, g in be.groupby("variant")) or "none: no variant is faster by its interval"
    if name in ("launch_overhead", "idle_breakdown") and ok["host_share"].notna().any():
        n["host_max"] = quote("host_max", "headline.host_share", "max", ok["host_share"].max(), "share", model=model)
    if name == "profiler_overhead":
        r = t["runs"]
        p = r.loc[r["status"] == "ok", "profiler_overhead"].dropna() if "profiler_overhead" in r else pd.Series(dtype=float)
        n["prof"] = (f"{quote('prof', 'runs.profiler_overhead', 'min', p.min(), 'x2f')} to "
                     f"{quote('prof', 'runs.profiler_overhead', 'max', p.max(), 'x2f')}") if len(p) else "n/a"
    if name == "roofline":
        notes = h["ceiling_note"].astype("string").fillna("") if "ceiling_note" in h else pd.Series(dtype=str)
        k = int((notes != "").sum())
        n["above"] = (f"{quote('above', 'headline.ceiling_note', 'count', k, 'g')} configuration(s) lie above a "
                      "measured roof (ringed red, reason written in the plot)") if k else \
            "no configuration lies above a measured roof"
    if name in ("kernels_per_iter", "kernel_durations"):
        n["kernels"] = _kernels_drawn(drawn) or "none counted"
    n["_marks"] = quote.marks
    return n


class _Quote:
    """A caption number written as its label format (audit_figures.FORMATS) and noted as
    a caption mark: the quantity and aggregate of the records it quotes."""

    def __init__(self, n):
        self.marks = []

    def __call__(self, what, quantity, agg, value, fmt, model=None, **keys):
        text = FORMATS[fmt](float(value))
        self.marks.append({"mark": "caption", "model": model, **keys, "quantity": quantity, "agg": agg,
                           "value": float(value), "text": text, "fmt": fmt, "label": what})
        return text


def _kernels_drawn(drawn) -> str:
    """The kernels per iteration the figure draws (its marks of quantity
    kernels_per_iter), per variant: 'eager 14, compile 3' at one configuration, 'eager 13
    to 14' across several."""
    got: dict = {}
    for m in drawn:
        if m.get("quantity") == "kernels_per_iter" and m.get("value") == m.get("value"):
            got.setdefault(m.get("variant"), []).append(float(m["value"]))
    return ", ".join(f"{v} {min(x):g}" + ("" if min(x) == max(x) else f" to {max(x):g}") for v, x in got.items())


TEMPLATES = {name: f.caption for name, f in figures.FIGURES.items()}   # one record per figure


def caption(name: str, t: dict, model: str | None, drawn=()) -> str:
    """The caption (reStructuredText) of figure name for model (None: the whole sweep);
    its counts are of what the figure draws (drawn: its style.record marks) where noted."""
    n = _numbers(name, t, model, drawn)
    return safe_text(TEMPLATES[name].format(**n) + " " + SETUP.format(**n)) + "\n"


def caption_marks(name: str, t: dict, model: str | None, drawn=()) -> list[dict]:
    """The numbers caption() quotes, as marks (mark "caption": the text, its value and the
    records it comes from), for the figure's data file and the audit."""
    return _numbers(name, t, model, drawn)["_marks"]
