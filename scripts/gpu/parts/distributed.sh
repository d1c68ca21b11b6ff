#!/usr/bin/env bash
# Part of scripts/gpu/verify.sh: run it as `OUT=$OUT bash scripts/gpu/verify.sh distributed` (see that header).
# On two GPUs (device tool, kind nvidia-h200-x2, `carry: [".whl"]`), or on one with gloo, one call of < 10 minutes:
# issue 26 on CUDA.
#   bash scripts/gpu/verify.sh distributed the torchrun examples (DDP: same, divergent, a rank-dependent op; FSDP2; an
#                                      all_reduce in the graph) extracted with --nproc-per-node 2 --device cuda
#                                      (NCCL, one GPU per rank), every module --check'ed on the GPU; a failing and a
#                                      hanging rank; per job its manifest, report.md and the check logs in $OUT
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 COLUMNS=200 PATH=/tmp/site/bin:$PATH
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1  # as KINDS.md says: keep them set
OUT=${OUT:-/tmp/out}
X=/tmp/x
mkdir -p "$OUT" "$X"
[ -n "${SKIP_INSTALL:-}" ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.device_count(), 'x', torch.cuda.get_device_name())"
# One GPU for two ranks: NCCL refuses two ranks on one device, gloo takes CUDA tensors (the examples read BACKEND)
[ "$(python3 -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)" -lt 2 ] && export BACKEND=gloo && echo "one GPU: BACKEND=gloo, both ranks on cuda:0"
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }

job() {  # job NAME SCRIPT [HARVEST OPTIONS...] [-- SCRIPT ARGS]
  local name=$1 script=$2; shift 2
  local t0=$(date +%s)
  timeout ${EXTRACT_S:-240} python3 -m harvest extract "examples/distributed/$script" -o "$X/$name" --device ${DEVICE:-cuda} \
    --nproc-per-node 2 --force "$@" > "$OUT/${name}_extract.log" 2>&1
  local rc=$?
  echo "== $name: extract rc=$rc in $(( $(date +%s) - t0 )) s (at $(elapsed) s)"
  grep "harvest: error" "$OUT/${name}_extract.log" | cut -c1-400
  [ -f "$X/$name/manifest.json" ] || { tail -5 "$OUT/${name}_extract.log"; return; }
  python3 - "$X/$name" <<'PY'
import json, sys
m = json.load(open(sys.argv[1] + "/manifest.json"))
for g in m["graphs"]:
    print(f"  {g['name']:22} ranks {g.get('ranks')}  " + ", ".join(f"{k['module']} {k.get('ranks')}" for k in g["kernels"] if k["module"]))
PY
  local pass=0 fail=0 outputs=0 logs="$OUT/${name}_checks"
  mkdir -p "$logs"
  if [ -z "${NOCHECK:-}" ]; then
    python3 -c "import json,sys; m=json.load(open('$X/$name/manifest.json')); print('\n'.join(sorted({k['module'] for g in m['graphs'] for k in g['kernels'] if k['module']})))" \
      | xargs -P 8 -I{} sh -c 'timeout 180 python3 "$1/$2" --check > "$3/$(echo $2 | tr / _).log" 2>&1; echo $? >> "$3/$(echo $2 | tr / _).log"' _ "$X/$name" {} "$logs"
    for log in "$logs"/*.log; do
      if [ "$(tail -1 "$log")" = "0" ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "  FAIL $log"; tail -5 "$log"; fi
      outputs=$((outputs + $(grep -c ": ok" "$log")))
    done
  fi
  echo "  modules: $pass passed, $fail failed; outputs compared ok: $outputs"
  sed -n '/^## Ranks/,/^## What to tune/p' "$X/$name/report.md" | grep -v "^## What" > "$OUT/${name}_ranks.md"
  grep "^- \|^Every rank" "$OUT/${name}_ranks.md" | cut -c1-300
  cp "$X/$name/manifest.json" "$OUT/${name}_manifest.json"
}

if [ -n "${ONLY:-}" ]; then job $ONLY; echo "all done at $(elapsed) s"; exit; fi
job ddp ddp_mlp.py
job ddp_rank_op ddp_mlp.py -- --rank-op
job ddp_divergent ddp_mlp.py -- --divergent
job fsdp2 fsdp2_mlp.py
job allreduce allreduce_in_graph.py
NOCHECK=1 job ddp_fail ddp_mlp.py -- --fail-rank 1
NOCHECK=1 EXTRACT_S=150 job ddp_hang ddp_mlp.py --timeout 90 -- --hang-rank 1
echo "leftover rank processes: $(pgrep -fc harvest.capture.bootstrap)"
echo "all done at $(elapsed) s"
