#!/usr/bin/env bash
# Record real CUDA output_code on the GPU machine: run the capture child on every example and pack the result.
# Used through the device tool:  bash scripts/gpu_capture_fixtures.sh   (writes $OUT/gpu_capture.tgz)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
for ex in square_compile square_square pytorch_square small_model dynamic_shapes; do
  d=/tmp/cap/$ex; mkdir -p "$d"
  TORCHINDUCTOR_CACHE_DIR=/tmp/ic_$ex TRITON_CACHE_DIR=/tmp/tc_$ex timeout 300 \
    python3 -m harvest.capture.bootstrap "$d" auto 90 -- "examples/$ex.py" 2>&1 | grep -v -i warn
done
tar czf "$OUT/gpu_capture.tgz" -C /tmp/cap .
