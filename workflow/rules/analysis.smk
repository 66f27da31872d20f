# Metrics of each run, then the tidy tables of the sweep.


rule run_metrics:
    input:
        unpack(profile_input),
    output:
        f"{RUN}/metrics.json",
    log:
        f"{RUN}/metrics.log",
    conda:
        ENV
    script:
        "../scripts/run_metrics.py"


rule tables:
    input:
        [f"{d}/metrics.json" for d in run_dirs()],
    output:
        runs=f"{RES}/tables/runs.csv",
        runs_pq=f"{RES}/tables/runs.parquet",
        long=f"{RES}/tables/metrics_long.csv",
        long_pq=f"{RES}/tables/metrics_long.parquet",
        speedups=f"{RES}/tables/speedups.csv",
    log:
        f"{RES}/logs/tables.log",
    conda:
        ENV
    script:
        "../scripts/tables.py"
