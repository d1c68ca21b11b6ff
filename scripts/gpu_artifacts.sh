#!/usr/bin/env bash
# On the GPU (device tool, `carry: [".whl"]`), one call of < 10 minutes: the H200 model fixtures read as artifacts
# (no run: references from the graph comments), every module's --check on the GPU (made-up inputs, seed 0, against
# the eager reference); then, with MATRIX="a.py b.py", those targets extracted for real on the GPU and every module
# checked against the run's record and the reference (scripts/model_matrix.py). Per graph: modules passed, outputs
# the reference compared, outputs that differ, outputs it could not compute. Results, and every check's output in
# one tarball, under $OUT.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 COLUMNS=200 PATH=/tmp/site/bin:$PATH
OUT=${OUT:-/tmp/out}
X=/tmp/xa
mkdir -p "$OUT" "$X"
[ -n "${SKIP_INSTALL:-}" ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
start=$(date +%s)
for fixture in tests/fixtures/torch-2.11.0+cu130_triton-3.6.0/models/*/*.py; do
  name=$(basename "$(dirname "$fixture")")-$(basename "$fixture" .py)
  python3 -m harvest extract -q "$fixture" -o "$X/$name" > "$OUT/$name.extract.log" 2>&1 || echo "$name: extract failed"
done
echo "extracted at $(( $(date +%s) - start )) s"
for dir in "$X"/*/; do
  python3 -c "import json, sys; m = json.load(open(sys.argv[1] + 'manifest.json')); print('\n'.join(sys.argv[1] + k['module'] for g in m['graphs'] for k in g['kernels'] if k['module']))" "$dir"
done | xargs -P ${JOBS:-12} -I{} sh -c 'timeout 240 python3 "$1" --check > "$1.check" 2>&1; echo "rc=$?" >> "$1.check"' _ {}
echo "checked at $(( $(date +%s) - start )) s"
summary="$OUT/artifacts.txt"
: > "$summary"
for dir in "$X"/*/; do
  name=$(basename "$dir")
  checks=$(ls "$dir"*/*.check 2>/dev/null)
  [ -n "$checks" ] || { echo "$name: no module" >> "$summary"; continue; }
  pass=$(grep -l "^rc=0" $checks | wc -l); all=$(echo "$checks" | wc -l)
  ok=$(cat $checks | grep -c "reference: ok"); bad=$(cat $checks | grep -c "reference: .*differ\|reference: shape")
  not=$(cat $checks | grep -c "reference: not computed\|NOT COMPARED")
  echo "$name: $pass / $all modules pass; reference compared $ok outputs, $bad differ, $not not compared" >> "$summary"
  for f in $(grep -L "^rc=0" $checks); do echo "  FAIL ${f#$X/}"; grep -v "^rc=" "$f" | tail -4 | sed 's/^/    /'; done >> "$summary"
done
cat "$summary"
tar czf "$OUT/artifact_checks.tgz" -C "$X" $(cd "$X" && ls -d */*/*.check) 2>/dev/null
echo "artifacts done at $(( $(date +%s) - start )) s"
if [ -n "${MATRIX:-}" ]; then
  TORCHINDUCTOR_COMPILE_THREADS=4 timeout ${MATRIX_S:-300} python3 scripts/model_matrix.py --device cuda --out /tmp/xm \
    --jobs 6 --timeout 200 --no-plain $MATRIX > "$OUT/matrix.log" 2>&1
  echo "matrix rc=$? at $(( $(date +%s) - start )) s"; cp /tmp/xm/matrix.md "$OUT/" 2>/dev/null; tail -25 "$OUT/matrix.log"
fi
