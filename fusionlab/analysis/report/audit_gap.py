"""The gap ledger's audit checks (tables/gap_ledger.csv, sweep.gap_ledger), for
`fusionlab audit` (audit.audit calls check(a, results, h)):

- each configuration's terms and residual add up to its gap;
- the gap is the headline's: wall_ms - eager_wall_ms of the same configuration;
- the ranks are of the gap's sign, by size, and the residual is never ranked;
- the sentence is the one sweep.gap_ledger.sentence writes from the rows (it quotes the
  record: every number in it is a row's, as written);
- summary.md's gap section (story.gap_md) lists every configuration whose gap is above 0
  once, each with its row's sentence as written.
The gap_waterfall figure's bars (quantity gap_ledger.ms, one row by its keys and term) are
audit_figures'."""
from __future__ import annotations

import os

import pandas as pd

from fusionlab.analysis.report import audit_match
from fusionlab.analysis.sweep import gap_ledger, tables
from fusionlab.core.io import read_csv

REL = audit_match.REL


_close = audit_match.close


def _key(r, keys) -> tuple:
    return audit_match.record_key(r, keys)


def _rows(g: pd.DataFrame) -> list[dict]:
    """A configuration's ledger rows as sweep.gap_ledger wrote them (NaN rank: unranked)."""
    return [{**r, "rank": r["rank"] if r["rank"] == r["rank"] else None} for r in g.to_dict("records")]


def check_ledger(a, ledger: pd.DataFrame, h: pd.DataFrame | None) -> None:
    """The ledger's own checks (module doc) against the headline table h."""
    keys = [k for k in gap_ledger.KEYS if k in ledger]
    heads = {_key(r, keys): r for r in tables.with_size(h).to_dict("records")} if h is not None else {}
    for key, g in tables.with_size(ledger).groupby(keys, dropna=False, sort=False):
        key = _key(dict(zip(keys, key)), keys)
        where = f"tables/gap_ledger.csv {' '.join(key)}"
        total = g[g["term"] == "total"]
        if len(total) != 1:
            a.check(False, where, f"{len(total)} total rows, not one")
            continue
        t = total.iloc[0]
        terms = g[g["term"] != "total"]
        a.check(_close(terms["ms"].fillna(0).sum(), t["ms"], 1e-6, 1e-9), where,
                f"the terms add up to {terms['ms'].fillna(0).sum():.6g} ms, the gap is {t['ms']:.6g} ms")
        r = heads.get(key)
        if r is not None:
            a.check(_close(t["ms"], float(r["wall_ms"]) - float(r["eager_wall_ms"])), where,
                    f"gap {t['ms']:.6g} ms, the headline's wall_ms - eager_wall_ms is "
                    f"{float(r['wall_ms']) - float(r['eager_wall_ms']):.6g} ms")
        elif h is not None:
            a.check(False, where, "no record of this configuration in headline.csv")
        ranked = terms[terms["rank"].notna()].sort_values("rank")
        a.check("residual" not in set(ranked["term"]), where, "the residual is ranked")
        a.check(bool((ranked["ms"] * t["ms"] > 0).all()), where, "a ranked term against the gap's sign")
        a.check(ranked["ms"].abs().is_monotonic_decreasing, where, "ranks not by size")
        a.check(str(t["sentence"]) == gap_ledger.sentence(_rows(g)), where,
                f"the sentence {str(t['sentence'])[:80]!r} is not the one its rows give")


def check_summary(a, ledger: pd.DataFrame, summary_text: str) -> None:
    """summary.md's gap section against the ledger (module doc)."""
    from fusionlab.analysis.report import story
    total = ledger[(ledger["term"] == "total") & (pd.to_numeric(ledger["ms"], errors="coerce") > 0)]
    lines = summary_text.split(story.GAP_HEADING, 1)[1].split("\n## ", 1)[0].splitlines() \
        if story.GAP_HEADING in summary_text else []
    said = [line for line in lines if line.startswith("- **")]
    want = {f"- **{r['model']}** {r['variant']} ({story.gap_where(r)}): {r['sentence']}"
            for r in total.to_dict("records")}
    where = f"summary.md '{story.GAP_HEADING[3:]}'"
    for line in said:
        a.check(line in want, where, f"{line[:100]!r} is no configuration's ledger sentence as written")
    for line in sorted(want - set(said)):
        a.check(False, where, f"leaves out {line[:100]!r}")


def check(a, results: str, h: pd.DataFrame | None = None, summary_text: str | None = None) -> None:
    """Every check of the module doc on a results folder (nothing where it has no gap ledger)."""
    path = os.path.join(results, "tables", "gap_ledger.csv")
    if not os.path.exists(path):
        return
    try:
        ledger = read_csv(path)
    except pd.errors.EmptyDataError:
        return
    except (OSError, ValueError) as e:
        a.check(False, path, f"cannot be read ({type(e).__name__}: {' '.join(str(e).split())[:200]})")
        return
    if ledger.empty:
        return
    check_ledger(a, ledger, h)
    if summary_text:
        check_summary(a, ledger, summary_text)
