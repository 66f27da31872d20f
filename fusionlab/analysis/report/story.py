"""The story summary.md tells, from the headline table (sweep.headline) alone, so that
every section quotes the same speedup: the opening sentences (best variant per model and
configuration, its speedup, what it comes from), the data-quality banner, the table of
absolute times per model, where the time goes, where the time saved comes from, and the
crossovers."""
from __future__ import annotations

import pandas as pd

from fusionlab.analysis.report.text import (across, drop_constant, fmt_time, iterations, md_table, speedup,
                                            traffic_bandwidth_words, verdict_phrase)
from fusionlab.analysis.sweep import headline as sweep_headline
from fusionlab.analysis.sweep import tables

PARTS = {"host_saved_ms": "exposed host time", "traffic_ms": "memory traffic removed",
         "kernels_saved_ms": "other kernel time", "host_speed_ms": "host-speed difference between processes",
         "remainder_ms": "remainder"}
CPU_PARTS = {"host_saved_ms": "time outside operators", "traffic_ms": "memory traffic removed",
             "kernels_saved_ms": "other operator time", "host_speed_ms": "host-speed difference between processes",
             "remainder_ms": "remainder"}
SUB = "  - "   # a sub-bullet of the opening: one configuration of the model above


def part_names(r) -> dict:
    """The parts' names in the device's words (CPU: operators, not kernels)."""
    return CPU_PARTS if r.get("device") == "cpu" else PARTS


def where(r, varying: list[str]) -> str:
    """'batch 64' (+ the size label and any other axis that varies in the sweep)."""
    parts = [f"batch {int(r['batch'])}"]
    parts += [str(r[k]) if k == "size" else f"{k}={r[k]}" for k in varying if k not in ("model", "batch")]
    return ", ".join(parts)


def _varying(h: pd.DataFrame) -> list[str]:
    return [k for k in tables.GROUP if k in h and k not in ("model", "batch") and h[k].nunique(dropna=False) > 1]


UNSPLIT = "not split into parts: eager has no run of its own"   # a paired speedup without eager's own run


def comes_from(r) -> str:
    """The time saved (or added) and its largest part, from the record (largest_part: of
    the total's sign and no larger than it; where the parts pull both ways, the largest
    part each way, each said saved or added)."""
    saved = r.get("saved_ms")
    if saved is None or saved != saved:
        return ""
    verb = "saved" if saved >= 0 else "added"
    head = f"{fmt_time(abs(saved))} per iteration {verb}"
    if r.get("reference") == sweep_headline.BESIDE_ONLY:
        return f"{head} ({UNSPLIT})"
    k = r.get("largest_part")
    if isinstance(k, str) and k:
        source = f", {r['traffic_source']}" if k == "traffic_ms" and r.get("traffic_source") else ""
        return f"{head}, the largest part {part_names(r)[k]} ({fmt_time(abs(r['largest_part_ms']))}{source})"
    names = part_names(r)
    known = [(k, r[k]) for k in PARTS if r.get(k) == r.get(k) and r[k] != 0]
    big = [max(side, key=lambda kv: abs(kv[1])) for side in ([kv for kv in known if kv[1] > 0],
                                                             [kv for kv in known if kv[1] < 0]) if side]
    parts = ", ".join(f"{_source(r, k)}{names[k]} {'saved' if v >= 0 else 'added'} {fmt_time(abs(v))}"
                      for k, v in big)
    return f"{head}, from parts that pull both ways ({parts})" if parts else head


def _source(r, k: str) -> str:
    """'measured ' or 'modelled ' before the memory-traffic part (its bytes' source), else ''."""
    src = r.get("traffic_source")
    return f"{src} " if k == "traffic_ms" and src in ("measured", "modelled") else ""


def _reference(r) -> str:
    if r.get("eager_wall_ms") != r.get("eager_wall_ms"):
        return "no eager run"
    return " timed beside it" if r.get("estimator") == "paired" else " in its own processes"


HIGHER = "a higher estimate, without that verdict:"   # opening_md: a faster variant's higher-estimate rival


HOST_BOUND = "host-bound"   # host_bound_words' mark, which the audit reads
GPU_BOUND = "GPU-bound"     # its mark beside an inconclusive GPU-bound speedup


