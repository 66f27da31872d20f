# The report layer: the headline table, the figures drawn from the written tables (PNG for
# the report, SVG for papers; one job per figure, one file per model or for the sweep,
# only where the sweep has data for it), each with a caption about this sweep, and the
# summary (markdown and the same as a page of the report).



REPORT_HTML = f"{RES}/report.html"   # analysis.report.pages
MODEL_PAGES = [f"{RES}/pages/{m}.html" for m in sorted({r["model"] for r in RUNS if not r.get("skipped")})]

TIMELINES = {m: timeline_runs(m) for m in sorted({r["model"] for r in RUNS})} if BACKEND == "nsys" else {}
# regenerating from records without their exports: no timeline where one is missing
# (or going on from runs kept without their reports)
TIMELINES = {m: rs for m, rs in TIMELINES.items() if rs and (not REGENERATE or all(
    os.path.exists(f"{sweep.run_dir(RES, **r)}/report.sqlite") for r in rs))
    and not any(sweep.run_dir(RES, **r) in RECORDED for r in rs)}



rule headline:
    input:
        runs=TABLES["runs"],
        speedups=TABLES["speedups"],
        peaks=PEAKS_INPUT,
    params:
        # a row of status "not run" for each configuration the config asks for with no run
        not_recorded=NOT_RECORDED,
    output:
        report(HEADLINE, caption="../report/headline_table.rst", category="0. Summary",
               labels={"table": "time per iteration and speedup (headline.csv)"}),
    log:
        f"{RES}/logs/headline.log",
    conda:
        ENV
    script:
        "../scripts/headline.py"


rule summary:
    input:
        runs=TABLES["runs"],
        speedups=TABLES["speedups"],
        crossover=TABLES["crossover"],
        headline=HEADLINE,
        scaling=SCALING,
        kernel_resources=KERNEL_RESOURCES,
        ledger=LEDGER,
        missed=MISSED,
        **SUITE,
        peaks=PEAKS_INPUT,
        # the figures' data and captions, which the audit in the summary's banner checks
        figure_data=[f"{RES}/figures/{fig}/{s}.{ext}" for fig in report_figures.FIGURES
                     for s in figure_scopes(fig) for ext in ("data.csv", "rst")],
        fusion_map=FUSION_MAP,   # linked from the front page
        gap_ledger=GAP_LEDGER,   # the audit in the summary's banner checks it too
        attribution=ATTRIBUTION,   # the model pages' module rows
        timelines=[f"{RES}/figures/timeline/{m}.png" for m in TIMELINES],   # on the model pages
        # the figures the front page and the model pages show
        figure_png=[f"{RES}/figures/{fig}/{s}.png" for fig in report_figures.FIGURES for s in figure_scopes(fig)],
    output:
        md=SUMMARY,
        html=report(SUMMARY_HTML, caption="../report/summary.rst", category="0. Summary",
                    labels={"table": "summary"}),
        # the front page with its images inside it (one file to publish), and a page per model
        report=REPORT_HTML,
        pages=MODEL_PAGES,
    log:
        f"{RES}/logs/summary.log",
    conda:
        ENV
    script:
        "../scripts/summary.py"


for _fig, (_scope, _category) in report_figures.FIGURES.items():
    if not figure_scopes(_fig):
        continue

    rule:
        name:
            f"figure_{_fig}"
        localrule: True
        input:
            runs=TABLES["runs"],
            speedups=TABLES["speedups"],
            crossover=TABLES["crossover"],
            kernels=TABLES["kernels"],
            headline=HEADLINE,
            breakdown=BREAKDOWN,
            scaling=SCALING,
            kernel_resources=KERNEL_RESOURCES,
            peaks=PEAKS_INPUT,
            suite=SUITE["suite"],
            **({"gap_ledger": GAP_LEDGER} if _fig == "gap_waterfall" else {}),
            attribution=ATTRIBUTION if _fig == "attribution_icicle" else [],
        output:
            **{
                f"{s}_png": report(
                    f"{RES}/figures/{_fig}/{s}.png",
                    caption=figure_caption(f"{RES}/figures/{_fig}/{s}.rst"),
                    category=_category,
                    subcategory=s if s != "all" else "all models",
                    labels={"figure": _fig.replace("_", " "), "model": s},
                )
                for s in figure_scopes(_fig)
            },
            **{f"{s}_svg": f"{RES}/figures/{_fig}/{s}.svg" for s in figure_scopes(_fig)},
            **{f"{s}_rst": f"{RES}/figures/{_fig}/{s}.rst" for s in figure_scopes(_fig)},
            # what each bar, point and label shows (report.plots.write_marks), for the audit
            **{f"{s}_data": f"{RES}/figures/{_fig}/{s}.data.csv" for s in figure_scopes(_fig)},
        params:
            fig=_fig,
        log:
            f"{RES}/logs/figure_{_fig}.log",
        conda:
            ENV
        script:
            "../scripts/figure.py"


for _model, _runs in TIMELINES.items():

    rule:
        # one measured iteration, eager above each variant (analysis.report.timeline)
        name:
            f"timeline_{_model}"
        localrule: True
        input:
            [f"{sweep.run_dir(RES, **r)}/report.sqlite" for r in _runs],
        output:
            png=report(f"{RES}/figures/timeline/{_model}.png", category="2. Where the time goes",
                       subcategory=_model, labels={"figure": "timeline", "model": _model}),
            data=f"{RES}/figures/timeline/{_model}.data.csv",
        params:
            labels=[f"{r['variant']} ({r['mode']} {r['dtype']}, batch {r['batch']})" for r in _runs],
        log:
            f"{RES}/logs/timeline_{_model}.log",
        conda:
            ENV
        script:
            "../scripts/timeline.py"
