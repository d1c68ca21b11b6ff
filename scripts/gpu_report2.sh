#!/usr/bin/env bash
# On the GPU (device tool, `carry: [".whl"]`): transformer_encoder extracted, the step of its backward graph debugged
# (scripts/gpu_step_debug.py: which part of bench's in-graph profile crashes), then `harvest bench` again; one tarball.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 COLUMNS=200 PATH=/tmp/site/bin:$PATH
OUT=${OUT:-/tmp/out}
X=/tmp/x
mkdir -p "$OUT" "$X"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
model=${MODEL:-transformer_encoder}
timeout ${EXTRACT_S:-200} python3 -m harvest extract "examples/models/$model.py" -o "$X/$model" --device cuda --force > "$OUT/extract.log" 2>&1
echo "extract rc=$? ($(elapsed) s)"
for graph in ${GRAPHS:-g1_backward}; do
  timeout 120 python3 scripts/gpu_step_debug.py "$X/$model" "$graph" > "$OUT/debug_$graph.log" 2>&1
  echo "debug $graph rc=$? ($(elapsed) s)"; tail -25 "$OUT/debug_$graph.log"
done
timeout ${BENCH_S:-200} python3 -m harvest bench "$X/$model" > "$OUT/bench.log" 2>&1
echo "bench rc=$? ($(elapsed) s)"; grep -n "died\|What to tune\|Measured\|estimate" "$OUT/bench.log" | head
tar czf "$OUT/$model.tgz" -C "$X/$model" --exclude records report.md report.html manifest.json bench raw 2>/dev/null
echo "all done at $(elapsed) s"
