#!/usr/bin/env bash
# One H100: DRAM bytes with their spread, the ncu step's cost and ncu by hand (docs/ncu.md).
#   bash benchmarks/gpu/bytes.sh OUTDIR          (`source .device-kit/setup.sh` done)
# Stages, in order, each skipped once the 8.5-minute budget (BUDGET_S) cannot hold it
# (stages.txt says which ran); expected about 8 minutes:
#   cost   benchmarks/ncu_cost.py: `snakemake all` with the step (default passes) and without
#          it, each with empty TORCHINDUCTOR_CACHE_DIR / TRITON_CACHE_DIR. GRID=small (default,
#          about 4 min): softmax, pointwise_heavy, lstm_cell at batch 1024, eager and compile,
#          one repeat. GRID=full: config.yaml's grid plus softmax and lstm_cell (about 25 min:
#          give BUDGET_S=2400).
#   hand   ncu --csv (caches not flushed, 3 iterations) on a plain script of softmax eager at
#          1024 (16.8 MB a tensor: fits the 50 MB L2) and 16384 (268 MB: does not), beside the
#          step's steady bytes of the same configurations (about 1 min).
#   bytes  cold and steady DRAM bytes (passes steady,cold; lstm_cell and pointwise_heavy 1024
#          also roofline) for softmax 64/1024/16384, pointwise_heavy 128/1024/4096, lstm_cell
#          1024, eager and compile (about 3 min).
#   figure the per-kernel roofline of lstm_cell and pointwise_heavy from their roofline pass.
# OUTDIR gets at most 8 files: summary.md, kernel_roofline_<model>.png, ncu_cost.json,
# hand.json, bytes.csv; the work folder (WORK, default /tmp/fusionlab-bytes) keeps the rest.
set -u
OUT=${1:?usage: bytes.sh OUTDIR}
cd "$(dirname "$0")/../.."
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=${WORK:-/tmp/fusionlab-bytes}
BUDGET_S=${BUDGET_S:-510}
GRID=${GRID:-small}
rm -rf "$WORK" && mkdir -p "$WORK/bytes"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
T0=$(date +%s)
left() { echo $(( BUDGET_S - ($(date +%s) - T0) )); }
stage() { echo "$(( $(date +%s) - T0 )) s: $*" >> "$WORK/stages.txt"; }
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  ncu --version | tail -1
  python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"; } > "$WORK/versions.txt" 2>&1

# cost: the step on and off
if [ "$GRID" = full ]; then
  CFG=(config.yaml "$WORK/extra.yaml")
  printf 'models: [pointwise_heavy, matmul_heavy, mlp, softmax, lstm_cell]\n' > "$WORK/extra.yaml"
  COST_T=$(( BUDGET_S / 2 - 30 ))
else
  CFG=(config.yaml "$WORK/small.yaml")
  printf 'models: [softmax, pointwise_heavy, lstm_cell]\nbatch_sizes: [1024]\nrepeats: 1\nwarmup_iters: 20\nmeasure_iters: 50\n' > "$WORK/small.yaml"
  COST_T=130
fi
stage "cost: start ($GRID grid, each sweep stopped at $COST_T s)"
timeout $(( 2 * COST_T + 150 )) python benchmarks/ncu_cost.py --configfile "${CFG[@]}" --out "$WORK/cost" \
  --cores 16 --timeout "$COST_T" > "$WORK/cost.txt" 2>&1
stage "cost: end $(tail -1 "$WORK/cost.txt")"
cp "$WORK/cost/ncu_cost.json" "$OUT/" 2>/dev/null

# hand: ncu --csv on a plain script, beside the step's steady bytes
M="dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,lts__t_bytes.sum"
echo "{" > "$WORK/hand.json"
for b in 1024 16384; do
  [ "$(left)" -gt 150 ] || { stage "hand $b: skipped (budget)"; continue; }
  ncu --csv --page raw --print-units base --cache-control none --clock-control none --nvtx --nvtx-include "measure/" \
    --metrics $M python benchmarks/bytes.py plain --model softmax --batch $b --iters 3 > "$WORK/hand_$b.csv" 2> "$WORK/hand_$b.log"
  H=$(python benchmarks/bytes.py hand --csv "$WORK/hand_$b.csv" --iters 3)
  python benchmarks/bytes.py profile --out "$WORK/bytes/softmax_eager_$b" --model softmax --variant eager --batch $b \
    --passes steady,cold > "$WORK/bytes/softmax_eager_$b.txt" 2>&1
  P=$(cat "$WORK/bytes/softmax_eager_$b.txt" | tail -1)
  echo "\"softmax eager $b\": {\"by_hand\": $H, \"step\": $P}," >> "$WORK/hand.json"
  stage "hand $b: done"
done
echo "\"end\": null}" >> "$WORK/hand.json"
cp "$WORK/hand.json" "$OUT/"

# bytes: cold and steady for the named configurations
for mb in softmax:64 softmax:1024 softmax:16384 pointwise_heavy:128 pointwise_heavy:1024 pointwise_heavy:4096 \
          lstm_cell:1024; do
  m=${mb%%:*}; b=${mb##*:}
  for v in eager compile; do
    d="$WORK/bytes/${m}_${v}_$b"
    [ -f "$d/traffic.json" ] && continue
    [ "$(left)" -gt 25 ] || { stage "bytes $m $v $b: skipped (budget)"; continue; }
    passes=steady,cold
    [ "$b" = 1024 ] && [ "$m" != softmax ] && passes=steady,cold,roofline
    python benchmarks/bytes.py profile --out "$d" --model $m --variant $v --batch $b --passes $passes \
      > "$d.txt" 2>&1
    stage "bytes $m $v $b ($passes): $(tail -1 "$d.txt" | cut -c1-200)"
  done
done

# figure: the per-kernel roofline from the roofline passes
python - "$WORK" "$OUT" <<'PY' >> "$WORK/stages.txt" 2>&1
import glob, json, os, sys
import pandas as pd
from fusionlab.analysis.report.figures.kernel_roofline import kernel_roofline
from fusionlab.analysis.sweep import roofline
work, out = sys.argv[1:]
frames, runs = [], []
for j in glob.glob(f"{work}/bytes/*/traffic.json"):
    r = json.load(open(j))
    k = pd.read_csv(os.path.join(os.path.dirname(j), "traffic.csv"))
    keys = dict(model=r["model"], variant=r["variant"], batch=r["batch"], size="default", mode="inference",
                dtype="float32", backend="ncu", device="cuda")
    frames.append(k.assign(**keys)); runs.append({**keys, **r})
k = pd.concat(frames, ignore_index=True)
rl = roofline.kernel_roofline(k)
rl.to_csv(f"{out}/kernel_roofline.csv", index=False)
t = {"kernels": k, "runs": pd.DataFrame(runs), "speedups": pd.DataFrame()}
for m in ("lstm_cell", "pointwise_heavy"):
    try:
        kernel_roofline(t, m).savefig(f"{out}/kernel_roofline_{m}.png", dpi=150)
        print(f"figure {m}: written")
    except Exception as e:
        print(f"figure {m}: {e}")
pd.DataFrame(runs).to_csv(f"{out}/bytes.csv", index=False)
PY
stage "end"
python benchmarks/bytes.py summary --work "$WORK" --out "$OUT/summary.md"
ls "$OUT"
