"""The audit of a results folder: every number and verdict a reader sees against the one
record it must come from (tables/headline.csv, one row per configuration and variant).

Checks, each violation printed with the two values that disagree:
- records: the verdict against its interval (faster only above 1, slower only below,
  inconclusive where it holds 1; none without a speedup); eager's time / the variant's
  = the speedup; the parts add up to the time saved and the time saved to eager's time -
  the variant's; the largest part named is of the total's sign, no larger than it, and
  the one sweep.headline.largest picks from the parts (none where they pull both ways);
  a break-even count only for a verdict of faster, and = compile seconds x 1000 / ms
  saved per iteration; the memory term's byte source (measured where both sides have
  Nsight Compute's DRAM bytes in tables/runs.csv, modelled otherwise).
- figures: each mark's value in the data written beside each figure
  (figures/<figure>/<scope>.data.csv: what each bar, tick, point and label shows)
  against the record's; a label's speedup and its inconclusive mark against the record.
- captions: the configurations a caption counts against those its figure draws; the
  speedup it quotes against the record.
- summary.md's opening sentences: each configuration's variant, speedup, interval,
  times, time saved and its largest part against the record, and bold or "beats" only
  for a verdict of faster.
- the bandwidth summary.md says it turned bytes into time with (the memory-traffic part,
  the missed fusions' cost) against the one the records used.
- the suite (tables/suite.csv): each row's geometric mean and pass count recomputed from
  the records, its verdict against its interval, and summary.md's suite table quoting it.
- summary.md's time table: each cell (times, kernel and host time, speedup) against the
  record (audit_times).
Numbers agree within REL (audit_opening.TEXT_REL in text) of the larger; a number
against a missing one (NaN) never agrees; two missing agree (both say there is none).

    fusionlab audit RESULTS        # exit 1 when any check fails
"""
from __future__ import annotations

import glob
import math
import os
import re
import sys
from dataclasses import dataclass, field

import pandas as pd

from fusionlab.analysis.sweep import headline as sweep_headline
from fusionlab.analysis.sweep import suite as sweep_suite
from fusionlab.analysis.sweep import tables
from fusionlab.analysis.report import audit_gap, audit_inputs, audit_match, audit_times, suite_text, text
from fusionlab.analysis.report import audit_opening
from fusionlab.core.io import printable

KEYS = ["model", "variant", "batch", "size", "mode", "dtype", "device"]
REL = audit_match.REL


@dataclass
class Audit:
    checks: int = 0
    violations: list[str] = field(default_factory=list)

    def check(self, ok: bool, where: str, what: str) -> None:
        self.checks += 1
        if not ok:
            self.violations.append(f"{where}: {what}")

    def line(self) -> str:
        if not self.violations:
            return f"audit: {self.checks} checks, no contradiction"
        return f"audit: {len(self.violations)} contradiction(s) in {self.checks} checks"


_close = audit_match.close


def _name(r) -> str:
    size = f" {r['size']}" if str(r.get("size", "default")) != "default" else ""
    return f"{r['model']} {r['variant']} batch {int(r['batch'])}{size} {r.get('mode', '')} {r.get('dtype', '')}".strip()


def _key(r) -> tuple:
    return audit_match.record_key(r, KEYS)


# --- the records -------------------------------------------------------------------

