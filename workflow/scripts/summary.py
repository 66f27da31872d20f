"""Snakemake adapter: summary.md from the tidy tables (analysis.report.summary) and the
same as an HTML page for the report (analysis.report.html)."""
import os

import pandas as pd

from fusionlab.core.joblog import job_log
from fusionlab.analysis.report import audit, pages
from fusionlab.analysis.report.plots import load_tables
from fusionlab.analysis.report.summary import summary_md, write_text

i, o = snakemake.input, snakemake.output  # noqa: F821
with job_log(snakemake.log[0]) as log:  # noqa: F821
    t = load_tables(i.runs, i.speedups, i.crossover, i.peaks or None, i.scaling, i.kernel_resources,
                    headline_csv=i.headline)
    args = dict(headline=t["headline"], scaling=t["scaling"], kernel_resources=t["kernel_resources"],
                ledger=pd.read_csv(i.ledger) if os.path.getsize(i.ledger) > 1 else None,
                missed=pd.read_csv(i.missed) if os.path.getsize(i.missed) > 1 else None,
                gap_ledger=pd.read_csv(i.gap_ledger) if os.path.getsize(i.gap_ledger) > 1 else None,
                suite={k: pd.read_csv(i[k]) if os.path.getsize(i[k]) > 1 else None
                       for k in ("suite", "kernel_classes", "slower")})
    md = summary_md(t["runs"], t["speedups"], t["crossover"], t["peaks"], **args)
    # the audit of this sweep (its figures' data and captions, and the opening just written) goes
    # into the banner; the opening sentences do not depend on it
    found = audit.audit(os.path.dirname(os.path.dirname(i.headline)), summary_text=md)
    print(found.line(), *found.violations, sep="\n", file=log)
    md = summary_md(t["runs"], t["speedups"], t["crossover"], t["peaks"], audit=[found.line(), *found.violations],
                    **args)
    write_text(o.md, md)
    pages.write(os.path.dirname(os.path.dirname(i.headline)), md, o.html, o.report,
                {os.path.basename(p)[:-5]: p for p in o.pages})
    print(f"summary of {len(t['runs'])} runs: {o.md}, {o.html}", file=log)
