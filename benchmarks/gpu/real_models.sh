#!/usr/bin/env bash
# The real networks (config/real-models.yaml) through `snakemake all` on the GPUs it is
# given, then the audit; packs tables, figures, summary and every run's records into
# OUTDIR/real-models.tgz (no .nsys-rep or .sqlite).
#   CUDA_VISIBLE_DEVICES=2,3 bash benchmarks/gpu/real_models.sh OUTDIR [--config KEY=VALUE ...]
set -u
OUT=${1:?usage: real_models.sh OUTDIR [snakemake --config values]}; shift
cd "$(dirname "$0")/../.."
RES=results/real-models
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-/tmp/inductor-real} PYTHONUNBUFFERED=1
mkdir -p "$OUT"
start=$(date +%s)
snakemake all --configfile config/real-models.yaml --cores "$(nproc)" --scheduler greedy "$@" > "$OUT/real-models.log" 2>&1
echo "sweep rc=$? in $(( $(date +%s) - start )) s" | tee -a "$OUT/real-models.log"
python -m fusionlab.cli audit $RES > "$OUT/audit.txt" 2>&1; tail -3 "$OUT/audit.txt"
tar czf "$OUT/real-models.tgz" --exclude='*.svg' $RES/tables $RES/figures $RES/summary.md $RES/summary.html \
  $RES/device $RES/logs \
  $(ls -d $RES/runs/*/*/*/*/*/*/{run.json,timing.json,unsupported.json,metrics.json,kernels.csv,stats} 2>/dev/null) 2>/dev/null
