"""A sweep's plan, made where Snakemake parses the workflow: the config checked
(config_schema, config_checks, config.schema.yaml), the machine found (machine), the runs
expanded (runs), with sweep the one namespace the Snakefile reads; the GPUs' slots
(gpu_slots), one live sweep per results folder (sweep_lock), how far a sweep has got
(progress), which runs get an Nsight Compute pass (ncu_plan) and packed records restored
into a results folder (restore). It reads the catalog, never the models' code."""
