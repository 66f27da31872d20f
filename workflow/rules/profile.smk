# One experiment, run once under its profiler. The runner records failures (oom, error,
# unsupported, incorrect) in run.json and exits 0, so the sweep goes on. Outputs are
# written under temporary names and renamed at the end: a killed run leaves nothing
# that looks complete, and Snakemake reruns it.


rule record_unsupported:
    # a run the variant or model cannot do on this device (known before running it, from
    # the catalog): status unsupported and its reason, written in Snakemake's own process
    # (no torch, no profiler, no GPU work)
    output:
        f"{RUN}/{sweep.UNSUPPORTED_FILE}",
    log:
        f"{RUN}/unsupported.log",
    params:
        reason=lambda wildcards: SKIPPED[RUN.format(**wildcards)],
        device=MACHINE.device,
    run:
        sweep.write_unsupported(output[0], wildcards, params.device, params.reason, log[0])


rule time_untraced:
    # the run's wall time, in a process no profiler touches (nsys's injection slows a
    # process even outside its capture range): the same build, check and warm-up, then
    # the timing windows; its record is timing.json, merged by run_metrics
    output:
        f"{RUN}/timing.json",
    wildcard_constraints:
        backend="nsys",
    log:
        f"{RUN}/timing.log",
    benchmark:
        f"{RUN}/benchmarks/time_untraced.tsv"
    params:
        args=runner_args,
        python=PYTHON,
        root=ROOT,
    threads: measure_threads()
    # ahead of Nsight Compute (priority 0): a sweep stopped early has its runs timed and
    # profiled first, their memory traffic after (Snakemake's greedy scheduler would
    # otherwise prefer the job with the larger inputs)
    priority: 1
    resources:
        gpu=1 if MACHINE.device == "cuda" else 0,
    conda:
        ENV
    shell:
        "PYTHONPATH={params.root:q}${{PYTHONPATH:+:$PYTHONPATH}} {params.python:q} -m fusionlab.runner {params.args:q} "
        "--profiler none --out {output:q} > {log:q} 2>&1 || echo \"runner exit status $?\" >> {log:q}; test -e {output:q}"


rule profile_nsys:
    # after time_untraced: a run that did not end ok there is recorded from its timing.json
    # and not started again (jobs/not_profiled.py); an ok one compiles from the
    # caches the untraced process filled
    input:
        timing=f"{RUN}/timing.json",
    output:
        rep=f"{RUN}/report.nsys-rep",
        run=f"{RUN}/run.json",
    wildcard_constraints:
        backend="nsys",
    log:
        f"{RUN}/profile.log",
    benchmark:
        f"{RUN}/benchmarks/profile_nsys.tsv"
    params:
        args=runner_args,
        trace=CFG["nsys"]["trace"],
        extra=shlex.split(CFG["nsys"]["args"]),   # options from an allow-list (config_checks)
        # on the GPU nsys traces from the capture range the runner opens (before its GPU
        # slot: build, check, warm-up, measured range), not its start-up; the wall time is
        # time_untraced's, so no timing windows here
        capture_nsys=NSYS_CAPTURE[0],
        capture_runner=NSYS_CAPTURE[1],
        tmp_rep=lambda wildcards, output: f"{output.rep}.tmp",
        python=PYTHON,
        root=ROOT,
    threads: measure_threads()
    # ahead of the next runs' untraced processes: a run's profile follows its timing while
    # the compile caches are warm, and its export, stats and metrics start beside the sweep
    priority: 2
    resources:
        gpu=1 if MACHINE.device == "cuda" else 0,
    conda:
        ENV
    shell:
        "export PYTHONPATH={params.root:q}${{PYTHONPATH:+:$PYTHONPATH}}; "
        "if {params.python:q} -m fusionlab.jobs.not_profiled {input.timing:q} {output.run:q} {output.rep:q} 2> {log:q}; then exit 0; fi; "
        # nsys exits non-zero when the profiled process crashed: that run is recorded by
        # the runner (status error). When nsys writes no report for a run that ended ok
        # (its importer failed), the run is profiled once more; when it writes none again,
        # the run's record says so and the report is left empty: the sweep goes on.
        "{params.python:q} -m fusionlab.jobs.nsys_profile {output.run:q} {log:q} {output.rep:q} -- "
        "nsys profile -t {params.trace:q} {params.extra:q} {params.capture_nsys:q} "
        "--force-overwrite true -o {params.tmp_rep:q} {params.python:q} -m fusionlab.runner {params.args:q} "
        "--profiler nsys {params.capture_runner:q} --windows 0 --out {output.run:q}"


rule profile_torch:
    output:
        trace=f"{RUN}/trace.json",
        run=f"{RUN}/run.json",
    wildcard_constraints:
        backend="torch",
    log:
        f"{RUN}/profile.log",
    benchmark:
        f"{RUN}/benchmarks/profile_torch.tsv"
    params:
        args=runner_args,
        python=PYTHON,
        root=ROOT,
    threads: measure_threads()
    resources:
        gpu=1 if MACHINE.device == "cuda" else 0,
    conda:
        ENV
    shell:
        "PYTHONPATH={params.root:q}${{PYTHONPATH:+:$PYTHONPATH}} {params.python:q} -m fusionlab.runner {params.args:q} --profiler torch "
        "--trace {output.trace:q} --out {output.run:q} > {log:q} 2>&1 || echo \"runner exit status $?\" >> {log:q}; "
        "test -e {output.run:q} && (test -e {output.trace:q} || echo '{{\"traceEvents\": []}}' > {output.trace:q})"


rule device_peaks:
    output:
        PEAKS,
    log:
        f"{RES}/logs/device_peaks.log",
    params:
        python=PYTHON,
        root=ROOT,
        device=MACHINE.device,
        dtype=axes.compute_dtype(sweep.dtypes(CFG, CFG["mode"][0])[0]),   # the matmul roof in the runs' dtype
        slots=["--slots", slots.format_slots(SLOTS)] if SLOTS else [],
    threads: measure_threads()
    # first of all GPU jobs: every table's copy bandwidth and roofline ceilings come from it,
    # so a sweep stopped at a deadline still has them
    priority: 3
    resources:
        gpu=1 if MACHINE.device == "cuda" else 0,
    conda:
        ENV
    shell:
        "PYTHONPATH={params.root:q}${{PYTHONPATH:+:$PYTHONPATH}} {params.python:q} -m fusionlab.jobs.peaks "
        "--device {params.device:q} --dtype {params.dtype:q} {params.slots:q} --out {output:q} > {log:q} 2>&1"
