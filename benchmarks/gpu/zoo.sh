#!/usr/bin/env bash
# GPU machine: time the zoo sweep (config/zoo.yaml, one repeat) through the real
# `snakemake all`, on every GPU of the box or on the ones in GPUS ("0" = one GPU).
# Resumable: run it again on the still-warm machine (next device call within its idle
# window) and the workflow goes on where it stopped; each call appends its own sweep
# seconds to $RES/sweep_seconds.txt, and the benchmark's time is their sum.
#   GPUS=0 BUDGET=560 bash benchmarks/gpu/zoo.sh      # one GPU
#   BUDGET=560 bash benchmarks/gpu/zoo.sh             # every GPU (nvidia-h200-x2: two)
# At the end of the sweep: the run records' overlap check and per-run breakdown
# (benchmarks/run_overhead.py), into $OUT.
set -u
source .device-kit/setup.sh > /dev/null 2>&1
pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
export PYTHONUNBUFFERED=1
RES=${RES:-results/zoo}
BUDGET=${BUDGET:-560}
mkdir -p "$RES"
nvidia-smi -L; nsys --version
snakemake --unlock --configfile config/zoo.yaml > /dev/null 2>&1
t0=$(date +%s)
# SIGINT first (Snakemake stops its jobs and marks them incomplete), then -k
[ -n "${GPUS:-}" ] && export CUDA_VISIBLE_DEVICES=$GPUS   # the sweep's gpus: auto takes these
# the machine's CPU load beside the sweep (contention between the processes in flight)
vm=; if command -v vmstat > /dev/null; then vmstat -t 5 > "$OUT/vmstat-$t0.txt" 2>&1 & vm=$!; fi
timeout -k 20 -s INT $((BUDGET - 60)) snakemake all --configfile config/zoo.yaml --cores "$(nproc)" \
  --keep-going --rerun-incomplete --config results="$RES" > "$OUT/zoo-$t0.log" 2>&1
rc=$?
[ -n "$vm" ] && kill "$vm" 2> /dev/null
echo "$(( $(date +%s) - t0 )) rc=$rc" >> "$RES/sweep_seconds.txt"
echo "this call: rc=$rc, $(( $(date +%s) - t0 )) s; calls so far (s, rc):"; cat "$RES/sweep_seconds.txt"
awk '{s += $1} END {print "sweep time summed over the calls: " s " s"}' "$RES/sweep_seconds.txt"
grep -E "steps \(" "$OUT/zoo-$t0.log" | tail -1
# every call, finished or not: the breakdown of the runs so far and the results without
# their profiles (a sweep's .nsys-rep and .sqlite files are most of its size)
python benchmarks/run_overhead.py "$RES" --csv "$OUT/run_overhead.csv" --in-flight 4,6,8 > "$OUT/run_overhead.txt" 2>&1
tail -13 "$OUT/run_overhead.txt"
cp "$RES/sweep_seconds.txt" "$RES/tables/runs.csv" "$RES/summary.md" "$OUT/" 2>/dev/null
tar czf "$OUT/results.tgz" --exclude='*.nsys-rep' --exclude='*.sqlite' "$RES" 2>/dev/null
