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
THREADS=${THREADS:-16}   # threads per profiling job (16 = the whole host: exclusive measurement)
if [ "${FIXTURES:-0}" = 1 ]; then
  snakemake all --configfile config/fixtures.yaml --cores 8 --resources gpu=1 --keep-going > $OUT/fixtures.log 2>&1; echo "fixtures rc=$?"
  tar czf $OUT/fixtures.tgz $(ls -d results/fixtures/runs/*/*/*/*/*/*/{report.nsys-rep,report.sqlite,run.json,metrics.json,stats} 2>/dev/null) results/fixtures/tables
fi
timeout $((BUDGET - 90)) snakemake all --cores 16 --resources gpu=1 --keep-going --rerun-incomplete \
  --set-threads profile_nsys=$THREADS device_peaks=$THREADS ${EXTRA:-} > $OUT/sweep.log 2>&1; rc=$?; echo "sweep rc=$rc"
grep -E "steps \(" $OUT/sweep.log | tail -1
if [ $rc != 0 ]; then
  snakemake regenerate --cores 16 --forceall --config regenerate=1 > $OUT/regenerate.log 2>&1; echo "regenerate rc=$?"
fi
snakemake --report results/report.html ${REPORT_ARGS:-} > $OUT/report.log 2>&1; echo "report rc=$?"
cat results/summary.md
python - <<'PY'
import pandas as pd
s = pd.read_csv("results/tables/speedups.csv")
cols = ["model", "batch", "variant", "repeats_ok", "wall_time_per_iter_ms", "speedup_wall", "speedup_wall_lo",
        "speedup_wall_hi", "speedup_gpu", "cv_wall", "noisy", "kernel_reduction", "compilation_latency_s", "compression_ratio"]
print(s[cols].to_string(index=False, float_format=lambda v: f"{v:.3g}"))
PY
cat results/device/peaks.json
tar czf $OUT/results.tgz results/tables results/figures results/summary.md results/report.html results/device \
  $(ls results/runs/*/*/*/*/*/*/{run.json,metrics.json,kernels.csv} 2>/dev/null) 2>/dev/null
ls -la $OUT
