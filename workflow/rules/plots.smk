# Figures from the tidy tables (PNG for the report, SVG for papers).


rule figure:
    input:
        runs=f"{RES}/tables/runs.csv",
        speedups=f"{RES}/tables/speedups.csv",
    output:
        png=report(
            f"{RES}/figures/{{fig}}.png",
            caption="../report/{fig}.rst",
            category="Sweep",
            labels={"figure": "{fig}"},
        ),
        svg=f"{RES}/figures/{{fig}}.svg",
    wildcard_constraints:
        fig="|".join(FIGURES),
    log:
        f"{RES}/logs/figure_{{fig}}.log",
    conda:
        ENV
    script:
        "../scripts/figure.py"
