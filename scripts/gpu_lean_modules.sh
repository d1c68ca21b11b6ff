#!/usr/bin/env bash
# On the GPU (device tool), one call of < 10 minutes: the lean modules (issue 19) and the first-hour fixes (issue 18)
# checked on the H200. Extracts the six real models and two examples on CUDA through scripts/model_matrix.py (every
# module's own --check, against the run's record and the eager reference), counts lines per module
# (scripts/module_lines.py), packs three kernels with `harvest pack` and checks each from an empty directory. With
# `twins` (a second call: each fits in 10 minutes) it extracts the same targets again and writes and checks every
# CUDA twin through the lean twin modules and twin_harness.py (scripts/gpu_twins.py). Results under $OUT.
#   bash scripts/gpu_lean_modules.sh          the modules (TARGETS="a.py b.py" for fewer)
#   bash scripts/gpu_lean_modules.sh twins    the twins
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 COLUMNS=200
OUT=${OUT:-/tmp/out}
X=/tmp/x
mkdir -p "$OUT" "$X"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
targets=${TARGETS:-"examples/square_square.py examples/small_model.py examples/models/bf16_mlp.py examples/models/conv_bn.py
examples/models/embedding_ce.py examples/models/gpt2.py examples/models/graph_break_recompile.py
examples/models/transformer_encoder.py"}
if [ "${1:-}" = twins ]; then
  n=0
  for t in $targets; do
    name=$(basename "$t" .py)
    ( TORCHINDUCTOR_COMPILE_THREADS=2 timeout 240 python3 -m harvest extract "$t" -o "$X/$name" --device cuda -q --force > /dev/null 2>&1
      echo "extract $name rc=$? ($(elapsed) s)" ) &
    n=$((n + 1)); if [ $((n % 4)) = 0 ]; then wait; fi
  done
  wait
  for t in $targets; do python3 -m harvest twin "$X/$(basename "$t" .py)" -q >> "$OUT/twin.log" 2>&1; done
  python3 scripts/gpu_twins.py "$OUT" $(for t in $targets; do echo "$X/$(basename "$t" .py)"; done) > "$OUT/twins.txt" 2>&1
  tail -30 "$OUT/twins.txt"
  # one twin module run as a user runs it, through twin_harness.py
  twin=$(ls "$X"/small_model/g0_forward/twin/*_twin.py 2>/dev/null | head -1)
  [ -n "$twin" ] && (timeout 200 python3 "$twin" --check > "$OUT/twin_module_check.txt" 2>&1; echo "twin module $twin rc=$?"; tail -6 "$OUT/twin_module_check.txt")
  echo "twins done ($(elapsed) s)"
  # and one packed backward kernel checked from an empty directory
  module=$(cd "$X" && ls small_model/g1_backward/*.py | head -1); dir=$(mktemp -d)
  python3 -m harvest pack "$X/$module" -o "$dir/kernel.py" > /dev/null && (cd "$dir" && PYTHONPATH= python3 kernel.py --check > check.txt 2>&1; echo "pack $module rc=$?"; tail -4 check.txt)
  echo "all done at $(elapsed) s"
  exit 0
fi
TORCHINDUCTOR_COMPILE_THREADS=2 python3 scripts/model_matrix.py --device cuda --out "$X" --jobs 8 --timeout 200 ${MATRIX_ARGS:-} $targets > "$OUT/matrix.log" 2>&1
echo "matrix rc=$? ($(elapsed) s)"
cp "$X/matrix.md" "$OUT/matrix.md" 2>/dev/null; cp "$X/matrix.json" "$OUT/matrix.json" 2>/dev/null
tail -25 "$OUT/matrix.log"
python3 scripts/module_lines.py $(for t in $targets; do echo "$X/$(basename "$t" .py)"; done) 2>&1 | tee "$OUT/lines.txt"
python3 scripts/shared_blocks.py $(for t in $targets; do echo "$X/$(basename "$t" .py)"; done) > "$OUT/shared_blocks.txt" 2>&1
grep -v "^  " "$OUT/shared_blocks.txt"
# three packed kernels, each checked from an empty directory on the GPU (SKIP_PACKS=1: not this time)
[ -n "${SKIP_PACKS:-}" ] && { echo "all done at $(elapsed) s"; exit 0; }
for module in small_model/g0_forward/layer_norm_fwd_kernel.py small_model/g0_forward/softmax_kernel.py $(cd "$X" && ls */g1_backward/*.py 2>/dev/null | head -1); do
  [ -f "$X/$module" ] || continue
  dir=$(mktemp -d)
  python3 -m harvest pack "$X/$module" -o "$dir/kernel.py" > /dev/null && (cd "$dir" && PYTHONPATH= python3 kernel.py --check > check.txt 2>&1; echo "pack $module rc=$?"; tail -4 check.txt)
  n=$((${n:-0} + 1)); [ "$n" -ge 3 ] && break
done 2>&1 | tee "$OUT/pack.txt"
echo "packs done ($(elapsed) s)"
echo "all done at $(elapsed) s"