def check_records(a: Audit, h: pd.DataFrame, runs: pd.DataFrame | None = None) -> None:
    measured = {}
    if runs is not None and "dram_bytes_measured" in runs:
        ok = tables.with_size(runs[runs["status"] == "ok"])
        for key, g in ok.groupby(["model", "variant", "batch", "size", "mode", "dtype", "device"], dropna=False):
            measured[_key(dict(zip(KEYS, key)))] = g["dram_bytes_measured"].notna().any()
    for r in h[(h["variant"] != "eager") & h["speedup"].notna()].to_dict("records"):
        where = f"headline.csv {_name(r)}"
        r = {c: math.nan for c in (*sweep_headline.PARTS, "saved_ms", "largest_part_ms", "compile_s")} | r
        want = sweep_headline.verdict(r["speedup"], r["speedup_lo"], r["speedup_hi"])
        a.check(want == r["verdict"], where, f"verdict {r['verdict']!r} but its interval "
                f"[{r['speedup_lo']}, {r['speedup_hi']}] gives {want!r}")
        if pd.notna(r.get("eager_wall_ms")) and pd.notna(r.get("wall_ms")):
            a.check(_close(r["eager_wall_ms"] / r["wall_ms"], r["speedup"]), where,
                    f"eager's time / the variant's = {r['eager_wall_ms'] / r['wall_ms']:.6g}, speedup {r['speedup']:.6g}")
            a.check(_close(r["saved_ms"], r["eager_wall_ms"] - r["wall_ms"]), where,
                    f"saved_ms {r['saved_ms']:.6g} but eager's time - the variant's = "
                    f"{r['eager_wall_ms'] - r['wall_ms']:.6g}")
        if pd.notna(r["saved_ms"]):
            parts = sum(r[p] for p in sweep_headline.PARTS if pd.notna(r[p]))
            if r.get("reference") == sweep_headline.BESIDE_ONLY:   # no eager run of its own: no parts
                a.check(all(pd.isna(r[p]) for p in sweep_headline.PARTS), where,
                        f"parts of the time saved ({parts:.6g} ms) without an eager run of its own")
            else:
                a.check(_close(parts, r["saved_ms"]), where,
                        f"parts add up to {parts:.6g} ms, time saved {r['saved_ms']:.6g} ms")
            if "largest_part" in r:   # a record of a version that names its largest part
                k, v = (r.get("largest_part") if isinstance(r.get("largest_part"), str) else ""), r["largest_part_ms"]
                want, want_ms = sweep_headline.largest({p: r[p] for p in sweep_headline.PARTS}, r["saved_ms"])
                a.check(r.get("reference") == sweep_headline.BESIDE_ONLY or k == want and _close(v, want_ms), where,
                        f"names {k or 'no part'} ({v:.6g} ms) as the largest part; its parts give "
                        f"{want or 'none (they pull both ways)'} ({want_ms:.6g} ms)")
                if k:
                    a.check(v * r["saved_ms"] > 0, where, f"largest part {k} {v:.6g} ms of the other sign than "
                            f"the time saved {r['saved_ms']:.6g} ms")
                    a.check(abs(v) <= abs(r["saved_ms"]) * (1 + 1e-9) and _close(v, r.get(k)), where,
                            f"largest part {k} {v:.6g} ms against the time saved {r['saved_ms']:.6g} ms")
        if pd.notna(r.get("break_even_iters")):
            a.check(r["verdict"] == "faster", where, f"a break-even count {r['break_even_iters']:.4g} with "
                    f"verdict {r['verdict']!r}")
            want = r["compile_s"] * 1e3 / r["saved_ms"]
            a.check(_close(r["break_even_iters"], want), where, f"break-even after {r['break_even_iters']:.6g} "
                    f"iterations, but {r['compile_s']} s / {r['saved_ms']} ms saved per iteration = {want:.6g}")
        src = r.get("traffic_source")
        if measured and isinstance(src, str):
            e = dict(r, variant="eager")
            both = measured.get(_key(r), False) and measured.get(_key(e), False)
            a.check((src == "measured") == bool(both) or src == "none", where,
                    f"memory term from {src} bytes, but Nsight Compute measured "
                    f"{'both sides' if both else 'not both sides'} (tables/runs.csv dram_bytes_measured)")
    for r in h[(h["variant"] != "eager") & h["speedup"].isna()].to_dict("records"):
        said = r.get("verdict")
        a.check(not (isinstance(said, str) and said), f"headline.csv {_name(r)}",
                f"verdict {said!r} without a speedup")
        a.check(pd.isna(r.get("break_even_iters")), f"headline.csv {_name(r)}",
                f"a break-even count {r.get('break_even_iters')} without a speedup")


# --- the figures -------------------------------------------------------------------

SPEEDUP_TEXT = re.compile(r"(-?[0-9.]+)x")


def check_figure(a: Audit, marks: pd.DataFrame, records: dict, where: str) -> set:
    """The marks of one figure against the records; returns the configurations drawn."""
    drawn = set()
    for m in marks.to_dict("records"):
        if m.get("batch") is None or m.get("batch") != m.get("batch"):
            continue
        key = _key(m)
        drawn.add(key[:1] + key[2:])
        r = records.get(key)
        q = m.get("quantity")
        label = f"{where} {m.get('mark')} {_name(m)}"
        if r is None:
            a.check(False, label, "no record of this configuration in headline.csv")
            continue
        if isinstance(q, str) and q in r and q != "verdict" and m.get("value") == m.get("value"):
            a.check(_close(m["value"], r[q]), label, f"draws {q} = {m['value']:.6g}, the record has {r[q]:.6g}")
        label_text = m.get("text")
        if q == "status" and isinstance(label_text, str):
            a.check(label_text == str(r.get("status")), label,
                    f"drawn as {label_text!r}, the record's status is {r.get('status')!r}")
        elif q == "verdict" and isinstance(label_text, str):
            a.check(label_text == r["verdict"], label,
                    f"drawn as {label_text!r}, the record's verdict is {r['verdict']!r}")
        elif q == "speedup" and isinstance(label_text, str):
            found = SPEEDUP_TEXT.search(label_text)
            a.check(found is not None and _close(float(found.group(1)), round(r["speedup"], 2), 0, 0.0051),
                    label, f"label {label_text!r}, the record's speedup {r['speedup']:.4g}")
            a.check((text.HOST_SKEWED in label_text) == text.skewed(r), label,
                    f"label {label_text!r}, the record's host_skewed {r.get('host_skewed')}")
            if "[" in label_text:   # a label with the interval (figures.headline.speedup_label) says inconclusive
                a.check(("inconclusive" in label_text) == (r["verdict"] == "inconclusive"), label,
                        f"label {label_text!r}, the record's verdict {r['verdict']!r}")
        elif isinstance(q, str) and isinstance(label_text, str) and isinstance(r.get(q), str):   # a word: a source
            a.check(label_text == r[q], label, f"drawn as {label_text!r}, the record's {q} is {r[q]!r}")
    return drawn


