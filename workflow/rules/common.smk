# Helpers shared by the rules: run folders and the runner's command line.

ENV = "../../environment.yml"


def run_dirs():
    return [sweep.run_dir(RES, **r) for r in RUNS]


def measure_threads():
    """A measurement takes every local core, so nothing runs beside it (host-bound runs
    are sensitive to contention). On a cluster the profile's set-threads decides."""
    try:
        return workflow.cores
    except Exception:  # no --cores: cluster execution
        return 1


TABLES = [
    f"{RES}/tables/runs.csv",
    f"{RES}/tables/runs.parquet",
    f"{RES}/tables/metrics_long.csv",
    f"{RES}/tables/metrics_long.parquet",
    f"{RES}/tables/speedups.csv",
]


def runner_args(wildcards):
    """The runner's arguments; every value is a registry name, an enum or an integer."""
    return (
        f"--model {wildcards.model} --variant {wildcards.variant} --batch {wildcards.batch} "
        f"--mode {wildcards.mode} --dtype {wildcards.dtype} --repeat {wildcards.repeat} "
        f"--warmup {CFG['warmup_iters']} --iters {CFG['measure_iters']} "
        f"--device {MACHINE.device} --compile-mode {CFG['compile_mode']}"
    )


def profile_input(wildcards):
    d = RUN.format(**wildcards)
    return {
        "run": f"{d}/run.json",
        "profile": f"{d}/report.sqlite" if wildcards.backend == "nsys" else f"{d}/trace.json",
    }