def host_bound_words(r) -> str:
    """Beside a host-bound configuration's wall-time speedup (headline.host_bound): that it
    is the host's, and the kernel-time speedup. Beside a GPU-bound one whose interval holds
    1: the kernel-time speedup, the wall time's other witness (GPU_BOUND)."""
    if pd.isna(r.get("kernel_speedup")):
        return ""
    if str(r.get("host_bound")) == "True":
        return (f" ({HOST_BOUND}: exposed host time over half the wall time, the wall speedup is the host's, "
                f"kernel time {r['kernel_speedup']:.2f}x)")
    if str(r.get("host_bound")) == "False" and r.get("verdict") == "inconclusive":
        return f" ({GPU_BOUND}: kernel time {r['kernel_speedup']:.2f}x)"
    return ""


def opening_md(h: pd.DataFrame) -> list[str]:
    """A few sentences a reader can quote: per model and configuration, the variant with
    the highest speedup (of those whose verdict is faster, where there are some), what its
    interval lets one say (text.verdict_phrase), its time against the eager time its
    speedup uses, and where the time saved comes from; then a higher estimate without that
    verdict, where there is one (HIGHER). Bold only for a variant whose verdict is faster.
    One bullet per model; a model with several configurations has one sub-bullet (SUB) each."""
    h = tables.with_size(h)
    if h.empty or not (h["variant"] != "eager").any():
        return ["No variant besides eager ran: there is no speedup to report.", ""]
    varying = _varying(h)
    keys = list(tables.GROUP)
    out = []
    for model, m in h.groupby("model", sort=True):
        others = m[(m["variant"] != "eager") & m["speedup"].notna()]
        if others.empty:
            rest = m[m["variant"] != "eager"]
            waiting = int((rest["status"] == sweep_headline.NOT_RUN).sum()) if "status" in rest else 0
            out.append(f"- **{model}**: no variant besides eager has run yet ({waiting} not run)." if waiting and
                       waiting == len(rest) else f"- **{model}**: no variant besides eager ran ok.")
            continue
        lines = []
        configs = [g for _, g in others.groupby(keys, dropna=False, sort=False)]
        for g in sorted(configs, key=lambda g: (g["size"].iloc[0], g["batch"].iloc[0])):
            top, faster = g.loc[g["speedup"].idxmax()], g[g["verdict"] == "faster"]
            r = faster.loc[faster["speedup"].idxmax()] if len(faster) else top
            name = f"**{r['variant']}**" if r["verdict"] == "faster" else r["variant"]
            lead = {"slower": "no variant beats eager", "inconclusive": "no variant is decisively faster",
                    "1 repeat": "no verdict from one repeat"}.get(r["verdict"], "no verdict")
            who = (f"{name} {verdict_phrase(r)}" if r["verdict"] == "faster" else
                   f"{lead}; the highest estimate, {name}" if r["verdict"] == "1 repeat" else
                   f"{lead}; the highest estimate, {name}, {verdict_phrase(r)}")
            why = comes_from(r)
            higher = f"; {HIGHER} {top['variant']} {speedup(top)}" if top["variant"] != r["variant"] else ""
            lines.append(f"at {where(r, varying)}: {who}: {speedup(r)}{host_bound_words(r)}; "
                         f"{fmt_time(r['wall_ms'])} per iteration "
                         f"against eager's {fmt_time(r['eager_wall_ms'])}{_reference(r)}"
                         + (f"; {why}" if why else "") + higher)
        out += ([f"- **{model}**: {lines[0]}."] if len(lines) == 1 else
                [f"- **{model}**:"] + [f"{SUB}{x}." for x in lines])
    return out + [""]


def banner_md(runs: pd.DataFrame, h: pd.DataFrame, warnings: list[str], audit: list[str] | None = None) -> list[str]:
    """The data-quality banner: what undercuts the headline, one line each (the details
    under 'Data quality' at the end), and the audit's result (report.audit: its tally,
    then each contradiction) where given."""
    lines = list(warnings)
    if audit:
        tally, found = audit[0], audit[1:]
        lines.append(f"The {tally} between the records (`tables/headline.csv`), the figures' data, their captions "
                     f"and these opening sentences (`fusionlab audit`)" + (":" if found else "."))
        lines += [f"  - {v}" for v in found[:10]] + ([f"  - ... {len(found) - 10} more"] if len(found) > 10 else [])
    v = h[(h["variant"] != "eager") & h["speedup"].notna()]
    one = (v["interval"] == "1 repeat").sum() if len(v) else 0
    if one:
        lines.insert(0, f"{one} of {len(v)} speedups rest on 1 repeat: they have no interval; rerun with "
                        "`repeats` of 3 or more before quoting them.")
    short = v["interval"].astype(str).str.startswith("range of").sum() if len(v) else 0
    if short:
        lines.append(f"{short} speedup{'s rest' if short > 1 else ' rests'} on fewer than {sweep_headline.CI_MIN} "
                     f"repeats: {'their' if short > 1 else 'its'} interval is the range of the repeats, not a "
                     "confidence interval.")
    unsure = (v["verdict"] == "inconclusive").sum() if len(v) else 0
    if unsure:
        lines.append(f"{unsure} speedup{'s are' if unsure > 1 else ' is'} inconclusive: "
                     f"{'their' if unsure > 1 else 'its'} interval holds 1.")
    if not lines or (audit and len(lines) == 1 and len(audit) == 1):
        return ["> **Data quality**: no warning: every speedup has an interval, no run was timed on a slow host "
                "or still warming up." + (f" The {lines[0][4:]}" if lines else ""), ""]
    return ["> **Data quality**", ">"] + [f"> - {s}" for s in lines] + [""]


