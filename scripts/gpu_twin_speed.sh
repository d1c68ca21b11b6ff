#!/usr/bin/env bash
# On the GPU (device tool, `carry: [".whl"]`), one call of < 10 minutes: issue 25's twin speed. Extracts the targets
# on CUDA (four at a time), writes their twins, checks and times every twin against its Triton kernel
# (scripts/gpu_twins.py), prints twin / Triton per kind (scripts/twin_kinds.py) and, with square_compile among the
# targets, the square twin's bandwidth against a device copy. With `templates` after the targets' twins:
# examples/models/conv_bmm_autotune.py extracted, every module checked, the template modules benched and swept.
#   TARGETS="a.py b.py" bash scripts/gpu_twin_speed.sh [templates]     (TARGETS= : the templates alone;
#   SWEEP_S=0: no sweep; CHECK_FIRST=regex: those template-run modules checked first; TEMPLATE_BENCH=0: template modules checked, not timed; DEADLINE: no check starts after it;
#   VARIANTS="NAME:harvest.twin.MODULE.CONSTANT=INT[,...] ...": also the twins with those constants changed, timed in the same call)
#   On the device give OUT=$OUT (what comes back: run.log as it is printed, logs.tgz, twins.json/.md, kinds.md, ...);
#   do not pipe the output into tail: a call that reaches its limit returns none of it.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 COLUMNS=200
OUT=${OUT:-/tmp/out}
X=/tmp/x
L=/tmp/logs  # the logs travel back as one tarball, $OUT/logs.tgz (few files come back from a call)
mkdir -p "$OUT" "$X" "$L"
# Everything this script prints also goes to $OUT/run.log as it is printed: a call that reaches its time limit
# returns no output, but the files under $OUT still come back.
exec > >(tee "$OUT/run.log") 2>&1
pack_logs() { (cd /tmp && tar czf "$OUT/logs.tgz" logs 2>/dev/null); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
git log --oneline -1; git status --short | head -20
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
targets=${TARGETS-"examples/square_compile.py examples/small_model.py examples/models/bf16_mlp.py examples/models/conv_bn.py
examples/models/embedding_ce.py examples/models/transformer_encoder.py examples/models/gpt2.py
examples/models/graph_break_recompile.py examples/models/adamw_step.py examples/models/scans.py examples/models/cooperative.py
examples/models/user_kernel.py"}
if [ "${1:-}" = templates ]; then
  ( TORCHINDUCTOR_COMPILE_THREADS=4 timeout ${TEMPLATES_S:-240} python3 -m harvest extract examples/models/conv_bmm_autotune.py \
      -o "$X/conv_bmm_autotune" --device cuda --force > "$L/templates_extract.log" 2>&1
    echo "extract conv_bmm_autotune rc=$? ($(elapsed) s)" ) &
  template_pid=$!
fi
# wait on the jobs by pid: a bare `wait` also waits for the tee above (bash >= 5.1), which never ends
pids=()
n=0
for t in $targets; do
  name=$(basename "$t" .py)
  ( TORCHINDUCTOR_COMPILE_THREADS=2 timeout 200 python3 -m harvest extract "$t" -o "$X/$name" --device cuda -q --force > "$L/extract_$name.log" 2>&1
    echo "extract $name rc=$? ($(elapsed) s)"
    python3 -m harvest twin "$X/$name" > "$L/twin_$name.log" 2>&1; echo "twin $name rc=$?: $(grep -E 'translated|no twin' "$L/twin_$name.log" | tr '\n' ';')" ) &
  pids+=($!)
  n=$((n + 1)); if [ $((n % 4)) = 0 ]; then wait "${pids[@]}"; pids=(); fi
done
[ ${#pids[@]} -gt 0 ] && wait "${pids[@]}"
[ -n "$targets" ] && timeout ${TWINS_S:-420} python3 scripts/gpu_twins.py "$OUT" $(for t in $targets; do echo "$X/$(basename "$t" .py)"; done) > "$L/twins.txt" 2>&1
[ -n "$targets" ] && { grep -v "^ok " "$L/twins.txt" | tail -30; python3 scripts/twin_kinds.py "$OUT/twins.json" | tee "$OUT/kinds.md"; }
echo "twins done ($(elapsed) s)"
# VARIANTS="NAME:harvest.twin.MODULE.CONSTANT=INT[,...] ...": the twins again with those constants changed
# (scripts/twin_variants.py); each variant's changed twins checked and timed in this call, against the figures above
if [ -n "$targets" ] && [ -n "${VARIANTS:-}" ]; then
  python3 scripts/twin_variants.py "$X" "$X/variants" $VARIANTS
  for v in $VARIANTS; do
    name=${v%%:*}
    [ -s "$X/variants/$name/changed.txt" ] || continue
    timeout ${VARIANT_S:-200} python3 scripts/gpu_twins.py "$OUT/variants/$name" \
      $(for t in $targets; do echo "$X/variants/$name/$(basename "$t" .py)"; done) --only "$X/variants/$name/changed.txt" > "$L/variant_$name.txt" 2>&1
    echo "variant $name ($(elapsed) s): $(tail -1 "$L/variant_$name.txt")"
    python3 scripts/twin_variants.py --compare "$OUT/twins.json" "$OUT/variants/$name/twins.json" | tee "$OUT/variants/$name/compare.md"
  done
fi
# the extractions without their launch data (modules, twins, raw output_code): harvest ptx explains the slow twins
[ -n "$targets" ] && (cd "$X" && tar czf "$OUT/extractions.tgz" --exclude records --exclude '*.pt' --exclude conv_bmm_autotune --exclude variants . 2>/dev/null)
pack_logs
case " $targets " in *square_compile*) python3 scripts/gpu_bandwidth.py "$OUT" 2>&1 | tee "$OUT/bandwidth.txt" ;; esac
if [ "${1:-}" = templates ]; then
  wait "$template_pid"
  tail -8 "$L/templates_extract.log"
  # CHECK_FIRST (an extended regex on the module's path): those modules are checked before the others
  modules=$(ls "$X"/conv_bmm_autotune/g*/*.py 2>/dev/null)
  [ -n "${CHECK_FIRST:-}" ] && modules="$(echo "$modules" | grep -E "$CHECK_FIRST") $(echo "$modules" | grep -vE "$CHECK_FIRST")"
  for m in $modules; do
    [ "$(elapsed)" -gt "${DEADLINE:-540}" ] && { echo "deadline (${DEADLINE:-540} s): no check of ${m#$X/} and the modules after it"; break; }
    c="$L/check_$(basename "$(dirname "$m")")_$(basename "$m" .py).txt"
    timeout 60 python3 "$m" --check > "$c" 2>&1; echo "check ${m#$X/} rc=$?: $(grep -c ': ok' "$c") ok, $(grep -c 'differ\|NOT COMPARED\|Error' "$c") bad"
    grep -B2 -A3 "differ\|Error" "$c" | head -12
    pack_logs
    [ "${TEMPLATE_BENCH:-1}" = 1 ] && head -1 "$m" | grep -q ": template kernel" && { grep "^CONFIG = \|grid = \|^MATMUL = " "$m"; cat "$c" | tail -4; timeout 60 python3 "$m" --bench 2>&1 | tail -7; }
  done
  (cd "$X" && tar czf "$OUT/conv_bmm_autotune.tgz" --exclude records --exclude '*.pt' conv_bmm_autotune 2>/dev/null)
  first=$(cd "$X" && grep -l ": template kernel" conv_bmm_autotune/g0_forward/*.py | head -1)
  if [ -n "$first" ] && [ "${SWEEP_S:-120}" != 0 ]; then
    timeout ${SWEEP_S:-120} python3 -m harvest bench "$X/conv_bmm_autotune" -k "$(basename "$first" .py)" --sweep --sweep-max 12 \
      -o "$L/sweep" > "$L/sweep.log" 2>&1; echo "sweep rc=$? ($(elapsed) s)"; tail -20 "$L/sweep.log"
  fi
fi
pack_logs
echo "all done at $(elapsed) s"
