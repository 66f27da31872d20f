"""Snakemake adapter: one measured iteration of a model's runs, eager above each variant
(analysis.report.timeline), and its data."""

from fusionlab.core.joblog import job_log
from fusionlab.analysis.readers import nsys_timeline
from fusionlab.analysis.report import plots, timeline

i, o, p = snakemake.input, snakemake.output, snakemake.params  # noqa: F821
with job_log(snakemake.log[0]) as log:  # noqa: F821
    try:
        runs = [(label, nsys_timeline.iteration(path)) for label, path in zip(p.labels, i)]
        model = o.png.rsplit("/", 1)[-1][:-4]
        fig = timeline.draw(runs, f"{model}: one measured iteration, eager above each variant")
    except ValueError as e:
        fig = plots.marker(str(e))
        print(f"timeline: {e}", file=log)
    plots.write_marks(fig, "timeline", o.png.rsplit("/", 1)[-1][:-4], o.data)
    plots.save(fig, o.png)
