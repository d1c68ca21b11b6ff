#!/usr/bin/env bash
# On the GPU (device tool, `carry: [".whl"]`), one call of < 10 minutes: issue 24's "What to tune first" measured.
#   bash scripts/gpu_report.sh    gpt2 and transformer_encoder (a training step of a transformer block) extracted on
#                                 the H200, then `harvest bench` of each whole extraction (its step profile ranks the
#                                 kernels); per model one tarball of report.md, report.html, manifest.json, bench/
#                                 and raw/capture.json, and the logs
# MODELS="..." picks other targets, PROBE=1 first runs scripts/gpu_attention_probe.py; each step has its own time limit so that the call ends inside the device's.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 COLUMNS=200 PATH=/tmp/site/bin:$PATH
OUT=${OUT:-/tmp/out}
X=/tmp/x
mkdir -p "$OUT" "$X"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
[ -n "${PROBE:-}" ] && timeout 60 python3 scripts/gpu_attention_probe.py 2>&1 | tail -3
for model in ${MODELS:-gpt2 transformer_encoder}; do
  timeout ${EXTRACT_S:-170} python3 -m harvest extract "examples/models/$model.py" -o "$X/$model" --device cuda --force \
    > "$OUT/${model}_extract.log" 2>&1
  echo "extract $model rc=$? ($(elapsed) s)"; tail -3 "$OUT/${model}_extract.log"
  timeout ${BENCH_S:-150} python3 -m harvest bench "$X/$model" > "$OUT/${model}_bench.log" 2>&1
  echo "bench $model rc=$? ($(elapsed) s)"
  sed -n '/What to tune first/,$p' "$OUT/${model}_bench.log" | head -30
  tar czf "$OUT/$model.tgz" -C "$X/$model" --exclude records report.md report.html manifest.json bench raw/capture.json 2>/dev/null
  echo "$model.tgz: $(du -k "$OUT/$model.tgz" | cut -f1) KiB"
done
echo "all done at $(elapsed) s"
