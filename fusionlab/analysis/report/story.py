"""The story summary.md tells, from the headline table (sweep.headline) alone, so that
every section quotes the same speedup: the opening sentences (best variant per model and
configuration, its speedup, what it comes from), the data-quality banner, the table of
absolute times per model, where the time goes, where the time saved comes from, and the
crossovers."""
from __future__ import annotations

import pandas as pd

from fusionlab.analysis.report.text import across, drop_constant, fmt_time, iterations, md_table, speedup
from fusionlab.analysis.sweep import headline as sweep_headline
from fusionlab.analysis.sweep import tables

PARTS = {"host_saved_ms": "exposed host time", "traffic_ms": "memory traffic removed",
         "kernels_saved_ms": "other kernel time", "remainder_ms": "remainder"}


def where(r, varying: list[str]) -> str:
    """'batch 64' (+ the size label and any other axis that varies in the sweep)."""
    parts = [f"batch {int(r['batch'])}"]
    parts += [str(r[k]) if k == "size" else f"{k}={r[k]}" for k in varying if k not in ("model", "batch")]
    return ", ".join(parts)


def _varying(h: pd.DataFrame) -> list[str]:
    return [k for k in tables.GROUP if k in h and k not in ("model", "batch") and h[k].nunique(dropna=False) > 1]


def comes_from(r) -> str:
    """The largest part of the time saved (or added), in words."""
    saved = r.get("saved_ms")
    if saved is None or saved != saved:
        return ""
    parts = {k: r.get(k) for k in PARTS if r.get(k) == r.get(k)}
    if not parts:
        return ""
    sign = 1 if saved >= 0 else -1
    k = max(parts, key=lambda p: sign * parts[p])
    verb = "saved" if saved >= 0 else "added"
    return (f"{fmt_time(abs(saved))} per iteration {verb}, the largest part {PARTS[k]} "
            f"({fmt_time(abs(parts[k]))})")


def opening_md(h: pd.DataFrame) -> list[str]:
    """A few sentences a reader can quote: per model, the best variant at each
    configuration with its speedup and what it comes from."""
    h = tables.with_size(h)
    if h.empty or not (h["variant"] != "eager").any():
        return ["No variant besides eager ran: there is no speedup to report.", ""]
    varying = _varying(h)
    out = []
    best = sweep_headline.best(h)
    for model, g in best.groupby("model", sort=True):
        others = h[(h["model"] == model) & (h["variant"] != "eager") & h["speedup"].notna()]
        if others.empty:
            out.append(f"- **{model}**: no variant besides eager ran ok.")
            continue
        if (g["variant"] == "eager").all():
            top = others.loc[others["speedup"].idxmax()]
            out.append(f"- **{model}**: no variant beats eager at any swept configuration; the closest is "
                       f"{top['variant']} at {where(top, varying)}: {speedup(top)}, "
                       f"{fmt_time(top['wall_ms'])} per iteration against eager's {fmt_time(top['eager_wall_ms'])}"
                       + (" timed beside it." if top["estimator"] == "paired" else "."))
            continue
        lines = []
        for _, r in g.sort_values(["size", "batch"]).iterrows():
            at = where(r, varying)
            if r["variant"] == "eager":
                lines.append(f"at {at} none beats eager ({fmt_time(r['wall_ms'])} per iteration)")
                continue
            why = comes_from(r)
            beside = " timed beside it" if r["estimator"] == "paired" else ""
            lines.append(f"at {at} **{r['variant']}** is fastest, {speedup(r)}: {fmt_time(r['wall_ms'])} per "
                         f"iteration against eager's {fmt_time(r['eager_wall_ms'])}{beside}"
                         + (f"; {why}" if why else ""))
        out.append(f"- **{model}**: " + "; ".join(lines) + ".")
    return out + [""]


