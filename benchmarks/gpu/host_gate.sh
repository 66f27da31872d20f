#!/usr/bin/env bash
# Speedups true on a busy host: three sweeps through `snakemake all` with default settings
# (config/host-gate-small.yaml, config/host-gate-real.yaml, config/host-gate-train.yaml: 4
# profiling jobs in flight per GPU), each followed, with
# nothing else running, the bare-loop oracle (benchmarks/bare_loop_processes.py, 3 processes
# per configuration), then each sweep's headline against it. Run from a snapshot:
# (Snakemake's greedy scheduler: the device kit carries no pulp)
#   bash benchmarks/gpu/bg.sh start gate "bash benchmarks/gpu/host_gate.sh"
set -u
stamp() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nsys --version; ncu --version | tail -1; python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
nproc
for c in ${SWEEPS:-small real train}; do
  conf=./config/host-gate-$c.yaml
  stamp "sweep $c"
  t0=$(date +%s)
  snakemake all --cores all --scheduler greedy --keep-going --configfile "$conf" > results-$c.log 2>&1
  echo "sweep $c: rc=$? wall_s=$(( $(date +%s) - t0 ))"
  grep -E "steps \(|Error" results-$c.log | tail -2
  stamp "bare loop $c"
  t0=$(date +%s)
  iters=200; [ "$c" = real ] && iters=20
  python benchmarks/bare_loop_processes.py run --configfile "$conf" --processes ${PROCESSES:-3} \
    --iters $iters --pairs ${PAIRS:-10} --out results/host-gate-$c/bare.json
  echo "bare $c: wall_s=$(( $(date +%s) - t0 ))"
  python benchmarks/bare_loop_processes.py compare --bare results/host-gate-$c/bare.json \
    --headline results/host-gate-$c/tables/headline.csv --csv results/host-gate-$c/bare_compare.csv
  python benchmarks/run_overhead.py results/host-gate-$c | grep -E "host gate|phases summed|waits for the GPU|profiled runs"
done
stamp done
