# The gap ledger: each variant's untraced gap to eager split into named host and GPU
# terms and a residual (analysis.sweep.gap_ledger). Included by the Snakefile after
# analysis.smk and before plots.smk (the summary's audit reads GAP_LEDGER); GAP_LEDGER joins
# ANALYSIS.

GAP_LEDGER = f"{RES}/tables/gap_ledger.csv"


rule gap_ledger:
    input:
        metrics=[f"{d}/metrics.json" for d in run_dirs()],  # timing.json read beside each
        headline=HEADLINE,
        kernels=TABLES["kernels"],
    output:
        ledger=GAP_LEDGER,
    log:
        f"{RES}/logs/gap_ledger.log",
    conda:
        ENV
    script:
        "../scripts/gap_ledger.py"
