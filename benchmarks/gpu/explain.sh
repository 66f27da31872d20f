#!/usr/bin/env bash
# The slowdown explanations and the attribution checked on a GPU host, one stage after
# another, each through `snakemake all` and then its checker (logs in explain-*.log):
#   real_inf    config/explain-real.yaml, inference: results/explain-real-inference
#   gap         config/gap_cases.yaml's known-cause cases (BERT left to the real suite):
#               results/gap-cases, benchmarks/gap_cases.py
#   attr        examples/attribution/config.yaml: results/attribution, its check.py
#   real_train  config/explain-real.yaml, training: results/explain-real-train
#   bash benchmarks/gpu/explain.sh [STAGE ...]        (all four by default, in that order)
# Each stage stops after STAGE_S seconds (default 600), or <stage>_S where set (gap_S=240).
# PARALLEL=1: the stages run at once, as separate sweeps; they share the GPU's slot lock and
# the host gate (fusionlab.jobs.slots, host_gate), so a measurement still runs alone on the
# GPU and the host while the others' compiles, exports and tables fill the time between.
# RECORDS=benchmarks/results/h100-explain-partial: the gap and attribution sweeps go on from
# the records kept there (records-<results folder>.tar.xz, unpacked by `fusionlab restore`
# into a results folder not yet there; the workflow takes a run kept without its report as
# recorded); records of another GPU model than this machine's are left out.
set -u
STAGE_S=${STAGE_S:-600}
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-/tmp/inductor-explain} PYTHONUNBUFFERED=1
SMK="snakemake --cores $(nproc) --scheduler greedy --keep-going --rerun-incomplete"
# sweeps at once in one folder: their results folders differ, Snakemake's folder lock is off
[ "${PARALLEL:-0}" = 1 ] && SMK="$SMK --nolock"
{ date -u; nvidia-smi -L; nsys --version; python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } 2>&1
restore() {   # restore RESULTS: the kept records of that results folder, if any, and only on their GPU model
  local a=${RECORDS:-}/records-$(basename "$1").tar.xz
  if [ -n "${RECORDS:-}" ] && [ -f "$a" ] && [ ! -e "$1" ]; then
    python -m fusionlab.cli restore "$1" "$a"
    python -c "import sys; from fusionlab.plan import machine, restore as r; o = r.other_gpu(r.run_dirs(sys.argv[1]), machine.gpu_names()); o and print(f'{sys.argv[1]}: records of {o[1]}, not this GPU: left out, the sweep runs afresh'); sys.exit(3 if o else 0)" "$1" || rm -rf "$1"
  fi
}
run_stage() {   # run_stage STAGE: restore, sweep, check; a summary on stdout
  local stage=$1 t0 limit
  t0=$(date +%s)
  case $stage in
    # the real-network sweeps run afresh: their kept records predate the run-level
    # attribution's loop ranges and layout-kernel pooling, which a restored run keeps as recorded
    real_inf) ;; gap) restore results/gap-cases ;;
    attr) restore results/attribution ;; real_train) restore results/explain-real-train ;;
  esac
  limit=${stage}_S; limit=${!limit:-$STAGE_S}
  case $stage in
    real_inf)
      timeout -s INT -k 30 "$limit" $SMK all --configfile config/explain-real.yaml \
        --config mode=inference results=results/explain-real-inference > explain-$stage.log 2>&1
      python benchmarks/explain_real.py results/explain-real-inference >> explain-$stage.log 2>&1 ;;
    gap)
      python -c "import yaml; c = yaml.safe_load(open('config/gap_cases.yaml')); c['models'] = [m for m in c['models'] if m != 'bert']; c['import_models'].pop('bert'); c.pop('sizes', None); yaml.safe_dump(c, open('/tmp/gap_cases_small.yaml', 'w'))"
      timeout -s INT -k 30 "$limit" $SMK all --configfile /tmp/gap_cases_small.yaml > explain-$stage.log 2>&1
      python benchmarks/gap_cases.py results/gap-cases /tmp/gap_cases_small.yaml >> explain-$stage.log 2>&1 ;;
    attr)
      timeout -s INT -k 30 "$limit" $SMK all results/attribution/tables/attribution.csv \
        --configfile examples/attribution/config.yaml > explain-$stage.log 2>&1
      python examples/attribution/check.py results/attribution >> explain-$stage.log 2>&1 ;;
    real_train)
      timeout -s INT -k 30 "$limit" $SMK all --configfile config/explain-real.yaml \
        --config mode=train results=results/explain-real-train > explain-$stage.log 2>&1
      python benchmarks/explain_real.py results/explain-real-train >> explain-$stage.log 2>&1 ;;
  esac
  echo "stage $stage: rc $? after $(( $(date +%s) - t0 )) s"
  grep -E "steps \(" explain-$stage.log | tail -1
  tail -4 explain-$stage.log
}
stages=${@:-real_inf gap attr real_train}
if [ "${PARALLEL:-0}" = 1 ]; then
  for stage in $stages; do run_stage "$stage" > explain-$stage.summary 2>&1 & done
  wait
  cat explain-*.summary
else
  for stage in $stages; do run_stage "$stage"; done
fi
