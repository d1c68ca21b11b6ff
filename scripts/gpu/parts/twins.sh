#!/usr/bin/env bash
# Part of scripts/gpu/verify.sh: run it as `OUT=$OUT bash scripts/gpu/verify.sh twins` (see that header).
# On the GPU (device tool, `carry: [".whl"]`), one call of < 10 minutes: issue 25's twin speed. Extracts the targets
# on CUDA (EXTRACT_JOBS at a time, 4), writes their twins, checks and times every twin against its Triton kernel
# (scripts/gpu/parts/twins.py), prints twin / Triton per kind (scripts/twin_kinds.py) and, with square_compile among the
# targets, the square twin's bandwidth against a device copy. With `templates` after the targets' twins:
# examples/models/conv_bmm_autotune.py extracted, every module checked, the template modules benched and swept.
#   TARGETS="a.py b.py" bash scripts/gpu/verify.sh twins [templates]     (TARGETS= : the templates alone;
#   SWEEP_S=0: no sweep; CHECK_FIRST=regex: those template-run modules checked first; TEMPLATE_BENCH=0: template modules checked, not timed; DEADLINE: no check starts after it;
#   VARIANTS="NAME:CHOICE=INT[,...] ...": also the twins with those choices changed (fields of harvest/twin/choices.py's
#   TwinChoices, `splitlooped:split_looped_rows=1`), timed in the same call;
#   time limits in seconds: EXTRACT_S a target's extraction (200), BUILD_S the builds (240), TWINS_S the twins' checks and
#   timings (420), VARIANT_S each variant's (200), VARIANTS_DEADLINE no variant runs past it (520))
#   On the device give OUT=$OUT (what comes back, 8 files: run.log as it is printed, twins.json/.md, kinds.md,
#   bandwidth.txt, extractions.tgz, logs.tgz, variants.tgz); do not pipe the output into tail: a call that reaches its
#   limit returns none of it. twins.json is written again after each twin: a cut call still returns what ran.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 COLUMNS=200
OUT=${OUT:-/tmp/out}
X=/tmp/x
L=/tmp/logs  # the logs travel back as one tarball, $OUT/logs.tgz (few files come back from a call)
V=/tmp/variants  # each variant's twins.json, twins.md and compare.md: back as $OUT/variants.tgz
mkdir -p "$OUT" "$X" "$L" "$V"
# Everything this script prints also goes to $OUT/run.log as it is printed: a call that reaches its time limit
# returns no output, but the files under $OUT still come back.
exec > >(tee "$OUT/run.log") 2>&1
pack_logs() { (cd /tmp && tar czf "$OUT/logs.tgz" logs 2>/dev/null); }
# twins.py OUT_DIR LIMIT ARGS...: again with --resume after a twin that hung (exit 3) or broke the process's CUDA
# context (exit 4), so that one such twin does not take the others with it
run_twins() {
  local dir=$1 limit=$2 t0 tries=0 rc left
  shift 2
  t0=$(date +%s)
  timeout "$limit" python3 scripts/gpu/parts/twins.py "$dir" "$@"; rc=$?
  while { [ $rc = 3 ] || [ $rc = 4 ]; } && [ $tries -lt 4 ]; do
    left=$(( limit - ($(date +%s) - t0) )); [ $left -le 10 ] && break
    tries=$((tries + 1)); echo "twins.py exit $rc: again with --resume ($left s left)"
    timeout "$left" python3 scripts/gpu/parts/twins.py "$dir" "$@" --resume; rc=$?
  done
  return $rc
}
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
  ( TORCHINDUCTOR_COMPILE_THREADS=2 timeout ${EXTRACT_S:-200} python3 -m harvest extract "$t" -o "$X/$name" --device cuda -q --force > "$L/extract_$name.log" 2>&1
    echo "extract $name rc=$? ($(elapsed) s)"
    python3 -m harvest twin "$X/$name" > "$L/twin_$name.log" 2>&1; echo "twin $name rc=$?: $(grep -E 'translated|no twin' "$L/twin_$name.log" | tr '\n' ';')" ) &
  pids+=($!)
  n=$((n + 1)); if [ $((n % ${EXTRACT_JOBS:-4})) = 0 ]; then wait "${pids[@]}"; pids=(); fi
