#!/usr/bin/env bash
# The GPU benchmarks, one after another (never two at once: each
# times the GPU or the host), each into OUTDIR/<step>/, with the versions in OUTDIR/env.txt:
#   million   benchmarks/million_kernels.py: a real 1M-kernel report under nsys, then
#             `fusionlab analyse` beside `nsys stats`, time and peak RSS, --check by SQL
#   backward  benchmarks/kernels_backward.py: hand kernels' forward and backward against
#             eager and torch.compile, as fractions of the copy bandwidth
#   bare      benchmarks/bare_loop.py: the runner's windows against a bare loop, the hold-out
#             grid, config.yaml's grid and one train configuration
#   bare_noisy  the same for the configurations of the host-bound "noisiest" grid, with a
#             longer time cap (more slots, tighter CIs)
#   sweep     `snakemake all` over config.yaml with deep_gelu_mlp and transformer_block added
#             and 2 repeats (resource columns and over-fusion signs), into
#             OUTDIR/sweep/results; million: 3 repeats of the measurement
# OUTDIR/DONE is written at the end. A step's log is OUTDIR/<step>/log.txt.
#
#   source .device-kit/setup.sh && bash benchmarks/gpu/benchmarks.sh OUTDIR [STEP ...]
set -u
cd "$(dirname "$0")/../.."
out=${1:?usage: benchmarks/gpu/benchmarks.sh OUTDIR [million backward bare]}
shift
steps=${*:-million backward bare}
mkdir -p "$out"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  nsys --version
  python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  nproc
} > "$out/env.txt" 2>&1
for step in $steps; do
  mkdir -p "$out/$step"
  t0=$(date +%s)
  case $step in
    million)
      python benchmarks/million_kernels.py generate --out /tmp/million | tail -1 > "$out/$step/generate.json" &&
        for r in 1 2 3; do
          python benchmarks/million_kernels.py measure /tmp/million/report.sqlite --check --out "$out/$step/r$r"
        done ;;
    backward)
      python benchmarks/kernels_backward.py --out "$out/$step/kernels_backward.csv" ;;
    bare)
      python benchmarks/bare_loop.py sweep --grid holdout,default,train --out "$out/$step" ;;
    bare_noisy)
      python benchmarks/bare_loop.py sweep --grid noisiest --max-s 60 --max-slots 300 --out "$out/$step" ;;
    sweep)
      pip install -q --no-deps --no-build-isolation -e . &&
        snakemake --unlock > /dev/null 2>&1
      cfg=(--config results="$out/$step/results" repeats=2
           'models=[pointwise_heavy, matmul_heavy, mlp, deep_gelu_mlp, transformer_block]')
      snakemake all --cores "$(nproc)" --keep-going --rerun-incomplete "${cfg[@]}" &&
        snakemake --report "$out/$step/results/report.html" "${cfg[@]}" ;;
    *) echo "unknown step $step" ;;
  esac > "$out/$step/log.txt" 2>&1
  echo "$step: rc $? in $(( $(date +%s) - t0 )) s" | tee -a "$out/steps.txt"
done
touch "$out/DONE"
