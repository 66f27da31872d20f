#!/usr/bin/env bash
# The Nsight Compute step's cost and the bytes it measures, as jobs of a multi-GPU host
# (docs/ncu.md; `source .device-kit/setup.sh` done):
#   bash benchmarks/gpu/ncu_cost.sh OUTDIR JOB [GPUS] [CORES]
# JOB:
#   with     `snakemake all` of config.yaml's grid plus softmax and lstm_cell with the step
#            (its default passes), empty TORCHINDUCTOR_CACHE_DIR / TRITON_CACHE_DIR
#            -> OUTDIR/with/ncu_cost.json
#   without  the same sweep with the step off -> OUTDIR/without/ncu_cost.json
#   ratio    the two combined -> OUTDIR/ncu_cost.json (prints the ratio)
#   bytes    one GPU: the roofs fixture (benchmarks/gpu/ncu_fixtures.py roofs), ncu by hand
#            on softmax 1024 / 16384 (a plain script, caches not flushed) beside the
#            step's steady bytes, cold and steady DRAM bytes (median and range) of softmax
#            64/1024/16384, pointwise_heavy 128/1024/4096 and lstm_cell 1024, eager and
#            compile, the roofline pass of lstm_cell and pointwise_heavy at 1024, and the
#            per-kernel roofline PNGs -> OUTDIR/bytes/
#   roofs    one GPU, bytes' first part alone: the roofs fixture, ncu by hand on softmax
#            1024 / 16384 and the tensor counters (benchmarks/gpu/tensor_counters.py)
#            -> OUTDIR/roofs/ (about 3 minutes)
# GPUS: the GPUs (CUDA_VISIBLE_DEVICES, e.g. 0 or 0,1); CORES: the cores (taskset -c,
# e.g. 0-31; default 16 per GPU from GPU x 16). `with` and `without` run at the same time
# on different GPUs; `bytes` runs after `with` (ncu's counters serve one process a host).
# Each job stops itself before STOP_S (default 690 s: 11.5 minutes). DRY=1 prints the
# commands and runs the snakemake dry run (-n) instead (a CPU check).
set -u
OUT=${1:?usage: ncu_cost.sh OUTDIR with|without|ratio|bytes [GPUS] [CORES]}
JOB=${2:?usage: ncu_cost.sh OUTDIR with|without|ratio|bytes [GPUS] [CORES]}
cd "$(dirname "$0")/../.."
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
GPUS=${3:-0}
first=${GPUS%%,*}
n=$(echo "$GPUS" | tr ',' '\n' | wc -l)
CORES=${4:-$(( first * 16 ))-$(( first * 16 + 16 * n - 1 ))}
NCORES=$(( $(echo "$CORES" | cut -d- -f2) - $(echo "$CORES" | cut -d- -f1) + 1 ))
STOP_S=${STOP_S:-690}
DRY=${DRY:-0}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} CUDA_VISIBLE_DEVICES=$GPUS
WORK=${WORK:-/tmp/fusionlab-ncu-cost-$JOB}
run() { echo "+ $*"; [ "$DRY" = 1 ] || "$@"; }
versions() {
  { nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    ncu --version | tail -1
    python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"; } 2>&1
}

sweep() {   # $1: on | off; the grid: config.yaml's models plus softmax and lstm_cell
  local side=$1 dir=$OUT/$JOB
  mkdir -p "$dir"
  printf 'models: [pointwise_heavy, matmul_heavy, mlp, softmax, lstm_cell]\n' > "$dir/grid.yaml"
  versions > "$dir/versions.txt"
  echo "GPUS=$GPUS CORES=$CORES" >> "$dir/versions.txt"
  if [ "$DRY" = 1 ]; then
    echo "+ taskset -c $CORES python benchmarks/ncu_cost.py --configfile config.yaml $dir/grid.yaml --out $WORK --cores $NCORES --timeout $STOP_S --side $side"
    printf 'results: %s/results\nncu:\n  enabled: %s\n' "$WORK" "$([ "$side" = on ] && echo true || echo false)" > "$dir/overlay.yaml"
    snakemake all -n --cores "$NCORES" --configfile config.yaml "$dir/grid.yaml" "$dir/overlay.yaml" 2>&1 | tail -25
    return
  fi
  rm -rf "$WORK" && mkdir -p "$WORK"
  taskset -c "$CORES" python benchmarks/ncu_cost.py --configfile config.yaml "$dir/grid.yaml" --out "$WORK" \
    --cores "$NCORES" --timeout "$STOP_S" --side "$side" | tee "$dir/cost.txt"
  cp "$WORK/ncu_cost.json" "$dir/"
  cp "$WORK/$side.log" "$dir/snakemake.log" 2>/dev/null
}

roofs_and_hand() {   # $1: the output folder; T0, stage() and run() from the caller
  local dir=$1
  # the roofs: ncu's peak-sustained metrics on this GPU (tests/test_roofs.py reads them)
  run taskset -c "$CORES" python benchmarks/gpu/ncu_fixtures.py roofs --out "$dir/ncu_h100_roofs"
  stage "roofs fixture"
  # ncu by hand: a plain script, caches not flushed, 3 iterations
  M="dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,lts__t_bytes.sum"
  for b in 1024 16384; do
    [ "$DRY" = 1 ] && echo "+ taskset -c $CORES ncu --csv --page raw --cache-control none ... python benchmarks/bytes.py plain --model softmax --batch $b --iters 3 > WORK/hand_$b.csv"
    run taskset -c "$CORES" ncu --csv --page raw --print-units base --cache-control none --clock-control none \
      --nvtx --nvtx-include "measure/" --metrics $M \
      python benchmarks/bytes.py plain --model softmax --batch $b --iters 3 > "$WORK/hand_$b.csv" 2> "$WORK/hand_$b.log"
    [ "$DRY" = 1 ] || python benchmarks/bytes.py hand --csv "$WORK/hand_$b.csv" --iters 3 > "$dir/hand_$b.json"
    stage "hand $b"
  done
  # which counters count tensor-core FLOPs: a matmul's 2 N^3 against every tensor counter
  run taskset -c "$CORES" python benchmarks/gpu/tensor_counters.py --out "$dir/tensor_counters"
  stage "tensor counters"
}

bytes() {
  local dir=$OUT/bytes T0 left
  mkdir -p "$dir"
  T0=$(date +%s)
  left() { echo $(( STOP_S - ($(date +%s) - T0) )); }
  stage() { echo "$(( $(date +%s) - T0 )) s: $*" | tee -a "$dir/stages.txt"; }
  versions > "$dir/versions.txt"
  [ "$DRY" = 1 ] || rm -rf "$WORK"
  mkdir -p "$WORK/bytes"
  roofs_and_hand "$dir"
  # cold and steady bytes (and the roofline pass at 1024 for lstm_cell and pointwise_heavy),
  # two processes in flight: one starts while the other holds the counters
  : > "$WORK/jobs.txt"
  for mb in softmax:1024 softmax:16384 lstm_cell:1024 pointwise_heavy:1024 softmax:64 pointwise_heavy:128 \
            pointwise_heavy:4096; do
    m=${mb%%:*}; b=${mb##*:}
    passes=steady,cold
    [ "$b" = 1024 ] && [ "$m" != softmax ] && passes=steady,cold,roofline
    for v in eager compile; do
      echo "$m $v $b $passes" >> "$WORK/jobs.txt"
    done
  done
  if [ "$DRY" = 1 ]; then
    sed 's|^\(\S*\) \(\S*\) \(\S*\) \(\S*\)$|+ python benchmarks/bytes.py profile --out WORK/bytes/\1_\2_\3 --model \1 --variant \2 --batch \3 --passes \4|' "$WORK/jobs.txt"
  else
    export WORK STOP_S T0
    xargs -P 2 -L 1 bash -c 'd=$WORK/bytes/$0_$1_$2
      [ $(( STOP_S - ($(date +%s) - T0) )) -gt 40 ] || { echo "$0 $1 $2: skipped (budget)"; exit 0; }
      timeout $(( STOP_S - ($(date +%s) - T0) - 10 )) taskset -c '"$CORES"' python benchmarks/bytes.py profile \
        --out "$d" --model $0 --variant $1 --batch $2 --passes $3 > "$d.txt" 2>&1
      echo "$0 $1 $2 ($3): $(tail -1 "$d.txt" | cut -c1-200)"' < "$WORK/jobs.txt" >> "$dir/stages.txt" 2>&1
  fi
  stage "bytes"
  # the per-kernel roofline from the roofline passes, and the table of bytes
  if [ "$DRY" = 0 ]; then
    cp "$dir"/hand_*.json "$WORK/" 2>/dev/null
    python benchmarks/bytes.py tables --work "$WORK" --out "$dir" >> "$dir/stages.txt" 2>&1
    python benchmarks/bytes.py summary --work "$WORK" --out "$dir/summary.md"
  fi
  stage "end"
}

case "$JOB" in
  with) sweep on ;;
  without) sweep off ;;
  ratio) run python benchmarks/ncu_cost.py ratio --on "$OUT/with/ncu_cost.json" --off "$OUT/without/ncu_cost.json" \
           --out "$OUT/ncu_cost.json" ;;
  bytes) bytes ;;
  roofs) dir=$OUT/roofs; mkdir -p "$dir" "$WORK"; T0=$(date +%s)
         stage() { echo "$(( $(date +%s) - T0 )) s: $*" | tee -a "$dir/stages.txt"; }
         versions > "$dir/versions.txt"; roofs_and_hand "$dir"
         [ "$DRY" = 1 ] || cp "$dir"/hand_*.json "$WORK/" 2>/dev/null ;;
  *) echo "JOB: with | without | ratio | bytes | roofs"; exit 2 ;;
esac
