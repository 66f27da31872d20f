#!/usr/bin/env bash
# Records the foreign-input fixtures on the GPU machine; results as $OUT/rec.tgz.
set -x
source .device-kit/setup.sh
HERE=$PWD/.rec-foreign
W=/tmp/rec; mkdir -p $W; cd $W
nsys --version > nsys_version.txt 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > gpu.txt
python -c "import torch; print(torch.__version__)" > torch_version.txt
NS="-s none --cpuctxsw=none --force-overwrite true"
REPS=cuda_gpu_kern_sum,nvtx_gpu_proj_sum,nvtx_gpu_proj_trace,nvtx_sum
for name in no_nvtx:cuda async_ranges:cuda,nvtx; do
  n=${name%%:*}; t=${name#*:}
  mkdir -p $n
  timeout 100 nsys profile -t $t $NS -o $n/report python $HERE/$n.py > $n/profile.log 2>&1
  nsys export --type sqlite --force-overwrite true -o $n/report.sqlite $n/report.nsys-rep >> $n/profile.log 2>&1
  nsys stats -r $REPS --format csv --force-export false -o $n/stats $n/report.sqlite > $n/stats.log 2>&1
  ls -la $n
done
mkdir -p torch_gpu
timeout 100 python $HERE/torch_steps.py $W/torch_gpu/trace cuda > torch_gpu/run.log 2>&1
ls -laR torch_gpu
rm -f */report.nsys-rep
tar czf $OUT/rec.tgz -C $W .
ls -la $OUT
