#!/usr/bin/env bash
# The story's GPU sweep (config/story.yaml) through `snakemake all`, in the background so
# that it outlives one device call: `start` launches it (setsid), `wait S` polls up to S
# seconds, `pack` audits the results and packs what the closing note reads into $OUT
# (no .nsys-rep, .sqlite or .ncu-rep: tables, figures with their data, summary, report,
# every run's records).
#   bash benchmarks/gpu/story.sh start; bash benchmarks/gpu/story.sh wait 540; bash benchmarks/gpu/story.sh pack
set -u
CONF=${CONF:-config/story.yaml}
RES=${RES:-results/story}
LOG=/tmp/story.log
case "$1" in
  start)
    source .device-kit/setup.sh
    python -m pip install -q --no-deps --no-build-isolation -e . > /tmp/pip.log 2>&1 || tail -3 /tmp/pip.log
    export TORCHINDUCTOR_CACHE_DIR=/tmp/inductor-cache PYTHONUNBUFFERED=1
    nvidia-smi -L; nsys --version; ncu --version | tail -1
    python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
    setsid nohup bash -c "snakemake all --configfile $CONF --cores 16 --scheduler greedy > $LOG 2>&1; echo \"sweep rc=\$?\" >> $LOG" \
      > /dev/null 2>&1 < /dev/null &
    sleep 20; tail -3 $LOG ;;
  wait)
    end=$(( $(date +%s) + ${2:-540} ))
    while [ "$(date +%s)" -lt "$end" ] && ! grep -q "sweep rc=" $LOG; do sleep 10; done
    grep -E "steps \(" $LOG | tail -1; grep "sweep rc=" $LOG; grep -ciE "error" $LOG ;;
  pack)
    source .device-kit/setup.sh
    python -m fusionlab.cli audit $RES | tail -20
    snakemake --report $RES/report.html --configfile $CONF > /tmp/report.log 2>&1; echo "report rc=$?"
    cp $LOG $OUT/story.log
    tar czf $OUT/story.tgz --exclude='*.svg' $RES/tables $RES/figures $RES/summary.md $RES/summary.html \
      $RES/report.html $RES/device $RES/logs \
      $(ls -d $RES/runs/*/*/*/*/*/*/{run.json,timing.json,unsupported.json,metrics.json,kernels.csv,ncu.json,traffic.json,traffic.csv,stats} 2>/dev/null) 2>/dev/null
    ls -la $OUT ;;
esac
