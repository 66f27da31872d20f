#!/usr/bin/env bash
# GPU machine: the train-step fixture, a noise pilot (pinning, injection), the host's
# speed under the sweep's load (NOISE=1), then the untraced-timing benchmark
# (benchmarks/untraced_timing.py), resumable. Results to $OUT.
set -u
source .device-kit/setup.sh
export TORCHINDUCTOR_CACHE_DIR=/tmp/inductor-cache PYTHONUNBUFFERED=1
nvidia-smi -L; nsys --version; python -c "import torch; print(torch.__version__)"
if [ "${FIXTURE:-0}" = 1 ]; then
  t0=$(date +%s)
  snakemake all --configfile config/fixtures-train.yaml --cores 16 --resources gpu=1 --keep-going > $OUT/fixture.log 2>&1; echo "fixture rc=$? in $(( $(date +%s) - t0 )) s"
  tar czf $OUT/fixture.tgz $(ls -d results/fixtures-train/runs/*/*/*/*/*/*/{report.nsys-rep,report.sqlite,run.json,timing.json,metrics.json,kernels.csv,stats,*.log} 2>/dev/null) results/fixtures-train/tables
  grep -h -E "kernels_per_iter|gpu_time_per_iter_ms|profiler_overhead\"|injection_overhead\"" results/fixtures-train/runs/*/*/*/*/*/*/metrics.json
fi
if [ "${PILOT:-0}" = 1 ]; then
  for cfg in "pointwise_heavy eager 256" "mlp compile 2048"; do
    set -- $cfg
    for i in 1 2 3 4; do
      for pin in auto none; do
        s=$(date +%s.%N)
        python -m fusionlab.runner --model $1 --variant $2 --batch $3 --pin-cpus $pin --out /tmp/p.json > /dev/null 2>&1
        e=$(date +%s.%N)
        python -c "import json;t=json.load(open('/tmp/p.json'))['timing'];print('$1 $2 $3 pin=$pin', ' '.join(f'{w:.4f}' for w in t['windows_ms']), 'cv=%.3f' % t['window_cv'], 'proc_s=%.1f' % ($e-$s))"
      done
      s=$(date +%s.%N)
      nsys profile -t cuda,nvtx,osrt -s none --cpuctxsw=none --cuda-graph-trace=node --capture-range=cudaProfilerApi --capture-range-end=stop -o /tmp/p --force-overwrite true python -m fusionlab.runner --model $1 --variant $2 --batch $3 --profiler nsys --capture-range --out /tmp/p.json > /dev/null 2>&1
      e=$(date +%s.%N)
      python -c "import json;t=json.load(open('/tmp/p.json'))['timing'];print('$1 $2 $3 nsys-injected', ' '.join(f'{w:.4f}' for w in t['windows_ms']), 'traced=%.4f' % t['traced_wall_time_per_iter_ms'], 'proc_s=%.1f' % ($e-$s))"
      python benchmarks/untraced_timing.py _loop $1 $2 $3 inference 50 1000 2>/dev/null | tail -1 | sed "s/^/$1 $2 $3 reference /"
    done
  done
fi
if [ "${NOISE:-0}" = 1 ]; then
  # does the sweep's own load slow the host? one idle core against the slot's cores with the
  # other 12 busy, the host probe beside both (benchmarks/results/h100-noise)
  timeout ${NOISE_S:-300} python benchmarks/process_noise.py run --out $OUT/noise --rounds ${NOISE_ROUNDS:-8} \
    --placements core,slot --budget-s $(( ${NOISE_S:-300} - 40 ))
  python benchmarks/process_noise.py report --out $OUT/noise > $OUT/noise-report.txt 2>&1; head -20 $OUT/noise-report.txt
fi
if [ "${BENCH:-0}" = 1 ]; then
  timeout -k 30 ${SWEEP_S:-400} python benchmarks/untraced_timing.py sweep --results results/bench10 --repeats ${REPEATS:-3}
  [ -n "${REF_S:-}" ] && python benchmarks/untraced_timing.py reference --results results/bench10 --repeats ${REF_REPEATS:-5} --budget-s $REF_S
  python benchmarks/untraced_timing.py report --results results/bench10 2>&1 | tee $OUT/report.txt
  python benchmarks/untraced_timing.py windows --results results/bench10 > $OUT/estimators.txt 2>&1
  cd results && tar czf $OUT/bench10-${FUSIONLAB_BENCH_GRID:-a}.tgz bench10/*.csv bench10/*.yaml bench10/*.log bench10/*/tables bench10/*/summary.md \
    $(find bench10 -name '*.json' -o -name '*.log' -o -name kernels.csv) 2>/dev/null; cd ..
fi
ls -la $OUT
