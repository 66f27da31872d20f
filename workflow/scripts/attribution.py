"""Snakemake adapter: one run's attribution.csv (analysis.run.attribution) or the sweep's
tables/attribution.csv (analysis.sweep.attribution), by the rule that runs it."""

from fusionlab.core.joblog import job_log

i, o = snakemake.input, snakemake.output  # noqa: F821
with job_log(snakemake.log[0]) as log:  # noqa: F821
    if snakemake.rule == "attribution":  # noqa: F821
        from fusionlab.analysis.sweep.attribution import coverage, write
        df = write(i.metrics, o.table)
        print(f"attribution of {df['run'].nunique()} runs: {o.table}", file=log)
        print(coverage(df).to_string(index=False), file=log)
    else:
        from fusionlab.analysis.run.attribution import coverage, main
        rows = main(i.run, getattr(i, "profile", None), o[0])
        print(f"{len(rows)} rows; attributed shares {coverage(rows)}", file=log)
