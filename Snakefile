# fusionlab: sweep models x variants x batch sizes (x model sizes) under Nsight Systems (or torch.profiler
# where there is no GPU or nsys), then tables, figures and the report.
#
#   snakemake --cores 1 all                                  # the sweep in config.yaml
#   snakemake --cores 1 all --configfile config/smoke.yaml   # CPU smoke run (< 5 min)
#   snakemake --cores 1 regenerate --forceall --config regenerate=1   # tables, figures and
#       summary again from the profiles already under results/: no profiling, no GPU
#   snakemake --report results/snakemake_report.html         # Snakemake's HTML report
import sys

from snakemake.utils import min_version

min_version("8.0")

ROOT = workflow.basedir

from fusionlab.plan import config_checks, sweep  # noqa: E402
from fusionlab.core import axes, sizes  # noqa: E402
from fusionlab.core.io import printable  # noqa: E402
from fusionlab.experiments import catalog  # noqa: E402
from fusionlab.plan import progress, sweep_lock  # noqa: E402
from fusionlab.jobs import host_gate, slots  # noqa: E402
from fusionlab.analysis.report.figures import FIGURES  # noqa: E402


# the repository's sweep where no --configfile is given; with --configfile, that file alone
# (the schema's defaults fill what it leaves out, listed in logs/sweep_plan.json)
if not workflow.overwrite_configfiles:

    configfile: "config.yaml"


report: "workflow/report/workflow.rst"


REGENERATE = bool(config.pop("regenerate", False))
ALLOW_YTE = config.pop("allow_yte", False) in (True, "true", "True", 1)
GIVEN = dict(config)
CONFIG_FILES = list(workflow.overwrite_configfiles) or [os.path.join(ROOT, "config.yaml")]
try:
    config_checks.check_files(CONFIG_FILES, ALLOW_YTE)
    CFG = sweep.validate(config, root=ROOT, regenerate=REGENERATE,
                         command_line=dict(workflow.config_settings.config))
    if REGENERATE:  # the runs are those already profiled under results/
        LEFT_OUT = []
        RUNS = sweep.existing_runs(CFG, LEFT_OUT)
        if LEFT_OUT and workflow.is_main_process:
            print(printable(f"fusionlab: left out {len(LEFT_OUT)} folder(s) with a run record whose path is no run "
                            f"of a model and variant this checkout knows, e.g. {LEFT_OUT[0]}"), file=sys.stderr)
        MACHINE = sweep.recorded_machine(CFG, RUNS)
    elif workflow.subprocess_exec and os.environ.get(sweep.MACHINE_ENV):
        # a job's own process (Snakemake parses the workflow again there): the machine
        # the main process found, not detected again beside the measurements
        MACHINE = sweep.machine_from_env(os.environ[sweep.MACHINE_ENV])
        RUNS = sweep.runs(CFG, MACHINE.profiler)
    else:
        MACHINE = sweep.resolve(CFG)
        RUNS = sweep.runs(CFG, MACHINE.profiler)
        os.environ[sweep.MACHINE_ENV] = sweep.machine_to_env(MACHINE)
except sweep.ConfigError as e:
    sys.exit(f"fusionlab: {e}")

if workflow.is_main_process:
    print(MACHINE.note, file=sys.stderr)
# regenerating from results copied without their profiles: no rule makes metrics.json
METRICS_ONLY = REGENERATE and sweep.metrics_only(RUNS)
RES = CFG["results"]
BACKEND = MACHINE.profiler
PYTHON = sys.executable
RUN = f"{RES}/runs/{sweep.RUN_PATTERN}"


wildcard_constraints:
    backend="nsys|torch",
    model="|".join(catalog.model_names()),
    variant="|".join(catalog.variant_names()),
    mode="|".join(axes.MODES),
    dtype="|".join(axes.DTYPES),
    batch=r"[1-9][0-9]*",
    size=sizes.SUFFIX_PATTERN,  # "" (the model's default sizes) or -dim1024-num_layers8
    repeat=r"[0-9]+",


# on a cluster only the profiling jobs are submitted; the rest runs on the submitting host
# (the rules of profile.smk and nsys.smk are named where those files are included)
localrules:
    all,
    regenerate,
    run_metrics,
    model_costs,
    tables,
    headline,
    fusion_ledger,
    summary,
    fusion_map,
    ncu_traffic,
    run_attribution,
    attribution,
    gap_ledger,


include: "workflow/rules/common.smk"


if not REGENERATE:

    include: "workflow/rules/profile.smk"
    include: "workflow/rules/nsys.smk"

    localrules:
        record_unsupported,
        nsys_export_sqlite,
        nsys_stats,


include: "workflow/rules/ncu.smk"
include: "workflow/rules/analysis.smk"
include: "workflow/rules/attribution.smk"
include: "workflow/rules/gap_ledger.smk"
include: "workflow/rules/plots.smk"
include: "workflow/rules/reproduction.smk"



ANALYSIS = [*TABLES.values(), *SUITE.values(), HEADLINE, SUMMARY, SUMMARY_HTML, REPORT_HTML, *MODEL_PAGES, FUSION_MAP,
            ATTRIBUTION, GAP_LEDGER, *[f"{RES}/figures/timeline/{m}.png" for m in TIMELINES],
            *[f for fig in FIGURES for f in figure_files(fig)]]


onstart:
    # one sweep per results folder at a time, in place of Snakemake's lock (off in the
    # profiles: a killed sweep left it behind, and the same command then stopped)
    if workflow.is_main_process:
        try:
            sweep_lock.acquire(RES)
        except sweep_lock.Busy as e:
            sys.exit(str(e))
    if not REGENERATE and workflow.is_main_process and MACHINE.device == "cuda":
        # this sweep's jobs pause while a run measures (jobs/host_gate.py)
        host_gate.register_sweep()
    if not REGENERATE:
        progress.write_plan(RES, run_dirs(), len(SLOTS) if SLOTS else 1, CFG, GIVEN, CONFIG_FILES)


onsuccess:
    sweep_ends()


onerror:
    sweep_ends()


rule all:
    input:
        ANALYSIS,
        stats=[f"{d}/stats" for d in exported_run_dirs()] if BACKEND == "nsys" else [],
        traffic=NCU["inputs"],
    default_target: True


rule regenerate:
    input:
        ANALYSIS,


rule reproduction:
    input:
        REPRODUCTION,
