#!/usr/bin/env bash
# GPU machine: the GPU-only tests, and on a pass benchmarks/results/gpu-tests/last-pass.json
# (benchmarks/gpu/gpu_tests.py says what runs and what a pass is). Commit the record.
#   bash benchmarks/gpu/gpu_tests.sh
set -eu
cd "$(dirname "$0")/../.."
if [ -f .device-kit/setup.sh ]; then
  source .device-kit/setup.sh > /dev/null 2>&1
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PATH=/tmp/site/bin:$PATH
fi
exec python benchmarks/gpu/gpu_tests.py "$@"
