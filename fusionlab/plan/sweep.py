"""The sweep as the Snakefile and workflow/ see it, one namespace over three modules:
config_schema (the config validated, defaults filled in), machine (device and profiler
picked for this machine) and runs (the config expanded into runs, and the runs recorded).
Runs without Snakemake.
"""
from fusionlab.experiments import catalog  # noqa: F401
from fusionlab.plan.config_checks import ConfigError  # noqa: F401
from fusionlab.plan.config_schema import SCHEMA, import_entries, schema, schema_file, validate  # noqa: F401
from fusionlab.plan.machine import (  # noqa: F401
    CUDA_NCU, MACHINE_ENV, Machine, gpu_indices, gpu_visible, machine_from_env, machine_to_env, ncu_path,
    nsys_version, recorded_device, recorded_machine, resolve)
from fusionlab.plan.runs import (  # noqa: F401
    RUN_PATTERN, UNSUPPORTED_FILE, batch_sizes, dtypes, existing_runs, metrics_only, run_dir, runs, size_labels,
    timeout_s, unsupported_reason, variants, write_unsupported)