def times_md(h: pd.DataFrame) -> list[str]:
    """Per model: absolute time per iteration of eager and each variant (untraced), split
    into kernel time and exposed host time, with the eager time each variant is compared
    with (the one its speedup uses), the speedup and its interval; eager's own-process
    time and the speedup across processes are labelled diagnostics."""
    cpu = set(h["device"].dropna()) == {"cpu"} if "device" in h else False
    split = ("split into CPU operator time (the traced iterations' outermost operators) and the time outside "
             "operators" if cpu else "split into the time a kernel ran (traced iterations' kernel durations) and "
             "exposed host time (the GPU waiting on the host)")
    out = ["## Time per iteration", "",
           f"Untraced wall time per iteration, {split}. Each variant's row gives the eager time its speedup uses: "
           "eager timed beside it in its own process where the speedup is paired, else eager's median across its "
           "own processes (eager's own row: that median, a diagnostic beside paired speedups). Speedup: paired "
           f"where the variant was paired, with its interval ({sweep_headline.PAIRED_INTERVAL}); the speedup "
           "across processes is a diagnostic. Table: `tables/headline.csv`.", ""]
    h = tables.with_size(h[h["wall_ms"].notna()])
    if h.empty:
        return out + ["No configuration ran ok.", ""]
    varying = _varying(h)
    for model, g in h.groupby("model", sort=True):
        order = {v: i for i, v in enumerate(["eager"] + sorted(set(g["variant"]) - {"eager"}))}
        axes = [k for k in varying if k in g and k not in ("size", "batch")]   # mode, dtype, ...
        g = g.assign(_o=g["variant"].map(order)).sort_values(["size", "batch", *axes, "_o"])
        eager = g["variant"] == "eager"
        t = pd.DataFrame({
            "configuration": [where(r, varying) for _, r in g.iterrows()],
            "variant": g["variant"].where(~eager, "eager (own processes)"),
            "time per iteration": g["wall_ms"].map(fmt_time),
            "operator time" if cpu else "kernel time": g["kernel_ms"].map(fmt_time),
            "outside operators" if cpu else "exposed host time": g["host_ms"].map(fmt_time),
            "compared with eager": [("" if r["variant"] == "eager" else
                                     f"{fmt_time(r['eager_wall_ms'])}{_reference(r)}".strip()) for _, r in g.iterrows()],
            "speedup over eager": [speedup(r) if r["variant"] != "eager" else "" for _, r in g.iterrows()],
            "across processes (diagnostic)": [across(r) for _, r in g.iterrows()]})
        out += [f"### {model}", "", md_table(drop_constant(t, ["variant", "time per iteration",
                                                                "compared with eager", "speedup over eager"])), ""]
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
    """Where the time saved comes from: one sentence per variant configuration, every
    part signed, with its source."""
    cpu = set(h["device"].dropna()) == {"cpu"} if "device" in h else False
    host, kernels = (("time outside operators", "other operator time") if cpu else
                     ("exposed host time", "other kernel time"))
    host_src = ("the time outside the traced operators" if cpu else
                "from the traced host wait less the profiler's cost")
    out = ["## Where the speedup comes from", "",
           "The time saved per iteration (the eager time the speedup uses - the variant's) split into parts "
           f"that add up to it exactly, each signed (negative: the variant adds that much): **{host}** (eager's "
           f"own processes against the variant's, {host_src}), **memory traffic removed** (bytes removed / "
           f"{traffic_bandwidth_words(h.get('traffic_bandwidth', []))}: Nsight Compute's DRAM bytes where both "
           "sides were measured, else the cost "
           f"model's, capped at the {'operator' if cpu else 'kernel'} time saved; the source is named), "
           f"**{kernels}** (the rest of the {'operator' if cpu else 'kernel'} time saved), the **host-speed "
           "difference between processes** (paired speedups: eager timed beside the variant minus eager in its "
           "own processes) and the **remainder**" + ("." if cpu else " (kernel wait, final synchronize).")
           + " Figure `speedup_breakdown`; table `tables/headline.csv`.", ""]
    d = tables.with_size(h[(h["variant"] != "eager") & h["saved_ms"].notna()])
    if d.empty:
        return out + ["No configuration with both eager and a variant ok.", ""]
    varying = _varying(d)
    for model, g in d.groupby("model", sort=True):
        out += [f"### {model}", ""]
        for _, r in g.sort_values(["size", "batch", "variant"]).iterrows():
            names = part_names(r)
            parts = ", ".join(f"{names[k]} {'+' if r[k] >= 0 else '-'}{fmt_time(abs(r[k]))}"
                              + (f" ({r['traffic_source']})" if k == "traffic_ms" else "")
                              for k in PARTS if r.get(k) == r.get(k)) or UNSPLIT
            note = f" {r['traffic_note']}." if isinstance(r.get("traffic_note"), str) and r["traffic_note"] else ""
            out.append(f"- {r['variant']} at {where(r, varying)}: {speedup(r)}; eager{_reference(r)} "
                       f"{fmt_time(r['eager_wall_ms'])} -> {fmt_time(r['wall_ms'])} per iteration, "
                       f"{'saving' if r['saved_ms'] >= 0 else 'adding'} {fmt_time(abs(r['saved_ms']))}: "
                       f"{parts}.{note}")
        out.append("")
    return out


