#!/usr/bin/env bash
# GPU machine: the fidelity benchmark alone (benchmarks/fidelity.py). Results to $OUT.
source .device-kit/setup.sh
export TORCHINDUCTOR_CACHE_DIR=/tmp/inductor-cache PYTHONUNBUFFERED=1
nvidia-smi -L; nsys --version
python benchmarks/fidelity.py --batch 1024 --out $OUT/fidelity.csv 2>&1 | grep -v -i warn | tee $OUT/fidelity.log | tail -12
