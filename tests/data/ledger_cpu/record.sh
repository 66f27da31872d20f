#!/bin/sh
# Records the ledger fixtures (tests/data/README.md): eager and compile runs of mlp and
# transformer_block on the CPU with torch.profiler, their kernels.csv (analysis.run.run_metrics),
# run.json, metrics.json and the runner's inductor/ folder; mlp_compile_cached is the same compile run
# again, its graph from Inductor's FX graph cache; mlp_train_* are the same in train mode (forward and
# backward of the mean: a forward and a backward graph), mlp_train_compile_cached from the cache.
# The traces are not kept.
set -e
out=${1:-tests/data/ledger_cpu}
tmp=$(mktemp -d)
export TORCHINDUCTOR_CACHE_DIR=$tmp/cache
# model:variant[:cached][:train]
for run in mlp:eager mlp:compile mlp:compile:cached transformer_block:eager transformer_block:compile \
           mlp:eager:train mlp:compile:train mlp:compile:cached:train; do
    model=${run%%:*}; rest=${run#*:}; variant=${rest%%:*}
    mode=inference; case $run in *:train) mode=train;; esac
    name=${model}; [ $mode = train ] && name=${name}_train
    name=${name}_${variant}; case $run in *:cached*) name=${name}_cached;; esac
    d=$tmp/$name; mkdir -p $d
    python -m fusionlab.runner --model $model --variant $variant --mode $mode --batch 4 --warmup 2 --iters 5 \
        --windows 1 --device cpu --profiler torch --trace $d/trace.json --out $d/run.json
    python -c "from fusionlab.analysis.run import run_metrics as r; r.main('$d/run.json', '$d/trace.json', 'torch', '$d/metrics.json', '$d/kernels.csv')"
    rm -rf $out/$name; mkdir -p $out/$name
    cp $d/run.json $d/metrics.json $d/kernels.csv $out/$name/
    [ -d $d/inductor ] && cp -r $d/inductor $out/$name/
done
rm -rf $tmp
