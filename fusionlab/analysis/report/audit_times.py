"""The audit of summary.md's time table ("## Time per iteration", report.story.times_md):
each row's cells (time per iteration, kernel or operator time, exposed host time or time
outside operators, the eager time compared with, the speedup) against the same table made
again from the record (tables/headline.csv). A row the record has and the text lacks, or a
cell that differs, is a violation naming the model, configuration, variant and column.
"""
from __future__ import annotations

import pandas as pd

HEADING = "## Time per iteration"


def _tables(lines: list[str]) -> dict[tuple[str, str, str], dict[str, str]]:
    """(model, configuration, variant) -> {column: cell} of the section's markdown tables."""
    out, model, header = {}, "", None
    for line in lines:
        if line.startswith("### "):
            model, header = line[4:].strip(), None
        elif line.startswith("|") and not set(line) <= set("|-: "):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header = cells
            else:
                row = dict(zip(header, cells))
                out[(model, row.get("configuration", ""), row.get("variant", ""))] = row
        elif not line.startswith("|"):
            header = None
    return out


def section(md: str) -> list[str] | None:
    """The lines of the time table's section of md (to the next `## ` heading), None without it."""
    lines = md.splitlines()
    if HEADING not in lines:
        return None
    start = lines.index(HEADING) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start:end]


def check(a, md: str, h: pd.DataFrame) -> None:
    """The module doc's checks on summary.md's text md against the record h (an
    audit.Audit a)."""
    from fusionlab.analysis.report import story
    said = section(md)
    if said is None:
        return
    got, want = _tables(said), _tables("\n".join(story.times_md(h)).splitlines())
    for (model, config, variant), row in want.items():
        where = f"summary.md: {HEADING[3:]}, {model} {config} {variant}".replace("  ", " ")
        have = got.get((model, config, variant))
        a.check(have is not None, where, "the record's row is not in the text")
        for col, cell in row.items() if have is not None else ():
            a.check(have.get(col) == cell, where, f"{col} says {have.get(col)!r}, the record gives {cell!r}")
