#!/usr/bin/env bash
# On the GPU (device tool, `carry: [".whl"]`), one call of a few minutes: the H200 model fixtures read as artifacts
# (no run, references from the graph comments), every module's --check on the GPU (made-up inputs, seed 0, against
# the eager reference). Per graph: modules passed, outputs the reference compared, outputs it could not.
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
  python3 -m harvest extract -q "$fixture" -o "$X/$name" > "$OUT/$name.extract.log" 2>&1 || { echo "$name: extract failed"; continue; }
  python3 -c "import json; m=json.load(open('$X/$name/manifest.json')); print('\n'.join(k['module'] for g in m['graphs'] for k in g['kernels'] if k['module']))" \
    | xargs -P 8 -I{} sh -c 'timeout 240 python3 "$1/$2" --check > "$1/$2.check" 2>&1; echo "rc=$?" >> "$1/$2.check"' _ "$X/$name" {}
  pass=$(grep -l "^rc=0" "$X/$name"/*/*.check | wc -l); all=$(ls "$X/$name"/*/*.check | wc -l)
  ok=$(cat "$X/$name"/*/*.check | grep -c "reference: ok"); not=$(cat "$X/$name"/*/*.check | grep -c "reference: not computed")
  bad=$(cat "$X/$name"/*/*.check | grep -c "reference: .*differ\|reference: FAIL")
  echo "$name: $pass / $all modules pass; reference compared $ok outputs, $bad differ, $not not computed"
  grep -l -v "^rc=0" /dev/null $(grep -L "^rc=0" "$X/$name"/*/*.check) 2>/dev/null | head -3 | while read f; do echo "  FAIL $f"; grep -v "^rc=" "$f" | tail -3; done
done
echo "all done at $(( $(date +%s) - start )) s"