CONFIGS = re.compile(r"\((\d+) configurations drawn")
BEST = re.compile(r"the highest estimate is (\S+) at batch (\d+)(?:, (\S+) (\S+))?: ([0-9.]+)x")


def check_caption(a: Audit, text: str, drawn: set, h: pd.DataFrame, model: str | None, where: str) -> None:
    found = CONFIGS.search(text)
    if found and drawn:
        a.check(int(found.group(1)) == len(drawn), where,
                f"the caption counts {found.group(1)} configurations, the figure draws {len(drawn)}")
    best = BEST.search(text)
    if best:
        d = h[(h["variant"] == best.group(1)) & (h["batch"] == int(best.group(2)))]
        if model:
            d = d[d["model"] == model]
        if best.group(3):   # the setting, where the figure draws several
            d = d[(d["mode"].astype(str) == best.group(3)) & (d["dtype"].astype(str) == best.group(4))]
        if drawn:           # a configuration the figure draws, not one it leaves out
            d = d[[_key(r)[:1] + _key(r)[2:] in drawn for r in d.to_dict("records")]]
        a.check(any(_close(float(best.group(5)), round(s, 2), 0, 0.0051) for s in d["speedup"].dropna()), where,
                f"quotes {best.group(1)} at batch {best.group(2)} at {best.group(5)}x; the records have "
                f"{', '.join(f'{s:.2f}x' for s in d['speedup'].dropna()) or 'none'}")


# --- a results folder ----------------------------------------------------------------

def check_suite(a: Audit, h: pd.DataFrame, suite: pd.DataFrame, md: str | None) -> None:
    """tables/suite.csv against the records it summarises (module doc)."""
    for r in suite.to_dict("records"):
        where = f"tables/suite.csv {r['variant']} {r['mode']} {r['dtype']}"
        g = h[(h["variant"] == r["variant"]) & (h["mode"] == r["mode"]) & (h["dtype"].astype(str) == str(r["dtype"]))]
        not_run = int(g["status"].eq(sweep_headline.NOT_RUN).sum())
        a.check(int(r.get("n_not_run", not_run)) == not_run, where,
                f"{r.get('n_not_run')} configurations not run but the records have {not_run}")
        g = g[g["status"].ne(sweep_headline.NOT_RUN)]
        ok = g[g["status"].eq("ok") & (pd.to_numeric(g["speedup"], errors="coerce") > 0)]
        gm = math.exp(sum(math.log(v) for v in ok["speedup"]) / len(ok)) if len(ok) else math.nan
        a.check(_close(gm, r["geomean_speedup"]), where, f"geometric mean {r['geomean_speedup']} but the records' is {gm}")
        passed = int(g["status"].eq("ok").sum())
        a.check(int(r["n_pass"]) == passed and int(r["n_configs"]) == len(g)
                and int(r.get("n_compared", len(ok))) == len(ok), where,
                f"{r['n_pass']} of {r['n_configs']} passed ({r.get('n_compared')} compared) but the records have "
                f"{passed} of {len(g)} ({len(ok)} with a speedup)")
        skewed = sweep_suite.host_skewed(ok)
        a.check(int(r.get("n_host_skewed", skewed)) == skewed, where,
                f"{r.get('n_host_skewed')} host-skewed but the records have {skewed}")
        lo, hi = r["geomean_lo"], r["geomean_hi"]
        own = ok[["speedup_lo", "speedup_hi"]].notna().all().all() if len(ok) else False
        want = ("no interval" if pd.isna(lo) or pd.isna(hi) or not own else "faster" if lo > 1
                else "slower" if hi < 1 else "inconclusive")
        a.check(r["verdict"] == want, where, f"verdict {r['verdict']} but its interval [{lo}, {hi}] reads {want}")
        if md and "## The suite" in md:
            line = next((ln for ln in md.split("## The suite", 1)[1].splitlines()
                         if ln.startswith(f"| {r['variant']} | {r['mode']} | {r['dtype']} |")), "")
            quote = f"{r['geomean_speedup']:.2f}x" if pd.notna(r["geomean_speedup"]) else suite_text.NONE_COMPARED
            a.check(quote in line, "summary.md: The suite",
                    f"{r['variant']} {r['mode']} {r['dtype']}: the table does not quote {quote}")


