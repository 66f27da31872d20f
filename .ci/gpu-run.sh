#!/usr/bin/env bash
# What the GPU machine runs (through the device tool): the default sweep under nsys, the
# fixture runs, and the fidelity benchmark. Results go to $OUT.
set -u
source .device-kit/setup.sh
export TORCHINDUCTOR_CACHE_DIR=/tmp/inductor-cache PYTHONUNBUFFERED=1
nvidia-smi -L; nsys --version
BUDGET=${BUDGET:-540}
start=$(date +%s)
if [ "${FIXTURES:-1}" = 1 ]; then
  snakemake all --configfile config/fixtures.yaml --cores 8 --resources gpu=1 --keep-going > $OUT/fixtures.log 2>&1; echo "fixtures rc=$?"
  tar czf $OUT/fixtures.tgz $(ls -d results/fixtures/runs/*/*/*/*/*/*/{report.nsys-rep,report.sqlite,run.json,metrics.json,stats} 2>/dev/null) results/fixtures/tables
fi
timeout $((BUDGET - 60)) snakemake all --cores 12 --resources gpu=1 --keep-going --rerun-incomplete \
  > $OUT/sweep.log 2>&1; echo "sweep rc=$?"
grep -E "error|Error|steps \(" $OUT/sweep.log | tail -5
python - <<'PY'
import pandas as pd
r = pd.read_csv("results/tables/runs.csv"); s = pd.read_csv("results/tables/speedups.csv")
cols = ["model", "variant", "batch", "status", "wall_time_per_iter_ms", "gpu_time_per_iter_ms",
        "kernels_per_iter", "launch_overhead_ratio", "gpu_busy_fraction"]
print(r[cols].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
print(s[s.variant != "eager"][["model", "batch", "variant", "speedup_wall", "speedup_gpu", "kernel_reduction"]].to_string(index=False, float_format=lambda v: f"{v:.3g}"))
PY
tar czf $OUT/results.tgz results/tables results/figures $(ls -d results/runs/*/*/*/*/*/* 2>/dev/null | sed 's|$|/run.json|') $(ls results/runs/*/*/*/*/*/*/metrics.json 2>/dev/null) 2>/dev/null
ls -la $OUT
