# Nsight Compute: the measured memory traffic of repeat 0 of every profiled run
# (docs/ncu.md). profile_ncu runs the run's measured iteration(s) under ncu, as a process
# of its own after the nsys one (ncu.json records ok / failed / timeout / skipped; the step
# never fails the sweep); ncu_traffic reads the kept .ncu-rep files into traffic.csv (per
# kernel) and traffic.json (per iteration), which the tables join.

if NCU["ncu"]:

    rule profile_ncu:
        # after profile_nsys (its run.json): the same runner arguments, one ncu process per
        # pass of NCU["passes"]; the GPU slot's lock is held as for any measurement
        # with ncu.top_kernels, the run's nsys kernel table too: the names that carry the
        # most time are the ones profiled
        input:
            run=f"{RUN}/run.json",
            timing=f"{RUN}/timing.json",
            kernels=f"{RUN}/kernels.csv" if NCU["top_kernels"] else [],
        output:
            f"{RUN}/{ncu_passes.STEP_FILE}",
        wildcard_constraints:
            backend="nsys",
            repeat="0",
        log:
            f"{RUN}/{ncu_passes.LOG_FILE}",
        benchmark:
            f"{RUN}/benchmarks/profile_ncu.tsv"
        params:
            args=runner_args,
            python=PYTHON,
            root=ROOT,
            ncu=NCU["ncu"],
            opts=NCU["options"],
            run_dir=lambda wildcards, output: os.path.dirname(output[0]),
            script=f"{ROOT}/workflow/scripts/ncu_profile.py",
        threads: measure_threads()
        resources:
            gpu=1,
            ncu_counters=1,   # one of the host's few Nsight Compute jobs (plan.gpu_slots)
        conda:
            ENV
        shell:
            "PYTHONPATH={params.root:q}${{PYTHONPATH:+:$PYTHONPATH}} {params.python:q} {params.script:q} "
            "--run-dir {params.run_dir:q} --ncu {params.ncu:q} --log {log:q} {params.opts:q} -- "
            "{params.python:q} -m fusionlab.runner {params.args:q}"


rule ncu_traffic:
    input:
        f"{RUN}/{ncu_passes.STEP_FILE}",
    output:
        run=f"{RUN}/{ncu_passes.RUN_FILE}",
        kernels=f"{RUN}/{ncu_passes.KERNEL_FILE}",
    wildcard_constraints:
        repeat="0",
        backend="(?!)" if NCU["kept"] else "nsys",  # (?!) matches nothing
    log:
        f"{RUN}/traffic.log",
    conda:
        ENV
    script:
        "../scripts/ncu_traffic.py"
