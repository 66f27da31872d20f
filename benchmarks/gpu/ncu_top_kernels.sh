#!/usr/bin/env bash
# GPU machine (one GPU, `source .device-kit/setup.sh` done): Nsight Compute on the kernels
# that carry the time (ncu.top_kernels, docs/ncu.md) checked on real networks.
#   bash benchmarks/gpu/ncu_top_kernels.sh OUTDIR        (at most 8 minutes on one H100: the sweep capped at 300 s, the unfiltered pass at 150 s)
# 1. `snakemake all` of GPT-2 (batch 8) and the Llama block (batch 1), bfloat16 inference,
#    eager and compile, one repeat, ncu on with top_kernels 5 (few enough that the filter
#    leaves kernels out of every run), results in OUTDIR/results.
# 2. For each run: the names its nsys kernel table selected (ncu.json `selection`) against
#    the function names of the kernels in its steady report: every profiled kernel's name
#    is a selected one, every selected name was profiled, and the profiled launches per
#    iteration equal nsys's calls per iteration of those names -> OUTDIR/check.json.
# 3. GPT-2 eager's steady pass again without the filter (every kernel), in a copy of its
#    run folder: its seconds and kernels against the filtered pass's, and the selected
#    names' share of its DRAM bytes and of its kernel time -> OUTDIR/check.json too.
# OUTDIR also gets versions.txt, sweep.log, the tables and each run's small files.
set -u
OUT=${1:?usage: ncu_top_kernels.sh OUTDIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/../.."
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-/tmp/inductor-top-kernels} PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; ncu --version | tail -1
  python -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
} > "$OUT/versions.txt" 2>&1
cat > "$OUT/config.yaml" <<EOF
import_models:
  gpt2: {factory: "fusionlab.experiments.real_models.gpt2:build", default_batch: 8}
  llama_block: {factory: "fusionlab.experiments.real_models.llama_block:build", default_batch: 1}
models: [gpt2, llama_block]
variants: [eager, compile]
batch_sizes: default
mode: [inference]
dtype: [bfloat16]
repeats: 1
warmup_iters: 10
measure_iters: 20
device: cuda
profiler: nsys
nsys:
  trace: cuda,nvtx,osrt
  args: "-s none --cpuctxsw=none --cuda-graph-trace=node"
ncu: {enabled: true, top_kernels: 5}
results: $OUT/results
EOF
t0=$(date +%s)
timeout --signal=TERM --kill-after=20 300 snakemake all --configfile "$OUT/config.yaml" --cores "$(nproc)" \
  --resources gpu=1 --keep-going > "$OUT/sweep.log" 2>&1
echo "snakemake all: rc $? in $(( $(date +%s) - t0 )) s" | tee "$OUT/stages.txt"

# 3. the unfiltered steady pass of GPT-2 eager, in a copy of its run folder
RUN=$(ls -d "$OUT"/results/runs/nsys/gpt2/eager/*/*/r0 2>/dev/null | head -1)
if [ -n "$RUN" ] && [ -f "$RUN/ncu.json" ]; then
  ALL="$OUT/every_kernel/r0"
  mkdir -p "$ALL"
  cp "$RUN/timing.json" "$RUN/run.json" "$ALL/"
  RUNNER=$(python -c "
import json, shlex, sys
cmd = shlex.split(json.load(open(sys.argv[1]))['steady']['command'])
print(shlex.join(cmd[cmd.index('-o') + 2:]))" "$RUN/ncu.json")
  t0=$(date +%s)
  eval timeout 150 python workflow/scripts/ncu_profile.py --run-dir "$ALL" --ncu "$(command -v ncu)" --passes steady -- $RUNNER
  echo "every kernel, gpt2 eager: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/stages.txt"
fi

# 2. and 3. checked
python - "$OUT" <<'EOF' | tee "$OUT/check.txt"
import glob, json, os, sys
import pandas as pd
from fusionlab.analysis.readers import ncu_report
out = sys.argv[1]
checks = []
for step_file in sorted(glob.glob(f"{out}/results/runs/nsys/*/*/*/*/r0/ncu.json")):
    d = os.path.dirname(step_file)
    step = json.load(open(step_file))
    sel = step.get("selection") or {}
    rec = {"run": os.path.relpath(d, out), "status": step.get("status"), "seconds": (step.get("steady") or {}).get("seconds"),
           "selected": sel.get("names"), "time_share": sel.get("time_share"), "names_total": sel.get("names_total"),
           "filter": sel.get("filter")}
    rep = os.path.join(d, "ncu_steady.ncu-rep")
    if os.path.exists(rep):
        rows = ncu_report.read(rep)
        iters = (step.get("steady") or {}).get("iterations") or 3
        profiled = sorted({r["name"] for r in rows})
        k = pd.read_csv(os.path.join(d, "kernels.csv"))
        nsys_calls = float(k[k["name"].isin(sel.get("names") or [])]["calls_per_iter"].sum())
        rec.update(profiled_names=profiled, launches_per_iter=len(rows) / iters, nsys_calls_per_iter=nsys_calls,
                   only_selected=set(profiled) <= set(sel.get("names") or []),
                   every_selected=set(sel.get("names") or []) <= set(profiled),
                   launches_match=abs(len(rows) / iters - nsys_calls) < 1e-9)
    t = os.path.join(d, "traffic.json")
    if os.path.exists(t):
        tr = json.load(open(t))
        rec.update({c: tr.get(c) for c in ("ncu_kernels_selected", "ncu_time_share_selected", "dram_bytes_measured",
                                           "dram_bytes_measured_selected", "ncu_note")})
    checks.append(rec)
every = {}
all_step = f"{out}/every_kernel/r0/ncu.json"
if os.path.exists(all_step):
    s = json.load(open(all_step))
    rep = f"{out}/every_kernel/r0/ncu_steady.ncu-rep"
    every = {"status": s.get("status"), "seconds": (s.get("steady") or {}).get("seconds")}
    if os.path.exists(rep):
        rows = pd.DataFrame(ncu_report.read(rep))
        gpt2 = next((c for c in checks if "/gpt2/eager/" in c["run"]), {})
        chosen = rows["name"].isin(gpt2.get("selected") or [])
        every.update(launches=len(rows), names=int(rows["name"].nunique()),
                     dram_share_selected=float((rows.loc[chosen, "dram_read_bytes"] + rows.loc[chosen, "dram_write_bytes"]).sum()
                                               / (rows["dram_read_bytes"] + rows["dram_write_bytes"]).sum()),
                     ncu_time_share_selected=float(rows.loc[chosen, "ncu_time_ns"].sum() / rows["ncu_time_ns"].sum()),
                     nsys_time_share_selected=gpt2.get("time_share"))
json.dump({"runs": checks, "gpt2_eager_every_kernel": every}, open(f"{out}/check.json", "w"), indent=1, default=str)
for c in checks:
    print(c["run"], c["status"], f"{c.get('seconds')} s", f"share {c.get('time_share')}",
          "only_selected", c.get("only_selected"), "every_selected", c.get("every_selected"),
          "launches", c.get("launches_per_iter"), "nsys", c.get("nsys_calls_per_iter"))
print("gpt2 eager, every kernel:", every)
EOF
# the small files of each run and the tables
cd "$OUT" && tar czf runs.tgz $(find results -name '*.json' -o -name '*.csv' -o -name '*.log' -o -name '*.md' | grep -v '/inductor/') \
  every_kernel 2>/dev/null; ls -la "$OUT"
