"""One entry to a results folder: `open(RESULTS)` is a Results, the whole API over what a
sweep wrote (or what was copied or restored from one), in one place. It reads files only:
a folder from someone else is data, never code.

    from fusionlab import results
    r = results.open("results/smoke")
    r.runs                      # tables/runs.csv: one row per run, its metrics (DataFrame)
    r.headline                  # tables/headline.csv: one row per variant and configuration
    r.speedups, r.suite         # tables/speedups.csv, tables/suite.csv
    r.ledger                    # tables/fusion_ledger.csv(.gz): each kernel's place in fusion
    r.table("crossover")        # any table by its name; r.tables: the names there are
    r.figures                   # figure name -> scope (a model, or "all") -> its Figure files
    r.figure_data("headline", "bert")   # what each mark of that figure shows (style.record)
    r.figure_tables()           # the tables a figure function draws from (report.plots.load_tables)
    r.peaks, r.summary          # device/peaks.json ({} without it), summary.md ('' without it)
    r.audit()                   # every number and verdict against its record (`fusionlab audit`)

A table is read when first asked for (pandas) and kept; one that is not there raises
ResultsError naming the file looked for. Every file is read bounded (core.io: a regular
file, at most a stated size), so a pipe or a link to a device in the folder is a
ResultsError, never a hang. A folder laid out flat (its tables beside
summary.md, as some recorded benchmark folders are) is read the same way.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import pandas as pd

from fusionlab.core.io import load_json, load_json_object, read_csv, read_text

TABLES = "tables"
FIGURES = "figures"
SWEEP_SCOPE = "all"   # a sweep-wide figure's scope (figures.SWEEP)


class ResultsError(ValueError):
    """A results folder, or a file in it, that is not there or cannot be read (one line)."""


@dataclass(frozen=True)
class Figure:
    """One drawn figure: its image, the data of its marks and its caption (the paths that
    exist; None for one that does not)."""
    name: str
    scope: str             # a model's name, or "all" for a sweep-wide figure
    png: str | None
    svg: str | None
    data: str | None       # NAME/SCOPE.data.csv: one row per mark (report.plots.write_marks)
    caption: str | None    # NAME/SCOPE.rst


class Results:
    """A results folder, read on demand (see the module's doc)."""

    def __init__(self, folder: str):
        self.folder = folder
        self._read: dict[str, pd.DataFrame] = {}   # the tables read so far

    def __repr__(self) -> str:
        return f"Results({self.folder!r}: {len(self.tables)} tables, {len(self.figures)} figures)"

    def path(self, *parts: str) -> str:
        return os.path.join(self.folder, *parts)

    def _table_file(self, name: str) -> str | None:
        for where in (self.path(TABLES), self.folder):
            for ext in (".csv", ".csv.gz"):
                if os.path.lexists(os.path.join(where, name + ext)):
                    return os.path.join(where, name + ext)
        return None

    @functools.cached_property
    def tables(self) -> list[str]:
        """The names of the tables there (tables/NAME.csv or .csv.gz; the folder's own where
        it has no tables/)."""
        where = self.path(TABLES) if os.path.isdir(self.path(TABLES)) else self.folder
        return sorted({f.split(".csv")[0] for f in os.listdir(where) if f.endswith((".csv", ".csv.gz"))})

    def table(self, name: str) -> pd.DataFrame:
        """Table NAME as a DataFrame (read once, then kept); ResultsError where it is not
        there or not a table."""
        if name in self._read:
            return self._read[name]
        path = self._table_file(name)
        if path is None:
            raise ResultsError(f"{self.folder}: no table {name} ({TABLES}/{name}.csv or .csv.gz); "
                               f"tables there: {', '.join(self.tables) or 'none'}")
        try:
            self._read[name] = read_csv(path, low_memory=False)
        except (OSError, ValueError) as e:
            raise ResultsError(f"{path}: not a readable table ({' '.join(str(e).split())})") from None
        return self._read[name]

    runs = property(lambda self: self.table("runs"), doc="tables/runs.csv: one row per run")
    headline = property(lambda self: self.table("headline"),
                        doc="tables/headline.csv: one row per variant and configuration (analysis.sweep.headline)")
    speedups = property(lambda self: self.table("speedups"), doc="tables/speedups.csv: each variant against eager")
    suite = property(lambda self: self.table("suite"), doc="tables/suite.csv: a model zoo's table, one row per model")
    ledger = property(lambda self: self.table("fusion_ledger"),
                      doc="tables/fusion_ledger.csv(.gz): each kernel's place in fusion (analysis.sweep.ledger)")

    @functools.cached_property
    def figures(self) -> dict[str, dict[str, Figure]]:
        """figure name -> scope -> Figure, for every figure drawn under figures/."""
        out: dict = {}
        root = self.path(FIGURES)
        for name in sorted(os.listdir(root)) if os.path.isdir(root) else ():
            files = set(os.listdir(os.path.join(root, name))) if os.path.isdir(os.path.join(root, name)) else set()
            scopes = {f.split(".")[0] for f in files if f.endswith((".png", ".svg", ".data.csv", ".rst"))}

            def there(scope, ext):
                return os.path.join(root, name, scope + ext) if scope + ext in files else None
            out[name] = {s: Figure(name, s, there(s, ".png"), there(s, ".svg"), there(s, ".data.csv"),
                                   there(s, ".rst")) for s in sorted(scopes)}
        return out

    def figure_data(self, name: str, scope: str = SWEEP_SCOPE) -> pd.DataFrame:
        """What each mark of figure NAME for SCOPE shows (its .data.csv: mark, quantity,
        value, the configuration it belongs to); ResultsError where it is not there."""
        f = self.figures.get(name, {}).get(scope)
        if f is None or f.data is None:
            drawn = ", ".join(f"{n}/{s}" for n, by in self.figures.items() for s in by) or "none"
            raise ResultsError(f"{self.folder}: no data of figure {name} for {scope}; figures there: {drawn}")
        try:
            return read_csv(f.data)
        except (OSError, ValueError) as e:
            raise ResultsError(f"{f.data}: not a readable table ({' '.join(str(e).split())})") from None

    def figure_tables(self) -> dict:
        """The tables a figure function (report.figures) draws from, as the workflow's figure
        rule loads them (report.plots.load_tables); imports matplotlib."""
        from fusionlab.analysis.report import plots
        files = {k: self._table_file(n) for k, n in (
            ("crossover_csv", "crossover"), ("scaling_csv", "scaling"), ("kernel_resources_csv", "kernel_resources"),
            ("breakdown_csv", "speedup_breakdown"), ("headline_csv", "headline"), ("kernels_csv", "kernels"))}
        for name in ("runs", "speedups"):
            if self._table_file(name) is None:
                self.table(name)   # its ResultsError
        return plots.load_tables(self._table_file("runs"), self._table_file("speedups"),
                                 peaks_json=self.path("device", "peaks.json"), **files)

    @functools.cached_property
    def peaks(self) -> dict:
        """device/peaks.json: the device's measured peak rates ({} where it is not there)."""
        path = self.path("device", "peaks.json")
        if not os.path.lexists(path):
            return {}
        return load_json_object(path, ResultsError, "a JSON object of peak rates")

    @functools.cached_property
    def summary(self) -> str:
        """summary.md's text ('' where it is not there; ResultsError where it cannot be read)."""
        path = self.path("summary.md")
        if not os.path.lexists(path):
            return ""
        try:
            return read_text(path)
        except (OSError, ValueError) as e:
            raise ResultsError(f"{path}: cannot be read ({' '.join(str(e).split())})") from None

    def audit(self):
        """Every number and verdict of the folder against its record (report.audit.audit):
        an Audit, its `violations` and `line()`."""
        from fusionlab.analysis.report.audit import audit
        return audit(self.folder)


def open(folder: str) -> Results:   # noqa: A001 (results.open, as a file is opened)
    """The results folder at FOLDER; ResultsError where it is not a folder."""
    if not os.path.isdir(folder):
        raise ResultsError(f"no results folder {folder}")
    return Results(folder)
