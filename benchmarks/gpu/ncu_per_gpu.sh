#!/usr/bin/env bash
# Whether Nsight Compute collects on two GPUs of one host at once (docs/ncu.md: the step
# holds one counters lock per host). Two ncu processes, one per GPU, each profiling the
# same N matmul kernels (DRAM bytes), started together and then one after the other:
#   bash benchmarks/gpu/ncu_per_gpu.sh OUTDIR [N]        # a host with 2 GPUs or more
# OUTDIR/ncu_per_gpu.json: each process's exit status and its "concurrently collecting"
# errors, the wall time of the pair together and one after the other, and the verdict:
# `per GPU` where both together succeed, else `per host`.
set -u
OUT=${1:?usage: ncu_per_gpu.sh OUTDIR [N]}
N=${2:-200}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
PROG="import torch; a = torch.randn(4096, 4096, device='cuda'); [torch.mm(a, a) for _ in range($N)]; torch.cuda.synchronize()"
one() {   # one GPU INDEX LABEL: ncu on one matmul loop pinned to that GPU
  CUDA_VISIBLE_DEVICES=$1 ncu --metrics dram__bytes_read.sum,dram__bytes_write.sum --csv \
    --target-processes application-only -c "$N" python -c "$PROG" > "$OUT/$2.csv" 2> "$OUT/$2.err"
  echo $? > "$OUT/$2.rc"
}
t0=$(date +%s.%N)
one 0 together0 & one 1 together1 & wait
t1=$(date +%s.%N)
one 0 alone0; one 1 alone1
t2=$(date +%s.%N)
python - "$OUT" "$t0" "$t1" "$t2" "$N" <<'EOF'
import json, os, sys
out, t0, t1, t2, n = sys.argv[1], *map(float, sys.argv[2:5]), int(sys.argv[5])
runs = {}
for label in ("together0", "together1", "alone0", "alone1"):
    text = open(os.path.join(out, f"{label}.csv")).read() + open(os.path.join(out, f"{label}.err")).read()
    runs[label] = {"rc": int(open(os.path.join(out, f"{label}.rc")).read()),
                   "concurrent_errors": text.count("concurrently collecting"),
                   "kernels": text.count('"dram__bytes_read.sum"')}
ok = all(runs[k]["rc"] == 0 and runs[k]["concurrent_errors"] == 0 and runs[k]["kernels"] == n
         for k in ("together0", "together1"))
rec = {"kernels_each": n, "together_s": round(t1 - t0, 2), "one_after_the_other_s": round(t2 - t1, 2),
       "runs": runs, "verdict": "per GPU" if ok else "per host"}
json.dump(rec, open(os.path.join(out, "ncu_per_gpu.json"), "w"), indent=1)
print(json.dumps(rec))
EOF
