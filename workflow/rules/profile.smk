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
    resources:
        gpu=1 if MACHINE.device == "cuda" else 0,
    conda:
        ENV
    shell:
        "PYTHONPATH={params.root}${{PYTHONPATH:+:$PYTHONPATH}} {params.python} -m fusionlab.runner {params.args} "
        "--profiler none --out {output} > {log} 2>&1 || echo \"runner exit status $?\" >> {log}; test -e {output}"


rule profile_nsys:
    # after time_untraced: a run that did not end ok there is recorded from its timing.json
    # and not started again (experiments/not_profiled.py); an ok one compiles from the
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
        extra=CFG["nsys"]["args"],
        # on the GPU nsys traces from the capture range the runner opens (before its GPU
        # slot: build, check, warm-up, measured range), not its start-up; the wall time is
        # time_untraced's, so no timing windows here
        capture_nsys=NSYS_CAPTURE[0],
        capture_runner=NSYS_CAPTURE[1],
        python=PYTHON,
        root=ROOT,
    threads: measure_threads()
    # ahead of the next runs' untraced processes: a run's profile follows its timing while
    # the compile caches are warm, and its export, stats and metrics start beside the sweep
    priority: 1
    resources:
        gpu=1 if MACHINE.device == "cuda" else 0,
    conda:
        ENV
    shell:
        "export PYTHONPATH={params.root}${{PYTHONPATH:+:$PYTHONPATH}}; "
        "if {params.python} -m fusionlab.experiments.not_profiled {input.timing} {output.run} {output.rep} 2> {log}; then exit 0; fi; "
        # nsys exits non-zero when the profiled process crashed: that run is recorded by
        # the runner (status error). When nsys writes no report for a run that ended ok
        # (its importer failed), the run is profiled once more; when it writes none again,
        # the run's record says so and the report is left empty: the sweep goes on.
        "{params.python} -m fusionlab.experiments.nsys_profile {output.run} {log} {output.rep} -- "
        "nsys profile -t {params.trace} {params.extra} {params.capture_nsys} "
        "--force-overwrite true -o {output.rep}.tmp {params.python} -m fusionlab.runner {params.args} "
        "--profiler nsys {params.capture_runner} --windows 0 --out {output.run}"


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
        "PYTHONPATH={params.root}${{PYTHONPATH:+:$PYTHONPATH}} {params.python} -m fusionlab.runner {params.args} --profiler torch "
        "--trace {output.trace} --out {output.run} > {log} 2>&1 || echo \"runner exit status $?\" >> {log}; "
        "test -e {output.run} && (test -e {output.trace} || echo '{{\"traceEvents\": []}}' > {output.trace})"


rule device_peaks:
    output:
        PEAKS,
    log:
        f"{RES}/logs/device_peaks.log",
    params:
        python=PYTHON,
        root=ROOT,
        device=MACHINE.device,
        dtype=CFG["dtype"][0],
        slots=f"--slots {slots.format_slots(SLOTS)}" if SLOTS else "",
    threads: measure_threads()
    resources:
        gpu=1 if MACHINE.device == "cuda" else 0,
    conda:
        ENV
    shell:
        "PYTHONPATH={params.root}${{PYTHONPATH:+:$PYTHONPATH}} {params.python} -m fusionlab.experiments.peaks "
        "--device {params.device} --dtype {params.dtype} {params.slots} --out {output} > {log} 2>&1"