done
[ ${#pids[@]} -gt 0 ] && wait "${pids[@]}"
extractions=$(for t in $targets; do echo "$X/$(basename "$t" .py)"; done)
# VARIANTS="NAME:CHOICE=INT[,...] ...": the twins again with those TwinChoices changed
# (scripts/twin_variants.py), written and built while the twins as they are build: every build is done before the
# first timing (a compiler beside a timed launch slows it); each variant's changed twins are then checked and timed
# in this call, against the figures of the twins as they are
vpids=()
if [ -n "$targets" ] && [ -n "${VARIANTS:-}" ]; then
  for v in $VARIANTS; do
    name=${v%%:*}
    ( python3 scripts/twin_variants.py "$X" "$X/variants" "$v" > "$L/variant_${name}_write.txt" 2>&1; tail -2 "$L/variant_${name}_write.txt"
      if [ -s "$X/variants/$name/changed.txt" ]; then
        timeout ${BUILD_S:-240} python3 scripts/gpu/parts/twins.py "$V/$name" $(for t in $targets; do echo "$X/variants/$name/$(basename "$t" .py)"; done) \
          --only "$X/variants/$name/changed.txt" --build-only > "$L/variant_${name}_build.txt" 2>&1
        echo "variant $name built rc=$? ($(elapsed) s)"
      fi ) &
    vpids+=($!)
  done
fi
if [ -n "$targets" ]; then
  timeout ${BUILD_S:-240} python3 scripts/gpu/parts/twins.py "$OUT" $extractions --build-only > "$L/build.txt" 2>&1
  echo "twins built rc=$? ($(elapsed) s)"
fi
[ ${#vpids[@]} -gt 0 ] && wait "${vpids[@]}"
[ -n "$targets" ] && run_twins "$OUT" ${TWINS_S:-420} $extractions > "$L/twins.txt" 2>&1
[ -n "$targets" ] && { grep -v "^ok " "$L/twins.txt" | tail -40; python3 scripts/twin_kinds.py "$OUT/twins.json" | tee "$OUT/kinds.md"; }
echo "twins done ($(elapsed) s)"
case " $targets " in *square_compile*) python3 scripts/gpu/parts/bandwidth.py "$OUT" 2>&1 | tee "$OUT/bandwidth.txt" ;; esac
# the extractions without their launch data (modules, twins, raw output_code): harvest ptx explains the slow twins
[ -n "$targets" ] && (cd "$X" && tar czf "$OUT/extractions.tgz" --exclude records --exclude '*.pt' --exclude conv_bmm_autotune --exclude variants . 2>/dev/null)
pack_logs
if [ -n "$targets" ] && [ -n "${VARIANTS:-}" ]; then
  for v in $VARIANTS; do
    name=${v%%:*}
    [ -s "$X/variants/$name/changed.txt" ] || { echo "variant $name: no twin differs"; continue; }
    left=$(( ${VARIANTS_DEADLINE:-520} - $(elapsed) ))
    [ $left -lt 20 ] && { echo "variant $name not timed: past VARIANTS_DEADLINE (${VARIANTS_DEADLINE:-520} s)"; continue; }
    run_twins "$V/$name" $(( left < ${VARIANT_S:-200} ? left : ${VARIANT_S:-200} )) \
      $(for t in $targets; do echo "$X/variants/$name/$(basename "$t" .py)"; done) --only "$X/variants/$name/changed.txt" > "$L/variant_$name.txt" 2>&1
    echo "variant $name ($(elapsed) s): $(tail -1 "$L/variant_$name.txt")"
    grep -v "^ok \|^built " "$L/variant_$name.txt" | tail -12
    [ -s "$V/$name/twins.json" ] && python3 scripts/twin_variants.py --compare "$OUT/twins.json" "$V/$name/twins.json" | tee "$V/$name/compare.md"
    (cd /tmp && tar czf "$OUT/variants.tgz" variants 2>/dev/null)
  done
fi
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
