#!/usr/bin/env bash
# `fusionlab analyse` at scale against the baseline commit, on the GPU machine's host, in
# steps that each fit one call (each has a time cap):
#   reports  synthetic 1M and 10M kernels (benchmarks/million_kernels.py synthetic, on the
#            CPU, beside) and a real 1M-kernel nsys report (million_kernels.py generate, on
#            the GPU); about 3.5 minutes
#   vs1m     benchmarks/analyse_vs_baseline.py --baseline: this tree and the baseline side by
#            side on the synthetic and the real 1M reports, 3 times each: CPU s, wall s, peak
#            RSS, their ratios, whether the outputs are the same; at most 150 s
#   vs10m    the same on the synthetic 10M report, once; at most 200 s
#   real     `nsys stats` (4 reports) beside `fusionlab analyse` (million_kernels.py measure)
#            on the real report, with --check (every range's kernels and kernel ns against
#            SQL); at most 90 s
#   syn10m   the same (without --check) on the synthetic 10M report; at most 420 s
# A step makes the reports it reads where /tmp/analyse_scale lacks them (within its cap).
# Default steps: reports vs1m vs10m real (about 7 minutes on an H100 host with 16 cores);
# syn10m alone is a second call of about 3 to 7 minutes.
# Everything it makes goes under OUTDIR (the reports stay in /tmp/analyse_scale): env.txt,
# generate_*.json, vs_baseline_{1m,10m}.{log,json}, measure_{real1m,syn10m}/, steps.txt.
#
#   source .device-kit/setup.sh && bash benchmarks/gpu/analyse_scale.sh OUTDIR [BASELINE [STEP...]]
#   source .device-kit/setup.sh && bash benchmarks/gpu/analyse_scale.sh OUTDIR e00711a syn10m
# BASELINE: a commit (default e00711a), or, where this copy has no git history, a folder
# of that commit's files (`git archive e00711a | tar x -C shared/base-e00711a` beforehand).
set -u
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}   # the kit's /tmp/site (ADBC) kept
out=${1:?usage: benchmarks/gpu/analyse_scale.sh OUTDIR [BASELINE [STEP...]]}
base=${2:-e00711a}
shift $(( $# < 2 ? $# : 2 ))
steps=${*:-reports vs1m vs10m real}
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

# the reports, each made once (a later step or call finds it in $w)
syn() {     # syn NAME KERNELS CAP_S
  [ -s "$w/$1.sqlite" ] && return 0
  timeout "$3" python benchmarks/million_kernels.py synthetic --kernels "$2" --out "$w/$1.sqlite.part" \
    > "$out/generate_$1.json" 2> "$out/generate_$1.log" && mv "$w/$1.sqlite.part" "$w/$1.sqlite"
}
real() {    # real CAP_S
  [ -s "$w/real1m/report.sqlite" ] && return 0
  timeout "$1" python benchmarks/million_kernels.py generate --kernels 1000000 --out "$w/real1m" \
    > "$out/generate_real1m.log" 2>&1
  tail -1 "$out/generate_real1m.log" > "$out/generate_real1m.json"
}
left() {    # seconds left of CAP_S since T0, at least 30
  local l=$(( $1 - (SECONDS - $2) ))
  echo $(( l > 30 ? l : 30 ))
}

for s in $steps; do
  t0=$SECONDS
  case $s in
    reports)   # the synthetic ones on the CPU while the GPU records the real one
      syn syn1m 1000000 150 &
      syn syn10m 10000000 200 &
      real 200
      wait
      echo "reports: in $(( SECONDS - t0 )) s" | tee -a "$out/steps.txt"
      ls -la "$w" "$w/real1m" >> "$out/steps.txt" 2>&1 ;;
    vs1m)
      syn syn1m 1000000 60 & real 150; wait
      step vs_baseline_1m "$(left 150 "$t0")" python benchmarks/analyse_vs_baseline.py --baseline "$base" --repeat 3 \
        --json "$out/vs_baseline_1m.json" "$w/syn1m.sqlite" "$w/real1m/report.sqlite" ;;
    vs10m)
      syn syn10m 10000000 200
      step vs_baseline_10m 200 python benchmarks/analyse_vs_baseline.py --baseline "$base" --repeat 1 \
        --json "$out/vs_baseline_10m.json" "$w/syn10m.sqlite" ;;
    real)
      real 150
      step measure_real1m 90 python benchmarks/million_kernels.py measure "$w/real1m/report.sqlite" --check \
        --out "$out/measure_real1m" ;;
    syn10m)
      syn syn10m 10000000 200
      step measure_syn10m "$(left 420 "$t0")" python benchmarks/million_kernels.py measure "$w/syn10m.sqlite" \
        --out "$out/measure_syn10m" ;;
    *) echo "unknown step $s (reports vs1m vs10m real syn10m)" | tee -a "$out/steps.txt"; exit 2 ;;
  esac
done
rm -f "$out"/measure_*/analyse.out "$out"/measure_*/*.out.gz 2>/dev/null
du -sh "$out" >> "$out/steps.txt"
touch "$out/DONE.${steps// /_}"