def crossover_md(h: pd.DataFrame) -> list[str]:
    """The crossovers of the headline speedup, as intervals between swept values."""
    c = sweep_headline.crossings(h)
    if c.empty:
        return []
    c = c.assign(fixed=c["fixed"].fillna(""))
    t = pd.DataFrame({"model": c["model"], "variant": c["variant"], "mode": c["mode"], "dtype": c["dtype"],
                      "along": c["axis"], "held at": c["fixed"],
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
                      "break-even iterations": [iterations(x) if x == x else
                                                ("never" if v == "slower" else f"none ({v})" if v else "")
                                                for x, v in zip(d["break_even_iters"], d["verdict"].astype(object).fillna(""))]})
    return ["## Compile cost", "",
            "Compilation latency (first call of the variant - first call of eager, cold compiles) and the "
            "iterations it takes to pay back: latency / time saved per iteration, only where the speedup is "
            "faster by its interval (never: slower; none: no verdict from the interval).", "", md_table(drop_constant(t, ["variant", "compile latency", "break-even iterations"])), ""]


def ceilings_md(h: pd.DataFrame) -> list[str]:
    """The configurations above a measured ceiling, with the reason."""
    d = tables.with_size(h[h["ceiling_note"].astype(object).fillna("").astype(str) != ""])
    if d.empty:
        return []
    varying = _varying(d)
    return ["## Above a measured ceiling", ""] + \
        [f"- {r['model']} {r['variant']} at {where(r, varying)}: {r['ceiling_note']}." for _, r in d.iterrows()] + [""]


GAP_HEADING = "## Why a variant is slower: the gap ledger"


def gap_md(ledger: pd.DataFrame | None) -> list[str]:
    """Each configuration whose variant ran slower than eager timed beside it (its gap
    ledger total above 0): the ledger's sentence as tables/gap_ledger.csv holds it, one
    bullet each ("- **model** variant (batch 16, seq512, inference, bfloat16): ...").
    Nothing where no variant ran slower."""
    if ledger is None or ledger.empty or "term" not in ledger:
        return []
    total = ledger[(ledger["term"] == "total") & (pd.to_numeric(ledger["ms"], errors="coerce") > 0)]
    if total.empty:
        return []
    out = [GAP_HEADING, "",
           "Where a variant ran slower than eager timed beside it, its gap per iteration split into named "
           "terms that add up to it, the largest first, then what is left (`tables/gap_ledger.csv`; each "
           "term's source is in its `source` column).", ""]
    for r in total.sort_values(["model", "variant"], kind="stable").to_dict("records"):
        out.append(f"- **{r['model']}** {r['variant']} ({gap_where(r)}): {r['sentence']}")
    return out + [""]


def gap_where(r) -> str:
    """'batch 16, seq512, inference, bfloat16': a ledger configuration's axes."""
    parts = [f"batch {int(r['batch'])}" if r.get("batch") == r.get("batch") else ""]
    parts += [str(r[k]) for k in ("size", "mode", "dtype") if r.get(k) == r.get(k) and r.get(k) not in ("", "default")]
    return ", ".join(p for p in parts if p)
