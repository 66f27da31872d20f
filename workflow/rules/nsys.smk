# Nsight Systems post-processing: one nsys step per rule.


rule nsys_export_sqlite:
    input:
        f"{RUN}/report.nsys-rep",
    output:
        f"{RUN}/report.sqlite",
    log:
        f"{RUN}/export.log",
    params:
        tmp=lambda wildcards, output: f"{output[0]}.tmp.sqlite",
    benchmark:
        f"{RUN}/benchmarks/nsys_export_sqlite.tsv"
    conda:
        ENV
    shell:
        # an empty report is the marker of a run nsys wrote no report for: nothing to export
        "if [ ! -s {input:q} ]; then echo 'empty report: nsys wrote none (see run.json)' > {log:q}; : > {output:q}; "
        "else nsys export --type sqlite --force-overwrite true -o {params.tmp:q} {input:q} > {log:q} 2>&1 "
        "&& mv {params.tmp:q} {output:q}; fi"


rule nsys_stats:
    input:
        f"{RUN}/report.sqlite",
    output:
        directory(f"{RUN}/stats"),
    log:
        f"{RUN}/stats.log",
    benchmark:
        f"{RUN}/benchmarks/nsys_stats.tsv"
    conda:
        ENV
    script:
        "../scripts/nsys_stats.py"
