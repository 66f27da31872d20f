# Where each run's kernel time goes (analysis.run.attribution), and the sweep's table
# (analysis.sweep.attribution). Uses RUN, RES, ENV, profile_input, run_dirs and
# profiled_run_dirs of the Snakefile and common.smk; included after analysis.smk.

ATTRIBUTION = f"{RES}/tables/attribution.csv"  # analysis.sweep.attribution


rule run_attribution:
    input:
        unpack(profile_input),
        metrics=f"{RUN}/metrics.json",  # run_metrics first: the run's status is settled
    wildcard_constraints:
        backend="(?!)" if METRICS_ONLY else "nsys|torch",  # (?!) matches nothing: no profiles kept
    output:
        f"{RUN}/attribution.csv",
    log:
        f"{RUN}/attribution.log",
    conda:
        ENV
    script:
        "../scripts/attribution.py"


rule attribution:
    input:
        metrics=[f"{d}/metrics.json" for d in run_dirs()],
        runs=[] if METRICS_ONLY else [f"{d}/attribution.csv" for d in profiled_run_dirs()
                                      if d not in RECORDED or os.path.exists(f"{d}/attribution.csv")],
    output:
        table=ATTRIBUTION,
    log:
        f"{RES}/logs/attribution.log",
    conda:
        ENV
    script:
        "../scripts/attribution.py"
