#!/usr/bin/env bash
# What the GPU machine runs (through the device tool): the default sweep under nsys with
# its repeats, then tables, figures, summary and Snakemake's report. Results go to $OUT.
# If the time budget ends the sweep early, the analysis is regenerated from the runs that
# finished (snakemake regenerate), so what was measured is never lost.
set -u
source .device-kit/setup.sh
export TORCHINDUCTOR_CACHE_DIR=/tmp/inductor-cache PYTHONUNBUFFERED=1
nvidia-smi -L; nsys --version
BUDGET=${BUDGET:-540}
CONF=${CONFIG:+--configfile $CONFIG}   # CONFIG=config/zoo.yaml for the coverage sweep
export RES=${RES:-results}               # its results: folder
GPUS=${GPUS:-1}                          # profiling jobs at once (1 = exclusive measurement)
# build the CUDA extensions once, beside the first jobs (they wait on its lock)
python -c "from fusionlab.experiments.kernels import cuda_ops, seed; cuda_ops.extension(); seed._cuda_module()" > $OUT/cuda_build.log 2>&1 &
THREADS=${THREADS:-16}   # threads per profiling job (16 = the whole host: exclusive measurement)
if [ "${FIXTURES:-0}" = 1 ]; then
  snakemake all --configfile config/fixtures.yaml --cores 8 --resources gpu=1 --keep-going > $OUT/fixtures.log 2>&1; echo "fixtures rc=$?"
  tar czf $OUT/fixtures.tgz $(ls -d results/fixtures/runs/*/*/*/*/*/*/{report.nsys-rep,report.sqlite,run.json,metrics.json,stats} 2>/dev/null) results/fixtures/tables
fi
snakemake --unlock $CONF > /dev/null 2>&1   # a previous call cut short may have left the lock
# SIGTERM lets running jobs finish (a 300 s time limit can outlast the budget): -k ends it
timeout -k 60 $((BUDGET - 90)) snakemake all $CONF --cores 16 --resources gpu=$GPUS --keep-going --rerun-incomplete \
  --set-threads time_untraced=$THREADS profile_nsys=$THREADS device_peaks=$THREADS ${EXTRA:-} > $OUT/sweep.log 2>&1; rc=$?; echo "sweep rc=$rc"
grep -E "steps \(" $OUT/sweep.log | tail -1
# SWEEP_ONLY=1: stop here; a next call on the still-warm machine continues the sweep
[ "${SWEEP_ONLY:-0}" = 1 ] && { grep -c "profile_nsys" $OUT/sweep.log; exit 0; }
if [ $rc != 0 ]; then
  snakemake regenerate $CONF --cores 16 --forceall --config regenerate=1 > $OUT/regenerate.log 2>&1; echo "regenerate rc=$?"
fi
snakemake --report $RES/report.html $CONF ${REPORT_ARGS:-} > $OUT/report.log 2>&1; echo "report rc=$?"
cat $RES/summary.md | head -${SUMMARY_LINES:-400}
python - <<'PY'
import pandas as pd
import os
res = os.environ.get("RES", "results")
r = pd.read_csv(f"{res}/tables/runs.csv")
print(r.groupby("status").size().to_string())
bad = r[~r["status"].isin(["ok", "unsupported"])]
print(bad[["model", "variant", "batch", "status", "reason"]].to_string(index=False))
s = pd.read_csv(f"{res}/tables/speedups.csv")
cols = ["model", "batch", "variant", "repeats_ok", "wall_time_per_iter_ms", "speedup_wall", "speedup_wall_lo",
        "speedup_wall_hi", "speedup_gpu", "cv_wall", "noisy", "kernel_reduction", "compilation_latency_s", "compression_ratio"]
print(s[cols].to_string(index=False, float_format=lambda v: f"{v:.3g}"))
PY
cat $RES/device/peaks.json
tar czf $OUT/results.tgz --exclude='*.svg' $RES/tables $RES/figures $RES/summary.md $RES/report.html $RES/device \
  $(ls $RES/runs/*/*/*/*/*/*/{run.json,unsupported.json,metrics.json,kernels.csv} 2>/dev/null) 2>/dev/null
ls -la $OUT
