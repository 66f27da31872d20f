# The source texts' claims against this sweep (fusionlab/analysis/report/claims.yaml):
# reproduction.md (claim | source | published | measured here | verdict | why) and the
# figure of published against measured ratios. Reads only the written tables, peaks.json
# and the run folders' records.
#   snakemake --cores 16 reproduction --configfile config/reproduction.yaml       (GPU)
#   snakemake --cores 2 reproduction --configfile config/reproduction-cpu.yaml    (CPU)

REPRODUCTION = [f"{RES}/reproduction.md", f"{RES}/figures/reproduction/all.png", f"{RES}/figures/reproduction/all.svg"]


rule reproduction_report:
    input:
        runs=TABLES["runs"],
        speedups=TABLES["speedups"],
        costs=COSTS,
        peaks=PEAKS_INPUT,
        # nsys stats of every run (the launch claim's API share); none on a torch sweep
        stats=[f"{d}/stats" for d in profiled_run_dirs()] if BACKEND == "nsys" and not REGENERATE else [],
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
