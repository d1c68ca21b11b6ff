#!/usr/bin/env bash
# Part of scripts/gpu/verify.sh (its `models` section): the showcases and the real models extracted and checked on
# the GPU, one call of < 10 minutes.
#   bash scripts/gpu/verify.sh models [all]   the five examples re-made as showcases (extracted/h200/, record capped),
#                                            every module --check'ed on the GPU; beside them, examples/models/ (or
#                                            MODELS="a.py b.py") in two halves through scripts/model_matrix.py
#                                            --device cuda
#   bash scripts/gpu/verify.sh models examples   the showcases and the first half of the models
#   bash scripts/gpu/verify.sh models rest       the second half of the models
# Each call packs under $OUT: the matrix (md/json), logs, the models' raw output_code as test fixtures, and (examples)
# the showcases.
set -u
phase=${1:-all}
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
fixtures=$(python3 -c "import torch, triton; print(f'tests/fixtures/torch-{torch.__version__}_triton-{triton.__version__}/models')")
mkdir -p "$OUT" /tmp/pack

check_all() {  # every module of an extraction, --check on the GPU; prints one line per module
  local dir=$1
  python3 - "$dir" <<'PY'
import json, subprocess, sys
from pathlib import Path
out = Path(sys.argv[1]); m = json.loads((out / "manifest.json").read_text())
for g in m["graphs"]:
    for k in g["kernels"]:
        if not k["module"]:
            print(f"NOT STANDALONE {g['name']}/{k['name']}: {k['standalone_reason']}"); continue
        p = subprocess.run([sys.executable, k["module"], "--check"], cwd=out, capture_output=True, text=True, timeout=300)
        status = "PASS" if p.returncode == 0 else "FAIL"
        print(f"{status} {k['module']}"); sys.stdout.flush()
        if p.returncode: print("   " + "\n   ".join((p.stdout + p.stderr).strip().splitlines()[-8:]))
PY
}

models=(${MODELS:-$(ls examples/models/*.py)})
half=$(( (${#models[@]} + 1) / 2 ))
models_a="${models[*]:0:$half}"
models_b="${models[*]:$half}"

if [ "$phase" = all ]; then
  python3 scripts/model_matrix.py --device cuda --out /tmp/matrix_b --jobs 4 $models_b > /tmp/pack/matrix_b.log 2>&1 &
  matrix_b=$!
fi
if [ "$phase" = examples ] || [ "$phase" = all ]; then
  python3 scripts/model_matrix.py --device cuda --out /tmp/matrix_a --jobs 4 $models_a > /tmp/pack/matrix_a.log 2>&1 &
  matrix=$!
  for ex in square_compile square_square pytorch_square small_model dynamic_shapes; do
    rm -rf "extracted/h200/$ex"
    start=$(date +%s.%N)
    python3 -m harvest extract "examples/$ex.py" -o "extracted/h200/$ex" --device cuda --record-total-cap 12 -q 2>&1 | grep -v -i warn
    echo "$ex: harvest extract $(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')") s"
    check_all "extracted/h200/$ex"
  done 2>&1 | tee /tmp/pack/showcases.log
  wait $matrix
  cp -r /tmp/matrix_a /tmp/pack/matrix_a_dir
  tar czf "$OUT/showcases.tgz" extracted/h200
  if [ "$phase" = all ]; then wait $matrix_b; cp -r /tmp/matrix_b /tmp/pack/matrix_b_dir; fi
else
  python3 scripts/model_matrix.py --device cuda --out /tmp/matrix_b --jobs 8 $models_b > /tmp/pack/matrix_b.log 2>&1
  cp -r /tmp/matrix_b /tmp/pack/matrix_b_dir
fi
# Fixtures: the models' real CUDA output_code; the matrix dirs without record data (modules, manifests, logs).
for d in /tmp/matrix_a /tmp/matrix_b; do
  [ -d "$d" ] || continue
  for model in "$d"/*/; do
    [ -f "$model/raw/capture.json" ] || continue
    name=$(basename "$model")
    for g in "$model"raw/g*/; do
      mkdir -p "/tmp/pack/$fixtures/$name"; cp "$g/output_code.py" "/tmp/pack/$fixtures/$name/$(basename "$g").py"
    done
  done
done
find /tmp/pack -name "*.pt" -delete
tar czf "$OUT/pack_$phase.tgz" -C /tmp/pack .
ls -la "$OUT"
cat /tmp/pack/matrix_*_dir/matrix.md 2>/dev/null | head -30
