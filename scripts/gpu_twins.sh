#!/usr/bin/env bash
# On the GPU (device tool): extract the examples and the real models on CUDA, write their CUDA twins, build and
# check every twin against the run's record and the eager reference, time twin vs Triton, and measure the square
# twin's bandwidth against a device copy in the same run. Also runs `harvest extract --run-artifact` on a CUDA
# artifact. Results under $OUT (twins.json, twins.md, bandwidth.txt, logs/).
#   bash scripts/gpu_twins.sh [TARGET ...]
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/logs" /tmp/x
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
targets=${*:-examples/square_compile.py examples/square_square.py examples/small_model.py examples/models/conv_bn.py examples/models/gpt2.py examples/models/embedding_ce.py examples/models/bf16_mlp.py examples/models/transformer_encoder.py examples/models/graph_break_recompile.py}
start=$(date +%s)
extract() {
  name=$(basename "$1" .py)
  timeout 240 python3 -m harvest extract "$1" -o "/tmp/x/$name" --device cuda -q > "$OUT/logs/extract_$name.log" 2>&1
  echo "extract $name rc=$? ($(( $(date +%s) - start )) s)"
  python3 -m harvest twin "/tmp/x/$name" > "$OUT/logs/twin_$name.log" 2>&1
  echo "twin $name rc=$?: $(grep -E 'translated|no twin' "$OUT/logs/twin_$name.log" | tr '\n' ';')"
}
n=0
for t in $targets; do extract "$t" & n=$((n + 1)); if [ $((n % 3)) = 0 ]; then wait; fi; done; wait
python3 scripts/gpu_twins.py "$OUT" /tmp/x/* 2>&1 | tee "$OUT/logs/gpu_twins.log" | grep -v "^ok " | tail -80
echo "twins done at $(( $(date +%s) - start )) s"
python3 scripts/gpu_bandwidth.py "$OUT" 2>&1 | tee "$OUT/bandwidth.txt"
# --run-artifact on CUDA: run a captured output_code.py under the recorder, then check its modules
art=$(ls /tmp/x/small_model/raw/*/output_code.py 2>/dev/null | head -1)
if [ -n "$art" ]; then
  python3 -m harvest extract "$art" --run-artifact --device cuda -o /tmp/ra -q > "$OUT/logs/run_artifact.log" 2>&1; echo "run-artifact rc=$?"
  for m in /tmp/ra/*/*.py; do python3 "$m" --check > /dev/null 2>&1 && echo "ok $m" || echo "FAIL $m"; done | sort | uniq -c | awk '{print $2}' | sort | uniq -c
  grep -h "launch record" "$OUT/logs/run_artifact.log"
else
  echo "run-artifact skipped: small_model is not among the targets"
fi
echo "all done at $(( $(date +%s) - start )) s"
