#!/bin/sh
# Records the attribution fixtures (tests/data/README.md): eager and compile runs of
# transformer_block in train mode on the CPU with torch.profiler (batch 2, 1 warm-up, 2 measured),
# with a fresh Inductor cache so that the compile's node meta (module paths, source lines) is
# written; kept: run.json, trace.json.gz, op_record.json (eager), kernels.csv, inductor/.
set -e
out=${1:-tests/data/attribution_cpu}
tmp=$(mktemp -d)
export TORCHINDUCTOR_CACHE_DIR=$tmp/cache
for variant in eager compile; do
    d=$tmp/$variant; mkdir -p $d
    python -m fusionlab.runner --model transformer_block --variant $variant --mode train --batch 2 --warmup 1 \
        --iters 2 --windows 1 --device cpu --profiler torch --trace $d/trace.json --out $d/run.json
    python -c "from fusionlab.analysis.run import run_metrics as r; r.main('$d/run.json', '$d/trace.json', 'torch', '$d/metrics.json', '$d/kernels.csv')"
    rm -rf $out/$variant; mkdir -p $out/$variant
    gzip -c $d/trace.json > $out/$variant/trace.json.gz
    cp $d/run.json $d/kernels.csv $out/$variant/
    [ -f $d/op_record.json ] && cp $d/op_record.json $out/$variant/
    [ -d $d/inductor ] && cp -r $d/inductor $out/$variant/
done
rm -rf $tmp
