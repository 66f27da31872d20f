#!/usr/bin/env bash
# The nsys fixtures of `fusionlab analyse`'s tests that need a GPU to record, each a small
# real report (under 2 MB gzipped) with the `nsys stats` CSVs of the same file:
#   nsys2025_h100_long_names   tests/data/foreign/long_names.py nvtx: NVTX ranges with long
#                              names (two alike in their first 62 characters, one of 194)
#                              around small GEMMs; for tests/test_analyse_names.py
# (A report without NVTX and a range around torch.cuda.synchronize while the GPU is busy
# are tests/data/foreign/nsys2025_h100_no_nvtx and nsys2025_h100_async_ranges already.)
# Writes OUTDIR/<fixture>/{report.sqlite.gz, nvtx_sum.csv, cuda_gpu_kern_sum.csv, the
# script, versions.txt}; copy each <fixture>/ into tests/data/foreign/. About 1 minute.
#
#   source .device-kit/setup.sh && bash benchmarks/gpu/analyse_fixtures.sh OUTDIR
set -u
cd "$(dirname "$0")/../.."
out=${1:?usage: benchmarks/gpu/analyse_fixtures.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
here=$PWD/tests/data/foreign
w=$(mktemp -d)
for spec in nsys2025_h100_long_names:long_names.py:nvtx; do
  IFS=: read -r name script arg <<< "$spec"
  d=$out/$name
  mkdir -p "$d"
  cp "$here/$script" "$d/"
  {
    nsys --version
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    python -c "import torch; print('torch', torch.__version__)"
  } > "$d/versions.txt" 2>&1
  timeout 120 nsys profile -t cuda,nvtx -s none --cpuctxsw=none --force-overwrite true -o "$w/$name" \
    python "$here/$script" $arg > "$d/profile.log" 2>&1
  nsys export --type sqlite --force-overwrite true -o "$w/$name.sqlite" "$w/$name.nsys-rep" >> "$d/profile.log" 2>&1
  nsys stats -r nvtx_sum,cuda_gpu_kern_sum --format csv --force-export false -o "$w/$name" "$w/$name.sqlite" \
    > "$d/stats.log" 2>&1
  for r in nvtx_sum cuda_gpu_kern_sum; do
    [ -f "$w/${name}_$r.csv" ] && cp "$w/${name}_$r.csv" "$d/$r.csv"
  done
  gzip -9 -c "$w/$name.sqlite" > "$d/report.sqlite.gz"
  size=$(stat -c %s "$d/report.sqlite.gz")
  echo "$name: report.sqlite.gz $size bytes$( [ "$size" -gt 2000000 ] && echo ' (over 2 MB: do not commit)')" \
    | tee -a "$out/fixtures.txt"
done
rm -rf "$w"
ls -laR "$out" >> "$out/fixtures.txt"
