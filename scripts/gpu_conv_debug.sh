#!/usr/bin/env bash
# On the GPU (device tool): why a max-autotune convolution template's module fails --check against its record.
# Extracts examples/models/conv_bmm_autotune.py, runs each convolution template module's --check (output kept), and
# prints, per storage of its record, whether the bytes after the launch differ from those before.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 COLUMNS=200
X=/tmp/x
mkdir -p "$X"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
TORCHINDUCTOR_COMPILE_THREADS=8 timeout 240 python3 -m harvest extract examples/models/conv_bmm_autotune.py -o "$X/cb" --device cuda --force -q > /tmp/extract.log 2>&1
echo "extract rc=$?"
for m in "$X"/cb/g0_forward/convolution*.py; do
  echo "== ${m#$X/}"; grep "^OUTPUTS\|^RECORD = \|Tensor(" "$m"
  timeout 60 python3 "$m" --check 2>&1 | tail -16
  python3 - "$m" <<'PY'
import re, sys, torch, os
text = open(sys.argv[1]).read()
record = re.search(r"^RECORD = '([^']+)'", text, re.M)
if record:
    data = torch.load(os.path.join(os.path.dirname(sys.argv[1]), record.group(1)), weights_only=True)
    for i, (b, a) in enumerate(zip(data["before"], data["after"])):
        print(f"  storage {i}: before {None if b is None else b.numel()} bytes, after {None if a is None else a.numel()} bytes,",
              "differ in", None if a is None or b is None else int((a != b).sum()), "bytes")
PY
done
grep -n "conv\|template" /tmp/extract.log | head -20
