#!/usr/bin/env bash
# The source texts' claims on a GPU host: `snakemake reproduction` with the full
# config/reproduction.yaml, then the page, its figure, the sweep's tables, the claims'
# own measurements and the logs copied flat into OUTDIR (7 files).
#   bash benchmarks/gpu/reproduction.sh OUTDIR [NGPU]
# NGPU (default 1): the GPUs the sweep measures on (CUDA_VISIBLE_DEVICES 0..NGPU-1 unless
# set); each takes jobs_per_gpu profiling jobs in flight (--resources gpu=NGPU x jobs_per_gpu).
# About 7-9 minutes on one H100 (docs/reproduction.md, "Time"). The workflow stops after
# BUDGET seconds (default 540); a second call on the same machine goes on where it stopped.
set -u
OUT=${1:?usage: bash benchmarks/gpu/reproduction.sh OUTDIR [NGPU]}
NGPU=${2:-1}
BUDGET=${BUDGET:-540}
CONF=config/reproduction.yaml
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOG=$OUT/reproduction.log
[ -f .device-kit/setup.sh ] && source .device-kit/setup.sh
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-/tmp/inductor-cache} \
  PYTHONUNBUFFERED=1
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-$(seq -s, 0 $((NGPU - 1)))}
read -r RES PER < <(python -c "import yaml; c = yaml.safe_load(open('$CONF')); print(c['results'], c.get('jobs_per_gpu', 4))")
{
  date -u; nvidia-smi -L; nsys --version; ncu --version | tail -1
  python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  echo "GPUs $CUDA_VISIBLE_DEVICES, --resources gpu=$((NGPU * PER)), --cores $(nproc), budget ${BUDGET} s"
} > "$LOG" 2>&1
# gelu's cuda_seed kernel built once, beside the first jobs (the others wait on its lock)
python -c "from fusionlab.experiments.kernels import seed; seed.cuda_module()" > "$OUT/cuda_build.log" 2>&1 &
snakemake --unlock --configfile $CONF > /dev/null 2>&1   # a call cut short leaves the lock
t0=$(date +%s)
timeout -k 30 "$BUDGET" snakemake reproduction --configfile $CONF --cores "$(nproc)" \
  --resources gpu=$((NGPU * PER)) --scheduler greedy --keep-going --rerun-incomplete >> "$LOG" 2>&1
rc=$?
wait
echo "snakemake rc=$rc after $(( $(date +%s) - t0 )) s" | tee -a "$LOG"
grep -E "steps \(" "$LOG" | tail -1
python benchmarks/run_overhead.py "$RES" 2>&1 | tail -25 >> "$LOG"
rm -f "$OUT/cuda_build.log"
for f in reproduction.md figures/reproduction/all.png tables/speedups.csv tables/runs.csv \
         reproduction/claims.json logs/reproduction_claims.log; do
  if [ -f "$RES/$f" ]; then cp "$RES/$f" "$OUT/"; else echo "missing: $RES/$f" | tee -a "$LOG"; fi
done
if [ -f "$RES/reproduction.md" ] && [ $rc = 0 ]; then
  grep -E "^Verdicts:" "$RES/reproduction.md"; grep -E "^[a-z0-9_]+: " "$RES/logs/reproduction.log"
else
  echo "not finished (rc $rc): call again on the same machine to go on"
fi
ls -la "$OUT"
exit $rc
