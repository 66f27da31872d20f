# Figures from the written tables (PNG for the report, SVG for papers): one job per figure,
# one file per model (or one for the whole sweep), each annotated for the report.

for _fig, (_scope, _category) in FIGURES.items():

    rule:
        name:
            f"figure_{_fig}"
        localrule: True
        input:
            runs=TABLES["runs"],
            speedups=TABLES["speedups"],
            crossover=TABLES["crossover"],
            breakdown=BREAKDOWN,
            scaling=SCALING,
            kernel_resources=KERNEL_RESOURCES,
            peaks=PEAKS_INPUT,
        output:
            **{
                f"{s}_png": report(
                    f"{RES}/figures/{_fig}/{s}.png",
                    caption=f"../report/{_fig}.rst",
                    category=_category,
                    subcategory=s if s != "all" else "all models",
                    labels={"figure": _fig.replace("_", " "), "model": s,
                            "variants": " ".join(CFG["variants"]),
                            "batch sizes": " ".join(map(str, CFG["batch_sizes"]))},
                )
                for s in figure_scopes(_fig)
            },
            **{f"{s}_svg": f"{RES}/figures/{_fig}/{s}.svg" for s in figure_scopes(_fig)},
        params:
            fig=_fig,
        log:
            f"{RES}/logs/figure_{_fig}.log",
        conda:
            ENV
        script:
            "../scripts/figure.py"
