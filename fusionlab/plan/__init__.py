"""A sweep's plan, made where Snakemake parses the workflow: the config checked
(config_schema, config_checks, config.schema.yaml), the machine found (machine), the runs
expanded (runs), with sweep the one namespace the Snakefile reads; one live sweep per results folder
(sweep_lock), how far a sweep has got (progress) and which runs get an Nsight Compute pass
(ncu_plan). It reads the catalog, never the models' code."""
