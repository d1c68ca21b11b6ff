#!/usr/bin/env bash
# What record-on-run costs on the GPU (device tool): a model run plainly, under `harvest extract` (record data,
# the default) and under `harvest extract --record layouts`, alternating, N times each; prints every wall time.
#   bash scripts/gpu_extract_time.sh [MODEL] [N] [MODES]   (default examples/models/conv_bn.py, 3, "plain data layouts")
set -u
model=${1:-examples/models/conv_bn.py}
n=${2:-3}
modes=${3:-plain data layouts}
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
now() { date +%s.%N; }
for i in $(seq "$n"); do
  for mode in $modes; do
    rm -rf /tmp/x /tmp/ic /tmp/tc
    start=$(now)
    if [ "$mode" = plain ]; then
      TORCHINDUCTOR_CACHE_DIR=/tmp/ic TRITON_CACHE_DIR=/tmp/tc python3 "$model" > /dev/null 2>&1
    else
      python3 -m harvest extract "$model" -o /tmp/x --device cuda --record "$mode" 2>&1 | grep "target ran"
    fi
    echo "run $i $mode $(python3 -c "print(f'{$(now) - $start:.2f}')") s  raw=$(du -sh /tmp/x/raw 2>/dev/null | cut -f1)"
  done
done
