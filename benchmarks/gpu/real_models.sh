#!/usr/bin/env bash
# The real networks (config/real-models.yaml) through `snakemake all` on the GPUs it is
# given, in stages that each finish a useful part of the grid, under one deadline; then the
# audit. Packs tables, figures, summary and every run's records and rule times
# (benchmarks/*.tsv), and what ncu recorded (ncu.json, ncu_run.json, ncu.log), into
# OUTDIR/real-models.tgz (no .nsys-rep, .sqlite or .ncu-rep).
#   CUDA_VISIBLE_DEVICES=0,1 DEADLINE_S=1200 bash benchmarks/gpu/real_models.sh OUTDIR [KEY=VALUE ...]
# KEY=VALUE: config values every stage gets (one --config list), e.g. "models=[llama_block,rmsnorm_mlp]"
# REAL_MODELS_RESULTS: the results folder (default results/real-models, the config's)
# STAGES: the stages to run, in order (default "bf16 bf16-autotune all"; "all" alone keeps
#   every GPU busy to the end on a machine with several)
# Stages (each a `snakemake all` of the same results folder: a later one adds runs):
#   1. bfloat16 inference (eager, compile, compile_reduce_overhead) and amp_bfloat16
#      training (eager, compile)
#   2. bfloat16 inference with compile_max_autotune_no_cudagraphs too
#   3. the whole config (adds float32 inference)
# At DEADLINE_S (default: none) the running stage is stopped and the tables, figures and
# summary are regenerated from the runs recorded so far (`snakemake regenerate`); stages.txt
# in OUTDIR says which stages finished. The pack is remade after every stage; from another
# shell, `real_models.sh --pack OUTDIR` packs what is recorded now, a stage still running
# too (a machine about to go back loses nothing that finished). A sweep goes on from packs
# after `fusionlab restore RESULTS PACK...` (fusionlab/plan/restore.py): it drops the runs
# and Nsight Compute records that were still going or killed when packed, and gives every
# file one time, so that Snakemake measures no recorded run again.
set -u
RES=${REAL_MODELS_RESULTS:-results/real-models}   # the results folder, every stage's and the pack's
CFG=config/real-models.yaml
cd "$(dirname "$0")/../.."
pack() {   # OUTDIR/real-models.tgz: tables, figures, summary and every run's records so far,
  # written under a name of this process's own and renamed: a `--pack` beside the stage's
  # pack never mixes the two, and the tgz a reader finds is always whole
  local part="$1/real-models.tgz.part.$$"
  tar czf "$part" --exclude='*.svg' $(ls -d $RES/tables $RES/figures $RES/summary.md \
    $RES/summary.html $RES/device $RES/logs 2>/dev/null) \
    $(ls -d $RES/runs/*/*/*/*/*/*/{run.json,timing.json,unsupported.json,metrics.json,kernels.csv,stats,inductor,ncu.json,ncu_run.json,ncu.log,traffic.json,traffic.csv,benchmarks} 2>/dev/null) 2>/dev/null
  mv "$part" "$1/real-models.tgz"
}
if [ "${1:-}" = "--pack" ]; then
  mkdir -p "${2:?usage: real_models.sh --pack OUTDIR}" && pack "$(cd "$2" && pwd)"; exit; fi
OUT=${1:?usage: real_models.sh OUTDIR [KEY=VALUE ...]}; shift
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-/tmp/inductor-real} PYTHONUNBUFFERED=1
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
T0=$(date +%s)
DEADLINE_S=${DEADLINE_S:-0}
left() { [ "$DEADLINE_S" -gt 0 ] && echo $(( DEADLINE_S - ($(date +%s) - T0) )) || echo 999999; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  nsys --version
  python -c "import torch, triton, transformers, torchvision, timm; print('torch', torch.__version__, 'triton', triton.__version__, 'transformers', transformers.__version__, 'torchvision', torchvision.__version__, 'timm', timm.__version__)"
} > "$OUT/versions.txt" 2>&1

stage() {   # stage NAME [KEY=VALUE ...]: one `snakemake all` until done or the deadline
  local name=$1 t=$(date +%s) rc
  shift
  if [ "$(left)" -le 30 ]; then echo "$name: not started (deadline)" >> "$OUT/stages.txt"; return 1; fi
  timeout --signal=TERM --kill-after=30 "$(left)" snakemake all --configfile $CFG --cores "$(nproc)" \
    --scheduler greedy --keep-going --config "results=$RES" "$@" >> "$OUT/real-models.log" 2>&1
  rc=$?
  echo "$name: rc $rc in $(( $(date +%s) - t )) s" >> "$OUT/stages.txt"
  pack "$OUT"
  return $rc
}
STAGES=${STAGES:-bf16 bf16-autotune all}
staged() {   # staged NAME [KEY=VALUE ...]: stage NAME if STAGES names it
  case " $STAGES " in *" $1 "*) stage "$@" ;; *) return 0 ;; esac
}
BF16='dtype_by_mode={inference: [bfloat16], train: [amp_bfloat16]}'
staged bf16 "$BF16" 'variants_by_mode={inference: [eager, compile, compile_reduce_overhead], train: [eager, compile]}' "$@" \
  && staged bf16-autotune "$BF16" "$@" \
  && staged all "$@"
full=$?
if [ $full -ne 0 ]; then   # tables, figures and summary of the runs recorded so far
  snakemake --unlock --configfile $CFG --config "results=$RES" > /dev/null 2>&1
  timeout 300 snakemake regenerate -R tables fusion_ledger headline --configfile $CFG --cores "$(nproc)" \
    --scheduler greedy --config regenerate=1 "results=$RES" "$@" >> "$OUT/real-models.log" 2>&1
  echo "regenerate: rc $?" >> "$OUT/stages.txt"
fi
echo "total $(( $(date +%s) - T0 )) s" >> "$OUT/stages.txt"
python -m fusionlab.cli audit $RES > "$OUT/audit.txt" 2>&1; tail -3 "$OUT/audit.txt"
pack "$OUT"
cat "$OUT/stages.txt"