def banner_md(runs: pd.DataFrame, h: pd.DataFrame, warnings: list[str]) -> list[str]:
    """The data-quality banner: what undercuts the headline, one line each (the details
    under 'Data quality' at the end)."""
    lines = list(warnings)
    v = h[(h["variant"] != "eager") & h["speedup"].notna()]
    one = (v["interval"] == "1 repeat").sum() if len(v) else 0
    if one:
        lines.insert(0, f"{one} of {len(v)} speedups rest on 1 repeat: they have no interval; rerun with "
                        "`repeats` of 3 or more before quoting them.")
    short = v["interval"].astype(str).str.startswith("range of").sum() if len(v) else 0
    if short:
        lines.append(f"{short} speedups rest on fewer than {sweep_headline.CI_MIN} repeats: their interval is "
                     "the range of the repeats, not a confidence interval.")
    unsure = (v["verdict"] == "inconclusive").sum() if len(v) else 0
    if unsure:
        lines.append(f"{unsure} speedups are inconclusive: their interval holds 1.")
    if not lines:
        return ["> **Data quality**: no warning: every speedup has an interval, no run was timed on a slow host "
                "or still warming up.", ""]
    return ["> **Data quality**", ">"] + [f"> - {s}" for s in lines] + [""]


def times_md(h: pd.DataFrame) -> list[str]:
    """Per model: absolute time per iteration of eager and each variant (untraced), split
    into kernel time and exposed host time, with the speedup, its interval and the speedup
    across processes beside it."""
    out = ["## Time per iteration", "",
           "Untraced wall time per iteration, split into the time a kernel ran (traced iterations' kernel "
           "durations) and exposed host time (the GPU waiting on the host); on a CPU: operator time and the "
           "time outside operators. Speedup: paired where the variant was paired (eager timed in its own "
           "process), with its interval (a 95% CI from "
           f"{sweep_headline.CI_MIN} or more repeats, else the range of the repeats); the speedup across "
           "processes is a diagnostic. Table: `tables/headline.csv`.", ""]
    h = tables.with_size(h[h["wall_ms"].notna()])
    if h.empty:
        return out + ["No configuration ran ok.", ""]
    varying = _varying(h)
    cpu = set(h["device"].dropna()) == {"cpu"}
    for model, g in h.groupby("model", sort=True):
        order = {v: i for i, v in enumerate(["eager"] + sorted(set(g["variant"]) - {"eager"}))}
        g = g.assign(_o=g["variant"].map(order)).sort_values(["size", "batch", "_o"])
        t = pd.DataFrame({
            "configuration": [where(r, varying) for _, r in g.iterrows()],
            "variant": g["variant"],
            "time per iteration": g["wall_ms"].map(fmt_time),
            "operator time" if cpu else "kernel time": g["kernel_ms"].map(fmt_time),
            "outside operators" if cpu else "exposed host time": g["host_ms"].map(fmt_time),
            "speedup over eager": [speedup(r) if r["variant"] != "eager" else "" for _, r in g.iterrows()],
            "across processes (diagnostic)": [across(r) for _, r in g.iterrows()]})
        out += [f"### {model}", "", md_table(drop_constant(t, ["variant", "time per iteration",
                                                                "speedup over eager"])), ""]
    return out


def shares_md(h: pd.DataFrame) -> list[str]:
    """Where the time goes against the untraced wall time (sweep.shares), traced busy share
    and bound beside as diagnostics."""
    d = tables.with_size(h[h["kernel_share"].notna()])
    if d.empty or set(d["device"].dropna()) == {"cpu"}:
        return []
    varying = _varying(d)
    t = pd.DataFrame({
        "model": d["model"], "configuration": [where(r, varying) for _, r in d.iterrows()], "variant": d["variant"],
        "kernel %": (100 * d["kernel_share"]).round(0), "exposed host %": (100 * d["host_share"]).round(0),
        "kernel wait %": (100 * d["kernel_wait_share"]).round(0), "other idle %": (100 * d["other_share"]).round(0),
        "bound": d["bound"], "host per launch": (d["host_per_launch_us"] / 1e3).map(fmt_time),
        "busy % under tracing": (100 * d["traced_busy_share"]).round(0), "bound under tracing": d["traced_bound"]})
    return ["## Where the time goes (untraced)", "",
            "Shares of the untraced wall time per iteration: kernel time, exposed host time, kernel wait and "
            "other idle (HTA's idle classes, the host wait taken against the untraced wall time); `bound`: host "
            "where exposed host time exceeds kernel time. Tracing inflates host time, so the busy share and "
            "bound under tracing are shown only as diagnostics.", "",
            md_table(drop_constant(t, ["variant", "kernel %", "exposed host %", "bound"])), ""]


