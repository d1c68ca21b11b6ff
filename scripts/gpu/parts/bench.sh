#!/usr/bin/env bash
# Part of scripts/gpu/verify.sh: run it as `OUT=$OUT bash scripts/gpu/verify.sh bench` (see that header).
# `harvest bench` on the GPU machine (device tool), in ONE call of < 10 minutes (issue 10):
#   python3 -m pip install ... .whl/*.whl is done here; run from the repo root with .whl carried:
#   bash scripts/gpu/verify.sh bench
# 1. extracts the examples and three real models on CUDA, in parallel (extraction is mostly CPU work);
# 2. benches them one after the other (timing wants the GPU to itself): the seed's table (pytorch_square with
#    --profile: aten::pow / aten::mul), square_square with --sweep (sweep.png), a looped-reduction softmax with --sweep,
#    small_model, gpt2 as a whole model (timed: the 2-minute acceptance), bf16_mlp and conv_bn while time is left;
#    square_compile with its CUDA twin (harvest twin first: the twin column);
#    square_square benched a second time (repeatability), a module's own --bench --json (the same timing code),
#    the ncu command printed and run on one kernel, the requires_cuda bench test;
# 3. packs every bench/ directory (CSV, JSON, PNG, profile.txt, trace.json, ncu report) into $OUT/bench.tgz and
#    prints a compact summary with the acceptance figures (also $OUT/summary.txt).
# ONLY="extract_gpt2 bench_gpt2_whole_model ..." runs just those steps (a rerun after a fix, within the device budget).
# One failing step never stops the rest (set -u, no set -e): each step's rc and seconds go to $OUT/steps.txt and its
# output to logs/<step>.log inside the tarball. Steps start only while the budget (BUDGET s, default 540) allows.
set -u
start=$(date +%s)
budget=${BUDGET:-540}
OUT=${OUT:-/tmp/harvest-bench-out}
X=/tmp/x                      # extractions live outside the tree (their records are large)
logs=/tmp/bench-logs
mkdir -p "$OUT" "$X" "$logs"
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 COLUMNS=200
[ -d /usr/local/cuda/bin ] && export PATH=$PATH:/usr/local/cuda/bin
command -v ncu > /dev/null || for d in /opt/nvidia/nsight-compute/*/; do [ -x "$d/ncu" ] && export PATH=$PATH:${d%/}; done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || echo "libcst wheel install failed (rc $?)" | tee -a "$OUT/steps.txt"
{
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
  git log --oneline -1 2>/dev/null; git status --short 2>/dev/null | head -20
  command -v ncu || echo "ncu: not on PATH"
} 2>&1 | tee "$OUT/env.txt"

elapsed() { echo $(( $(date +%s) - start )); }
# step NAME LIMIT_S CMD...: runs CMD if the budget allows, logs its output, records rc and seconds.
step() {
  local name=$1 limit=$2; shift 2
  if [ -n "${ONLY:-}" ] && ! [[ " $ONLY " == *" $name "* ]]; then return; fi  # ONLY="step names": a partial rerun
  local left=$(( budget - $(elapsed) ))
  if [ "$left" -lt 20 ]; then echo "$name SKIPPED (budget: $(elapsed) s used of $budget)" | tee -a "$OUT/steps.txt"; return; fi
  [ "$limit" -gt "$left" ] && limit=$left
  local t0; t0=$(date +%s.%N)
  timeout "$limit" "$@" > "$logs/$name.log" 2>&1
  local rc=$?
  echo "$name rc=$rc $(python3 -c "print(f'{$(date +%s.%N) - $t0:.1f}')") s" | tee -a "$OUT/steps.txt"
}

# -- 1. extraction, in parallel -----------------------------------------------------------------------------------------
targets="examples/square_compile.py examples/square_square.py examples/pytorch_square.py examples/small_model.py
examples/softmax.py examples/models/gpt2.py examples/models/bf16_mlp.py examples/models/conv_bn.py"
pids=""
for t in $targets; do
  name=$(basename "$t" .py)
  # two Inductor compile workers each: eight extractions share 16 cores
  TORCHINDUCTOR_COMPILE_THREADS=2 step "extract_$name" 240 python3 -m harvest extract "$t" -o "$X/$name" --device cuda -q &
  pids="$pids $!"
done
wait $pids
echo "extraction done at $(elapsed) s" | tee -a "$OUT/steps.txt"

# -- 2. benches, one after the other --------------------------------------------------------------------------------------
bench() { local name=$1; shift; step "bench_$name" "$@"; }
step twin_square_compile 60 python3 -m harvest twin "$X/square_compile"   # the twin column (its build: ~30 s)
bench square_compile 150 python3 -m harvest bench "$X/square_compile"
bench square_square_sweep 150 python3 -m harvest bench "$X/square_square" --sweep
bench square_square_again 90 python3 -m harvest bench "$X/square_square" -o "$X/square_square/bench_again"
bench pytorch_square_profile 120 python3 -m harvest bench "$X/pytorch_square" --profile
module=$(ls "$X"/square_square/g0_inference/*.py 2>/dev/null | head -1)
[ -n "$module" ] && step module_bench_json 60 python3 "$module" --bench --json "$X/square_square/bench/module_bench.json"
bench softmax_sweep 180 python3 -m harvest bench "$X/softmax" --sweep --sweep-max 48
bench small_model 120 python3 -m harvest bench "$X/small_model"
bench gpt2_whole_model 150 python3 -m harvest bench "$X/gpt2"
bench bf16_mlp 100 python3 -m harvest bench "$X/bf16_mlp"
[ -n "$module" ] && step ncu_print 30 python3 -m harvest bench "$module" --ncu
[ -n "$module" ] && step ncu_run 120 python3 -m harvest bench "$module" --ncu run
bench conv_bn 120 python3 -m harvest bench "$X/conv_bn"
step pytest_requires_cuda 120 python3 -m pytest -q -x -m requires_cuda tests/test_bench.py -p no:cacheprovider

# -- 3. pack and summarize --------------------------------------------------------------------------------------------------
pack=/tmp/pack
rm -rf "$pack"; mkdir -p "$pack"
cp -r "$logs" "$pack/logs"
cp "$OUT/steps.txt" "$OUT/env.txt" "$pack/" 2>/dev/null
for d in "$X"/*/; do
  name=$(basename "$d")
  mkdir -p "$pack/$name"
  for b in bench bench_again; do
    [ -d "$d$b" ] && cp -r "$d$b" "$pack/$name/$b"
  done
  cp "$d/manifest.json" "$pack/$name/" 2>/dev/null
  cp "$d"/g*/*.ncu-rep "$d"/g*/*.ncu.txt "$pack/$name/" 2>/dev/null
done
python3 scripts/bench_summary.py "$X" 2>&1 | tee "$OUT/summary.txt"
cp "$OUT/summary.txt" "$pack/"
# The device tool brings back files of at most 16 MiB: traces and ncu reports go in a tarball of their own.
tar czf "$OUT/bench.tgz" -C "$pack" --exclude "*.ncu-rep" --exclude "trace.json" .
(cd "$pack" && find . -name "*.ncu-rep" -o -name "trace.json" | tar czf "$OUT/heavy.tgz" -T -)
for f in "$OUT"/*.tgz; do [ "$(stat -c %s "$f")" -gt 16000000 ] && echo "WARNING: $f is over 16 MB and will not come back"; done
ls -la "$OUT"
echo "total $(elapsed) s"