def check_bandwidth(a: Audit, md: str, h: pd.DataFrame, missed: pd.DataFrame | None) -> None:
    """The bandwidth summary.md says it turned bytes into time with, against the one the
    records used: headline's traffic_bandwidth, missed_fusions' bandwidth_source."""
    if "## Where the speedup comes from" in md and "traffic_bandwidth" in h:
        want = f"(bytes removed / {text.traffic_bandwidth_words(h['traffic_bandwidth'])}:"
        a.check(want in md, "summary.md: Where the speedup comes from",
                f"the records' memory traffic used {sorted(set(h['traffic_bandwidth'].dropna().astype(str)))}, "
                f"but the text does not say {want!r}")
    if missed is not None and "bandwidth_source" in missed and "Kernel pairs the compiler left apart" in md:
        apart = missed[missed["kind"] == "left apart"]
        want = text.missed_cost_words(apart["bandwidth_source"])
        a.check(want in md, "summary.md: the fusion ledger",
                f"the missed fusions' bandwidth is {sorted(set(apart['bandwidth_source'].astype(str)))}, but the "
                f"text does not say {want!r}")


def audit(results: str, summary_text: str | None = None) -> Audit:
    """Every check of the module doc on the results folder (summary_text: summary.md's
    text, where it is not yet written)."""
    a = Audit()
    audit_inputs.check(a, results)      # the tables there, none older than its inputs
    h = audit_inputs.read_table(os.path.join(results, "tables", "headline.csv"))
    if h is None:
        a.check(False, results, "no readable tables/headline.csv: nothing to audit against")
        return a
    lacking = [c for c in audit_inputs.HEADLINE_COLUMNS if c not in h]
    if lacking:
        a.check(False, "tables/headline.csv", f"no column {', '.join(lacking)}: the audit reads it")
        return a
    h = tables.with_size(h)
    check_records(a, h, audit_inputs.read_table(os.path.join(results, "tables", "runs.csv")))
    records = {_key(r): r for r in h.to_dict("records")}
    for data in sorted(glob.glob(os.path.join(results, "figures", "*", "*.data.csv"))):
        marks = audit_inputs.read_table(data, a)
        if marks is None:
            continue
        rel = os.path.relpath(data, results)
        drawn = check_figure(a, marks, records, rel)
        rst = data[:-len(".data.csv")] + ".rst"
        caption = audit_inputs.read_text(a, rst)
        if caption is not None:
            scope = os.path.basename(rst)[:-4]
            check_caption(a, caption, drawn, h, None if scope == "all" else scope, os.path.relpath(rst, results))
    __import__("fusionlab.analysis.report.audit_figures", fromlist=["check"]).check(a, results)   # figures' own data
    if summary_text is None:
        summary_text = audit_inputs.read_text(a, os.path.join(results, "summary.md"))
    # tables/gap_ledger.csv: terms add up, sentences quote it, summary.md quotes them
    audit_gap.check(a, results, h, summary_text)
    if summary_text:
        audit_opening.check_opening(a, summary_text, h)
        audit_times.check(a, summary_text, h)   # the time table: each cell against the record
        missed = next((m for m in (audit_inputs.read_table(os.path.join(results, "tables", f"missed_fusions.csv{z}"))
                                   for z in ("", ".gz")) if m is not None), None)
        check_bandwidth(a, summary_text, h, missed)
    suite = audit_inputs.read_table(os.path.join(results, "tables", "suite.csv"))
    if suite is not None and len(suite):
        lacking = [c for c in audit_inputs.SUITE_COLUMNS if c not in suite]
        a.check(not lacking, "tables/suite.csv", f"no column {', '.join(lacking)}: the audit reads it")
        if not lacking:
            check_suite(a, h, suite, summary_text)
    return a


def main(argv=None) -> int:
    """`fusionlab audit RESULTS`: print each violation and the tally; exit 1 on any."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: fusionlab audit RESULTS", file=sys.stderr)
        return 2
    if not os.path.isdir(argv[0]):
        print(f"fusionlab audit: no results folder {argv[0]}", file=sys.stderr)
        return 2
    a = audit(argv[0])
    for v in a.violations:
        print(printable(v))
    print(a.line())
    return 1 if a.violations else 0
