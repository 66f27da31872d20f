#!/usr/bin/env bash
# GPU machine, in the background: the Nsight Compute sweeps, the phases named in PHASES
# (default "ledger provenance cost"), one after the other:
#   ledger:     the ledger sweep (config/ledger.yaml, with the ncu step), stopped at LEDGER_S
#               (it took 613 s on an H100 from empty caches);
#   provenance: the provenance cost on compile latency (benchmarks/provenance_cost.py on
#               the GPU, about 30 s a process), stopped at PROV_S;
#   cost:       the step's cost on config.yaml's grid (benchmarks/ncu_cost.py: with the
#               step, then without, each compiling cold), each sweep stopped at COST_S.
#               REPEATS overrides config.yaml's repeats (the step profiles repeat 0 only,
#               so fewer repeats raise the ratio); unset, the grid runs as configured.
# After each phase the run folders' small files (no nsys profiles, SQLite exports or
# .ncu-rep reports: `snakemake regenerate` uses their traffic files as they are) go to
# results/pack/<phase>.tgz; progress.txt says what has ended.
#   PHASES=cost COST_S=900 setsid nohup bash benchmarks/gpu/ncu.sh > /tmp/ncu.log 2>&1 < /dev/null &
#   cat results/pack/progress.txt                     # poll, within the machine's idle window
# To stop it, interrupt the workflow by its own command line (anchored, so that the
# command doing it is never matched):
#   pkill -INT -f "^$(command -v python3) .*bin/snakemake"
set -u
cd "$(dirname "$0")/../.."
source .device-kit/setup.sh > /dev/null 2>&1
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PATH=/tmp/site/bin:$PATH   # the kit's site, also where it was already installed
export PYTHONUNBUFFERED=1
PHASES=${PHASES:-ledger provenance cost}
LEDGER_S=${LEDGER_S:-720}
COST_S=${COST_S:-600}
PROV_S=${PROV_S:-200}
P=results/pack
mkdir -p $P
stamp() { echo "$(date +%s) $*" >> $P/progress.txt; }
wanted() { [[ " $PHASES " == *" $1 "* ]]; }
pack() {
    (cd results && find "$1" -type f -size -3M ! -name '*.nsys-rep' ! -name '*.sqlite' ! -name '*.qdstrm' \
        ! -name '*.ncu-rep' ! -path '*-cache/*' > "pack/$1.files" && tar czf "pack/$1.tgz" -T "pack/$1.files")
}
python -m pip install --no-deps --no-build-isolation -q -e . > $P/pip.txt 2>&1
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  /usr/local/cuda/bin/ncu --version | tail -1; nsys --version
  python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda)"
} > $P/env.txt 2>&1
stamp "start: $PHASES"
if wanted ledger; then
    t0=$(date +%s)
    timeout -s INT "$LEDGER_S" snakemake all --cores 16 --rerun-incomplete --configfile config/ledger.yaml > $P/ledger.log 2>&1
    stamp "ledger rc $? $(( $(date +%s) - t0 )) s"
    python benchmarks/run_overhead.py results/ledger > $P/ledger_overhead.txt 2>&1
    pack ledger
    stamp "ledger packed"
fi
if wanted provenance; then
    t0=$(date +%s)
    timeout "$PROV_S" python benchmarks/provenance_cost.py --device cuda --reps 2 > $P/provenance_cost.txt 2>&1
    stamp "provenance rc $? $(( $(date +%s) - t0 )) s"
fi
if wanted cost; then
    overlay=()
    if [ -n "${REPEATS:-}" ]; then printf 'repeats: %s\n' "$REPEATS" > results/repeats.yaml; overlay=(results/repeats.yaml); fi
    t0=$(date +%s)
    python benchmarks/ncu_cost.py --configfile config.yaml "${overlay[@]}" --out results/cost --cores 16 --timeout "$COST_S" > $P/cost.txt 2>&1
    stamp "cost rc $? $(( $(date +%s) - t0 )) s"
    for side in on off; do
        python benchmarks/run_overhead.py results/cost/$side > $P/cost_${side}_overhead.txt 2>&1
    done
    pack cost
fi
stamp done
