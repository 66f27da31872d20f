#!/usr/bin/env bash
# `fusionlab analyse` at scale against the baseline commit, on the GPU machine's host:
#   1. reports: synthetic 1M and 10M kernels (benchmarks/million_kernels.py synthetic, on the
#      CPU, beside) and a real 1M-kernel nsys report (million_kernels.py generate, on the GPU)
#   2. benchmarks/analyse_vs_baseline.py --baseline e00711a: this tree and the baseline, side
#      by side (1M reports 3 times each, 10M once): CPU s, wall s, peak RSS, their ratios,
#      and whether the two outputs are the same
#   3. `nsys stats` (4 reports) beside `fusionlab analyse` (million_kernels.py measure) on the
#      real report, with --check (every range's kernels and kernel ns against SQL), then
#      on the 10M report
# Everything it makes goes under OUTDIR (the reports stay in /tmp/analyse_scale): env.txt,
# generate_*.json, vs_baseline_{1m,10m}.{txt,json}, measure_{real1m,syn10m}/, steps.txt.
# About 7 minutes on an H100 host with 16 cores; each step has a time cap (the last one
# whatever is left of 470 s).
#
#   source .device-kit/setup.sh && bash benchmarks/gpu/analyse_scale.sh OUTDIR [BASELINE]
# BASELINE: a commit (default e00711a), or, where this copy has no git history, a folder
# of that commit's files (`git archive e00711a | tar x -C shared/base-e00711a` beforehand).
set -u
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}   # the kit's /tmp/site (ADBC) kept
out=${1:?usage: benchmarks/gpu/analyse_scale.sh OUTDIR [BASELINE]}
base=${2:-e00711a}
mkdir -p "$out"
out=$(cd "$out" && pwd)
w=/tmp/analyse_scale
mkdir -p "$w"
{
  git rev-parse HEAD
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  nsys --version
  python -c "import torch, numpy, pyarrow, adbc_driver_sqlite; print('torch', torch.__version__, 'numpy', numpy.__version__, 'pyarrow', pyarrow.__version__)"
  nproc; free -g | head -2
} > "$out/env.txt" 2>&1
if [ ! -d "$base" ] && ! git cat-file -e "$base^{commit}" 2>/dev/null; then
  echo "baseline $base: neither a folder nor a commit of this clone" | tee -a "$out/steps.txt"
  exit 2
fi

step() {    # step NAME CAP_S COMMAND...: the command's output in OUTDIR/NAME.log
  local name=$1 cap=$2 t0=$SECONDS
  shift 2
  timeout "$cap" "$@" > "$out/$name.log" 2>&1
  echo "$name: rc $? in $(( SECONDS - t0 )) s" | tee -a "$out/steps.txt"
}

# 1. the reports: the synthetic ones on the CPU while the GPU records the real one
t0=$SECONDS
timeout 150 python benchmarks/million_kernels.py synthetic --kernels 1000000 --out "$w/syn1m.sqlite" \
  > "$out/generate_syn1m.json" 2> "$out/generate_syn1m.log" &
timeout 200 python benchmarks/million_kernels.py synthetic --kernels 10000000 --out "$w/syn10m.sqlite" \
  > "$out/generate_syn10m.json" 2> "$out/generate_syn10m.log" &
timeout 200 python benchmarks/million_kernels.py generate --kernels 1000000 --out "$w/real1m" \
  > "$out/generate_real1m.log" 2>&1
tail -1 "$out/generate_real1m.log" > "$out/generate_real1m.json"
wait
echo "reports: in $(( SECONDS - t0 )) s" | tee -a "$out/steps.txt"
ls -la "$w" "$w/real1m" >> "$out/steps.txt" 2>&1

# 2. this tree against the baseline, nothing else running
step vs_baseline_1m 150 python benchmarks/analyse_vs_baseline.py --baseline "$base" --repeat 3 \
  --json "$out/vs_baseline_1m.json" "$w/syn1m.sqlite" "$w/real1m/report.sqlite"
step vs_baseline_10m 200 python benchmarks/analyse_vs_baseline.py --baseline "$base" --repeat 1 \
  --json "$out/vs_baseline_10m.json" "$w/syn10m.sqlite"

# 3. nsys stats beside fusionlab analyse (this tree)
step measure_real1m 90 python benchmarks/million_kernels.py measure "$w/real1m/report.sqlite" --check \
  --out "$out/measure_real1m"
step measure_syn10m $(( 470 - SECONDS > 150 ? 150 : (470 - SECONDS > 30 ? 470 - SECONDS : 30) )) python benchmarks/million_kernels.py measure "$w/syn10m.sqlite" --out "$out/measure_syn10m"
rm -f "$out"/measure_*/analyse.out "$out"/measure_*/*.out.gz 2>/dev/null
du -sh "$out" >> "$out/steps.txt"
touch "$out/DONE"
