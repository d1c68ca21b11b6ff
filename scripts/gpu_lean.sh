#!/usr/bin/env bash
# On the GPU (device tool), one call of < 10 minutes: check the lean kernels (issue 8, part 5: size parameters made
# real, dead locals dropped) on the H200. Extracts the targets on CUDA, runs every module's own --check (against the
# run's record and the eager reference), writes and checks every CUDA twin (scripts/gpu_twins.py), and benches one
# real model (extracted vs Inductor-in-graph: did a real size parameter cost speed?). Results under $OUT.
#   bash scripts/gpu_lean.sh [TARGET ...]
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 COLUMNS=200
OUT=${OUT:-/tmp/out}
X=/tmp/x
mkdir -p "$OUT/logs" "$X"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
git log --oneline -1 2>/dev/null
targets=${*:-examples/square_compile.py examples/small_model.py examples/models/gpt2.py examples/models/conv_bn.py examples/models/embedding_ce.py}
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
n=0
for t in $targets; do
  name=$(basename "$t" .py)
  ( TORCHINDUCTOR_COMPILE_THREADS=2 timeout 240 python3 -m harvest extract "$t" -o "$X/$name" --device cuda -q > "$OUT/logs/extract_$name.log" 2>&1
    echo "extract $name rc=$? ($(elapsed) s)" ) &
  n=$((n + 1)); if [ $((n % 3)) = 0 ]; then wait; fi
done
wait
# every module's own --check, 8 at a time
ls "$X"/*/g*/*.py | xargs -P 8 -I{} sh -c 'timeout 120 python3 {} --check > /dev/null 2>&1 && echo "ok {}" || echo "FAIL {}"' | sort > "$OUT/checks.txt"
echo "module --check: $(grep -c '^ok' "$OUT/checks.txt") ok, $(grep -c '^FAIL' "$OUT/checks.txt") failed ($(elapsed) s)"
grep '^FAIL' "$OUT/checks.txt" | head -20
for f in $(grep '^FAIL' "$OUT/checks.txt" | head -3 | cut -d' ' -f2); do echo "== $f"; timeout 120 python3 "$f" --check 2>&1 | tail -8; done
# gpt2 benched before any twin is written (a twin adds a column, and a ~30 s build per kernel)
if [ -d "$X/gpt2" ]; then
  timeout 200 python3 -m harvest bench "$X/gpt2" > "$OUT/logs/bench_gpt2.log" 2>&1; echo "bench gpt2 rc=$? ($(elapsed) s)"
  cp "$X/gpt2/bench/bench.json" "$OUT/bench_gpt2.json" 2>/dev/null
  python3 scripts/bench_summary.py "$X" 2>&1 | tail -30 | tee "$OUT/bench_summary.txt"
fi
for d in "$X"/*/; do python3 -m harvest twin "$d" -q > "$OUT/logs/twin_$(basename "$d").log" 2>&1; done
python3 scripts/gpu_twins.py "$OUT" "$X"/* 2>&1 | tee "$OUT/logs/gpu_twins.log" | grep -v "^ok " | tail -30
echo "twins done at $(elapsed) s"
[ -d "$X/square_compile" ] && python3 scripts/gpu_bandwidth.py "$OUT" 2>&1 | tee "$OUT/bandwidth.txt"
echo "all done at $(elapsed) s"
