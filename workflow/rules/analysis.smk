# Metrics of each run, the model costs, then the tidy tables and the summary of the sweep.

BREAKDOWN = f"{RES}/tables/speedup_breakdown.csv"  # analysis.sweep.decompose
SCALING = f"{RES}/tables/scaling.csv"  # analysis.sweep.scaling
KERNEL_RESOURCES = f"{RES}/tables/kernel_resources.csv"  # analysis.sweep.overfusion
LEDGER = f"{RES}/tables/fusion_ledger.csv"  # analysis.sweep.ledger
MISSED = f"{RES}/tables/missed_fusions.csv"
SUITE = {k: f"{RES}/tables/{k}.csv" for k in ("suite", "kernel_classes", "slower")}  # analysis.sweep.suite


rule run_metrics:
    input:
        unpack(profile_input),
    wildcard_constraints:
        backend="(?!)" if METRICS_ONLY else "nsys|torch",  # (?!) matches nothing
    output:
        metrics=f"{RUN}/metrics.json",
        kernels=f"{RUN}/kernels.csv",
    log:
        f"{RUN}/metrics.log",
    benchmark:
        f"{RUN}/benchmarks/run_metrics.tsv"
    params:
        results=lambda wildcards: RES,  # the sweep plan of the progress line
    conda:
        ENV
    script:
        "../scripts/run_metrics.py"


rule model_costs:
    output:
        COSTS,
    params:
        experiments=sorted({(r["model"], r["batch"], r["mode"], r["dtype"], sizes.from_suffix(r["size"]))
                            for r in RUNS}),
        imports=CFG["import_models"],
        recorded=recorded_costs(),
    log:
        f"{RES}/logs/model_costs.log",
    conda:
        ENV
    script:
        "../scripts/model_costs.py"


rule tables:
    input:
        metrics=[f"{d}/metrics.json" for d in run_dirs()],
        kernels=[f"{d}/kernels.csv" for d in run_dirs()],
        costs=COSTS,
        peaks=PEAKS_INPUT,
        traffic=NCU["inputs"],  # ncu.smk: read beside each metrics.json
    output:
        **TABLES,
        breakdown=BREAKDOWN,
        scaling=SCALING,
        kernel_resources=KERNEL_RESOURCES,
    params:
        noise_cv=CFG["noise_cv"],
        ncu_note=NCU["note"],
    log:
        f"{RES}/logs/tables.log",
    conda:
        ENV
    script:
        "../scripts/tables.py"


rule fusion_ledger:
    input:
        metrics=[f"{d}/metrics.json" for d in run_dirs()],  # inductor/ and run.json read beside each
        kernels=TABLES["kernels"],
        peaks=PEAKS_INPUT,
    output:
        ledger=LEDGER,
        missed=MISSED,
    log:
        f"{RES}/logs/fusion_ledger.log",
    conda:
        ENV
    script:
        "../scripts/fusion_ledger.py"


rule suite:
    input:
        headline=HEADLINE,
        kernels=TABLES["kernels"],
    output:
        **SUITE,
    log:
        f"{RES}/logs/suite.log",
    conda:
        ENV
    script:
        "../scripts/suite.py"


rule fusion_map:
    input:
        kernels=TABLES["kernels"],
        ledger=LEDGER,
        missed=MISSED,
    output:
        report(FUSION_MAP, caption="../report/fusion_map.rst", category="3. Kernels and fusion",
               subcategory="all models", labels={"figure": "fusion map"}),
    log:
        f"{RES}/logs/fusion_map.log",
    conda:
        ENV
    script:
        "../scripts/fusion_map.py"
