# The source texts' claims against this sweep (fusionlab/analysis/report/claims.yaml):
# reproduction.md (claim | source | published | measured here | verdict | why) and the
# figure of published against measured ratios. Reads only the written tables, peaks.json
# and the run folders' records.
#   snakemake --cores 16 reproduction --configfile config/reproduction.yaml       (GPU)
#   snakemake --cores 2 reproduction --configfile config/reproduction-cpu.yaml    (CPU)

CLAIMS_YAML = f"{ROOT}/fusionlab/analysis/report/claims.yaml"
CLAIMS_JSON = f"{RES}/reproduction/claims.json"
# regenerating: the claims' own measurement is read where it was kept, never made again
CLAIMS_INPUT = ([CLAIMS_JSON] if os.path.exists(CLAIMS_JSON) else []) if REGENERATE else [CLAIMS_JSON]


REPRODUCTION = [f"{RES}/reproduction.md", f"{RES}/figures/reproduction/all.png", f"{RES}/figures/reproduction/all.svg"]


rule reproduction_report:
    input:
        runs=TABLES["runs"],
        speedups=TABLES["speedups"],
        costs=COSTS,
        peaks=PEAKS_INPUT,
        # nsys stats of every run (the launch claim's API share); none on a torch sweep
        stats=[f"{d}/stats" for d in exported_run_dirs()] if BACKEND == "nsys" and not REGENERATE else [],
        claims=CLAIMS_INPUT,
    output:
        md=report(REPRODUCTION[0], caption="../report/reproduction.rst", category="0. Reproduction",
                  labels={"table": "claims"}),
        png=report(REPRODUCTION[1], caption="../report/reproduction.rst", category="0. Reproduction",
                   labels={"figure": "published against measured"}),
        svg=REPRODUCTION[2],
    params:
        runs_root=f"{RES}/runs",
    localrule: True
    log:
        f"{RES}/logs/reproduction.log",
    conda:
        ENV
    script:
        "../scripts/reproduction.py"


rule reproduction_claims:
    # the claims measured in their own configuration where the sweep's shared axes do not
    # fit (claims.yaml `measure`: the deep MLP at batch 256, forward + backward, over
    # layers and steps; the LSTM over a sequence; Table 8.1 under Nsight Compute, cold and
    # steady), each repeat a process of its own; after the sweep (its tables), alone on the GPU
    input:
        claims=CLAIMS_YAML,
        after=TABLES["runs"],
    output:
        CLAIMS_JSON,
    params:
        python=PYTHON,
        root=lambda wildcards: ROOT,   # the checkout (claims.yaml lies under it)
        device=MACHINE.device,
        repeats=max(CFG["repeats"], 5),   # a t-interval over processes wants more than three
        ncu=(["--ncu", sweep.ncu_path()] if MACHINE.device == "cuda" and BACKEND == "nsys"
             and sweep.ncu_path() else []),
    threads: measure_threads()
    resources:
        gpu=every_gpu_job() if MACHINE.device == "cuda" else 0,
    log:
        f"{RES}/logs/reproduction_claims.log",
    conda:
        ENV
    shell:
        "PYTHONPATH={params.root:q}${{PYTHONPATH:+:$PYTHONPATH}} {params.python:q} -m fusionlab.bench.claims "
        "--claims {input.claims:q} --device {params.device:q} --repeats {params.repeats:q} {params.ncu:q} "
        "--out {output:q} > {log:q} 2>&1"
