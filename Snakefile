# fusionlab: sweep models x variants x batch sizes under Nsight Systems (or torch.profiler
# where there is no GPU or nsys), then tables, figures and the report.
#
#   snakemake --cores 1 all                                  # the sweep in config.yaml
#   snakemake --cores 1 all --configfile config/smoke.yaml   # CPU smoke run (< 5 min)
import sys

from snakemake.utils import min_version

min_version("8.0")

# experiments/ and analysis/ are imported here, by the scripts and by the runner jobs
sys.path.insert(0, workflow.basedir)
ROOT = workflow.basedir

from experiments import sweep  # noqa: E402
from experiments.registry import MODEL_NAMES, VARIANT_NAMES  # noqa: E402
from analysis.plots import FIGURES  # noqa: E402


configfile: "config.yaml"


try:
    CFG = sweep.validate(config)
    MACHINE = sweep.resolve(CFG)
except sweep.ConfigError as e:
    sys.exit(f"fusionlab: {e}")

print(MACHINE.note, file=sys.stderr)
RES = CFG["results"]
BACKEND = MACHINE.profiler
RUNS = sweep.runs(CFG, BACKEND)
PYTHON = sys.executable
RUN = f"{RES}/runs/{{backend}}/{{model}}/{{variant}}/{{mode}}_{{dtype}}/bs{{batch}}/r{{repeat}}"


wildcard_constraints:
    backend="nsys|torch",
    model="|".join(MODEL_NAMES),
    variant="|".join(VARIANT_NAMES),
    mode="inference|train",
    dtype="float32|bfloat16|float16",
    batch=r"[1-9][0-9]*",
    repeat=r"[0-9]+",


# on a cluster only the profiling jobs are submitted; the rest runs on the submitting host
localrules:
    all,
    nsys_export_sqlite,
    nsys_stats,
    run_metrics,
    tables,
    figure,


include: "workflow/rules/common.smk"
include: "workflow/rules/profile.smk"
include: "workflow/rules/nsys.smk"
include: "workflow/rules/analysis.smk"
include: "workflow/rules/plots.smk"


rule all:
    input:
        tables=TABLES,
        figures=expand(f"{RES}/figures/{{fig}}.{{ext}}", fig=FIGURES, ext=("png", "svg")),
        stats=[f"{d}/stats" for d in run_dirs()] if BACKEND == "nsys" else [],
    default_target: True