def saved_md(h: pd.DataFrame) -> list[str]:
    """Where the time saved comes from: one sentence per variant configuration."""
    out = ["## Where the speedup comes from", "",
           "The time saved per iteration (eager's wall time as the headline speedup sees it - the variant's; "
           "paired: the variant's wall time x the paired speedup) split into parts that add up to it: "
           "**exposed host time** (host and launch time the GPU no longer waits for), **memory traffic "
           "removed** (bytes removed / copy bandwidth, at most the kernel time saved), **other kernel time** "
           "and the **remainder** (kernel wait, final synchronize; with a paired speedup also the host-speed "
           "difference between eager's processes and the variant's). Figure `speedup_breakdown`.", ""]
    d = tables.with_size(h[(h["variant"] != "eager") & h["saved_ms"].notna()])
    if d.empty:
        return out + ["No configuration with both eager and a variant ok.", ""]
    varying = _varying(d)
    for model, g in d.groupby("model", sort=True):
        out += [f"### {model}", ""]
        for _, r in g.sort_values(["size", "batch", "variant"]).iterrows():
            parts = ", ".join(f"{PARTS[k]} {'+' if r[k] >= 0 else '-'}{fmt_time(abs(r[k]))}" for k in PARTS)
            eager = ("eager beside it" if r["estimator"] == "paired" else "eager")
            out.append(f"- {r['variant']} at {where(r, varying)}: {speedup(r)}; {eager} "
                       f"{fmt_time(r['eager_wall_ms'])} -> {fmt_time(r['wall_ms'])} per iteration, "
                       f"{'saving' if r['saved_ms'] >= 0 else 'adding'} {fmt_time(abs(r['saved_ms']))}: {parts}.")
        out.append("")
    return out


def crossover_md(h: pd.DataFrame) -> list[str]:
    """The crossovers of the headline speedup, as intervals between swept values."""
    c = sweep_headline.crossings(h)
    if c.empty:
        return []
    c = c.assign(fixed=c["fixed"].fillna(""))
    t = pd.DataFrame({"model": c["model"], "variant": c["variant"], "along": c["axis"], "held at": c["fixed"],
                      "speedups": [", ".join(f"{a}: {b}x" for a, b in zip(v.split(), s.split()))
                                   for v, s in zip(c["values"], c["speedups"])],
                      "crossover": c["text"]})
    return ["## Crossover: where a variant starts and stops beating eager", "",
            "Along each swept axis with the others held, from the headline speedup: a crossing lies between the "
            "two swept values around it (sweep more values to narrow it).", "",
            md_table(drop_constant(t, ["model", "variant", "crossover"])), ""]


def compile_md(h: pd.DataFrame) -> list[str]:
    """Compile latency and the iterations it takes to pay back."""
    d = tables.with_size(h[(h["variant"] != "eager") & (h["compile_s"] > 0)])
    if d.empty:
        return []
    varying = _varying(d)
    t = pd.DataFrame({"model": d["model"], "configuration": [where(r, varying) for _, r in d.iterrows()],
                      "variant": d["variant"], "compile latency": (d["compile_s"] * 1e3).map(fmt_time),
                      "saved per iteration": d["saved_ms"].map(fmt_time),
                      "break-even iterations": [iterations(x) if x == x else ("never" if s == s and s <= 0 else "")
                                                for x, s in zip(d["break_even_iters"], d["saved_ms"])]})
    return ["## Compile cost", "",
            "Compilation latency (first call of the variant - first call of eager, cold compiles) and the "
            "iterations it takes to pay back: latency / time saved per iteration (never: the variant saves no "
            "time).", "", md_table(drop_constant(t, ["variant", "compile latency", "break-even iterations"])), ""]


def ceilings_md(h: pd.DataFrame) -> list[str]:
    """The configurations above a measured ceiling, with the reason."""
    d = tables.with_size(h[h["ceiling_note"].fillna("").astype(str) != ""])
    if d.empty:
        return []
    varying = _varying(d)
    return ["## Above a measured ceiling", ""] + \
        [f"- {r['model']} {r['variant']} at {where(r, varying)}: {r['ceiling_note']}." for _, r in d.iterrows()] + [""]
