#!/usr/bin/env bash
# Background GPU jobs that outlive one device call and never read the working tree again
# once started: `start NAME CMD` copies the checkout to /tmp/job-NAME, installs it there and
# runs CMD (bash) in it under setsid, logging to /tmp/job-NAME.log; `wait S NAME...` polls
# up to S seconds until every named job has ended; `tail NAME` shows its log's end;
# `pack NAME` tars its results and logs so far (no traces) into $OUT/NAME.tgz.
#   bash benchmarks/gpu/bg.sh start tests "bash benchmarks/gpu/gpu_tests.sh"
#   bash benchmarks/gpu/bg.sh wait 500 tests
set -u
case "$1" in
  start)
    name=$2; dir=/tmp/job-$name; log=/tmp/job-$name.log
    rm -rf "$dir"; mkdir -p "$dir"; cp -a . "$dir/"; cd "$dir"
    source .device-kit/setup.sh > /dev/null 2>&1
    python -m pip install -q --no-deps --no-build-isolation -e . > /tmp/pip-$name.log 2>&1 || tail -3 /tmp/pip-$name.log
    export PYTHONUNBUFFERED=1 PYTHONPATH=$dir:/tmp/site${PYTHONPATH:+:$PYTHONPATH} PATH=/tmp/site/bin:$PATH
    setsid nohup bash -c "cd $dir; ( $3 ) > $log 2>&1; echo \"job rc=\$?\" >> $log" > /dev/null 2>&1 < /dev/null &
    echo "started $name in $dir" ;;
  wait)
    end=$(( $(date +%s) + $2 )); shift 2
    for name in "$@"; do
      while [ "$(date +%s)" -lt "$end" ] && ! grep -q "job rc=" /tmp/job-$name.log 2>/dev/null; do sleep 5; done
      echo "== $name: $(grep 'job rc=' /tmp/job-$name.log 2>/dev/null || echo running)"
      grep -E "steps \(" /tmp/job-$name.log 2>/dev/null | tail -1
    done ;;
  tail)
    tail -n "${3:-15}" /tmp/job-$2.log ;;
  pack)
    # the job's results and logs so far into $OUT/NAME.tgz, without traces and caches
    cd /tmp/job-$2 && tar czf "$OUT/$2.tgz" --exclude='*.nsys-rep' --exclude='*.sqlite' \
      --exclude='*.qdstrm' --exclude='*.ncu-rep' --exclude='*.svg' --exclude=trace.json \
      --exclude=inductor --exclude=compile_debug --exclude=.snakemake \
      results *.log /tmp/job-$2.log 2>/dev/null; ls -la "$OUT" ;;
esac
