#!/usr/bin/env bash
# On the GPU (device tool, `carry: [".whl"]`), one call of < 10 minutes: issue 21's kernel kinds on the H200.
#   bash scripts/gpu_kinds.sh capture   the max-autotune MLP timed bare and under harvest (py-spy dumps of the
#                                       capture child while it runs), then the kind targets through
#                                       scripts/model_matrix.py (every module's --check); raw captures under $OUT
#   bash scripts/gpu_kinds.sh again     scans, user_kernel and encoder_norm_first through the matrix beside the autotune
#                                       MLP's extraction, then `harvest bench` of the MLP; one tarball of the results
#   bash scripts/gpu_kinds.sh last      user_kernel and encoder_norm_first through the matrix, scans extracted and its
#                                       modules checked beside them; one tarball
#   bash scripts/gpu_kinds.sh runs      `harvest run --with` (results and A/B times) on square_square, small_model and
#                                       transformer_encoder with edits; their runs/ in one tarball
#   bash scripts/gpu_kinds.sh runs2     square_square as extracted (-k), edited and wrong; small_model with tolerances;
#                                       then scans
#   bash scripts/gpu_kinds.sh scans     split_scan.py extracted, every module checked, its raw capture back
#   bash scripts/gpu_kinds.sh cooperative  cooperative.py extracted, every module checked (as recorded, and with RSPLIT
#                                       edited) and benched, its raw capture back; with THEN_ARTIFACTS=1, then
#                                       scripts/gpu_artifacts.sh in the same call
#   bash scripts/gpu_kinds.sh fixed     fixed_config.py extracted, every module checked and benched, its raw back
#   bash scripts/gpu_kinds.sh templates the autotune MLP extracted (user_kernel and encoder_norm_first through the
#                                       matrix beside it), every module checked, the template modules' --bench,
#                                       `harvest bench` of the extraction and a --sweep of one template
# Each step has its own time limit so that the call ends inside the device's, and everything is written to $OUT
# as it is made.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 COLUMNS=200 PATH=/tmp/site/bin:$PATH
OUT=${OUT:-/tmp/out}
X=/tmp/x
mkdir -p "$OUT" "$X"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
raw_back() {  # an extraction's raw capture (without the recorded data) back to this machine
  [ -d "$X/$1/raw" ] && tar czf "$OUT/$1-raw.tgz" -C "$X/$1" --exclude records raw manifest.json && echo "raw of $1: $(du -k "$OUT/$1-raw.tgz" | cut -f1) KiB"
}
MLP=${MLP:-examples/models/autotune_mlp.py}
if [ "${1:-}" = fixed ]; then
  timeout ${FIXED_S:-200} python3 -m harvest extract examples/models/fixed_config.py -o "$X/fixed_config" --device cuda \
    --force > "$OUT/fixed_extract.log" 2>&1
  echo "harvest extract fixed_config rc=$? ($(elapsed) s)"; tail -6 "$OUT/fixed_extract.log"; raw_back fixed_config
  for m in "$X"/fixed_config/g*/*.py; do
    grep -n "^CONFIG = " "$m"
    timeout 90 python3 "$m" --check > "$OUT/check.txt" 2>&1; echo "check ${m#$X/} rc=$?"; tail -6 "$OUT/check.txt"
    timeout 90 python3 "$m" --bench 2>&1 | tail -5
  done
  echo "fixed done ($(elapsed) s)"
  exit 0
fi
if [ "${1:-}" = cooperative ]; then
  timeout ${COOP_S:-200} python3 -m harvest extract examples/models/cooperative.py -o "$X/cooperative" --device cuda --force \
    > "$OUT/coop_extract.log" 2>&1
  echo "harvest extract cooperative rc=$? ($(elapsed) s)"; tail -6 "$OUT/coop_extract.log"; raw_back cooperative
  for m in "$X"/cooperative/g*/*.py; do
    grep -n "^CONFIG = \|grid = " "$m"
    timeout 90 python3 "$m" --check > "$OUT/check.txt" 2>&1; echo "check ${m#$X/} rc=$?"; tail -8 "$OUT/check.txt"
    timeout 90 python3 "$m" --bench 2>&1 | tail -6
    sed -i "s/'RSPLIT': \([0-9]*\)/'RSPLIT': 4/" "$m"  # another split: the partials of 4 programs a row
    timeout 90 python3 "$m" --check > "$OUT/check.txt" 2>&1; echo "check with RSPLIT 4 ${m#$X/} rc=$?"; tail -8 "$OUT/check.txt"
  done
  ( cd "$X" && timeout 60 python3 -m harvest pack "$(ls cooperative/g0_inference/*.py | head -1)" -o "$X/packed/packed.py" 2>&1 | tail -1 )
  ( cd "$X/packed" && rm -f packed.record.pt && timeout 90 python3 packed.py --check 2>&1 | tail -4 )
  echo "cooperative done ($(elapsed) s)"
  [ -z "${THEN_ARTIFACTS:-}" ] || SKIP_INSTALL=1 OUT="$OUT" bash scripts/gpu_artifacts.sh
  exit 0
fi
if [ "${1:-capture}" = capture ]; then
  cache=$(mktemp -d)
  /usr/bin/time -f "bare run: %e s" env TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 TORCHINDUCTOR_CACHE_DIR=$cache TRITON_CACHE_DIR=$cache/t \
    timeout ${BARE_S:-120} python3 "$MLP" > "$OUT/bare.log" 2>&1; echo "bare rc=$? ($(elapsed) s)"; tail -2 "$OUT/bare.log"
  ( timeout ${MLP_S:-200} python3 -m harvest extract "$MLP" -o "$X/autotune_mlp" --device cuda --force > "$OUT/mlp_extract.log" 2>&1
    echo "harvest extract autotune_mlp rc=$? ($(elapsed) s)" ) &
  began=$(date +%s)
  for t in 45 90 140 190; do
    while [ $(( $(date +%s) - began )) -lt $t ] && kill -0 $! 2>/dev/null; do sleep 2; done
    kill -0 $! 2>/dev/null || break
    pid=$(pgrep -f harvest.capture.bootstrap | head -1)
    [ -n "$pid" ] && py-spy dump --pid "$pid" > "$OUT/spy_$t.txt" 2>&1 && echo "py-spy at $(elapsed) s: $(grep -c . "$OUT/spy_$t.txt") lines"
  done
  wait
  tail -4 "$OUT/mlp_extract.log"; raw_back autotune_mlp
  targets=${TARGETS:-"examples/models/user_kernel.py examples/models/scans.py examples/models/encoder_norm_first.py"}
  TORCHINDUCTOR_COMPILE_THREADS=4 timeout ${MATRIX_S:-220} python3 scripts/model_matrix.py --device cuda --out "$X" --jobs 4 \
    --timeout 180 --no-plain $targets > "$OUT/matrix.log" 2>&1
  echo "matrix rc=$? ($(elapsed) s)"
  cp "$X/matrix.md" "$X/matrix.json" "$OUT/" 2>/dev/null; tail -12 "$OUT/matrix.log"
  for t in $targets; do raw_back "$(basename "$t" .py)"; done
  echo "all done at $(elapsed) s"
  exit 0
fi
if [ "$1" = templates ]; then
  ( TORCHINDUCTOR_COMPILE_THREADS=4 timeout ${MATRIX_S:-230} python3 scripts/model_matrix.py --device cuda --out "$X" --jobs 2 \
      --timeout 200 --no-plain ${TARGETS:-examples/models/user_kernel.py examples/models/encoder_norm_first.py} > "$OUT/matrix.log" 2>&1
    echo "matrix rc=$? ($(elapsed) s)"; cp "$X/matrix.md" "$X/matrix.json" "$OUT/" 2>/dev/null; tail -8 "$OUT/matrix.log" ) &
  timeout ${MLP_S:-220} python3 -m harvest extract "$MLP" -o "$X/autotune_mlp" --device cuda --force > "$OUT/mlp_extract.log" 2>&1
  echo "harvest extract autotune_mlp rc=$? ($(elapsed) s)"
  wait
  for n in autotune_mlp user_kernel encoder_norm_first; do raw_back $n; done
  for m in "$X"/autotune_mlp/g*/*.py; do
    timeout 60 python3 "$m" --check > "$OUT/check.txt" 2>&1; echo "check ${m#$X/} rc=$?: $(tail -1 "$OUT/check.txt")"
  done
  templates=$(cd "$X" && grep -l "^MATMUL = " autotune_mlp/g*/*.py)
  for m in $templates; do timeout 90 python3 "$X/$m" --bench --json "$OUT/$(basename "$m" .py).bench.json" 2>&1 | tee -a "$OUT/template_bench.txt" | tail -7; done
  echo "module benches done ($(elapsed) s)"
  timeout ${BENCH_S:-150} python3 -m harvest bench "$X/autotune_mlp" -o "$OUT/bench" > "$OUT/bench.log" 2>&1; echo "harvest bench rc=$? ($(elapsed) s)"
  tail -20 "$OUT/bench.log"
  timeout ${SWEEP_S:-150} python3 -m harvest bench "$X/autotune_mlp" -k addmm_kernel --sweep --sweep-max ${SWEEP_MAX:-24} -o "$OUT/sweep" > "$OUT/sweep.log" 2>&1
  echo "sweep rc=$? ($(elapsed) s)"; tail -30 "$OUT/sweep.log"
  echo "all done at $(elapsed) s"
fi
if [ "$1" = again ]; then
  ( TORCHINDUCTOR_COMPILE_THREADS=4 timeout ${MATRIX_S:-290} python3 scripts/model_matrix.py --device cuda --out "$X" --jobs 3 \
      --timeout 270 --no-plain ${TARGETS:-examples/models/scans.py examples/models/user_kernel.py examples/models/encoder_norm_first.py} > "$OUT/matrix.log" 2>&1
    echo "matrix rc=$? ($(elapsed) s)"; cp "$X/matrix.md" "$X/matrix.json" "$OUT/" 2>/dev/null; tail -8 "$OUT/matrix.log" ) &
  matrix=$!
  timeout ${MLP_S:-220} python3 -m harvest extract "$MLP" -o "$X/autotune_mlp" --device cuda --force > "$OUT/mlp_extract.log" 2>&1
  echo "harvest extract autotune_mlp rc=$? ($(elapsed) s)"
  while kill -0 $matrix 2>/dev/null && [ $(elapsed) -lt 160 ]; do sleep 2; done
  pid=$(pgrep -f "harvest.capture.bootstrap.*scans" | head -1)
  [ -n "$pid" ] && py-spy dump --pid "$pid" > "$OUT/spy_scans.txt" 2>&1 && echo "py-spy of the scans capture at $(elapsed) s"
  wait
  timeout ${BENCH_S:-150} python3 -m harvest bench "$X/autotune_mlp" -o "$OUT/bench" > "$OUT/bench.log" 2>&1; echo "harvest bench rc=$? ($(elapsed) s)"
  grep -E "^g[0-9]|extracted ms|in graph ms|Inductor alone|ext/graph" "$OUT/bench.log" | head -40
  (cd "$X" && tar czf "$OUT/extractions.tgz" --exclude records --exclude '*.pt' */raw */manifest.json */report.md) && ls -la "$OUT/extractions.tgz"
  (cd "$OUT" && tar czf results.tgz --exclude extractions.tgz --exclude results.tgz . ) && ls -la "$OUT/results.tgz"
  echo "all done at $(elapsed) s"
fi
if [ "$1" = last ]; then
  ( TORCHINDUCTOR_COMPILE_THREADS=4 timeout ${MATRIX_S:-170} python3 scripts/model_matrix.py --device cuda --out "$X" --jobs 4 \
      --timeout 150 --no-plain examples/models/user_kernel.py examples/models/encoder_norm_first.py > "$OUT/matrix.log" 2>&1
    echo "matrix rc=$? ($(elapsed) s)"; cp "$X/matrix.md" "$X/matrix.json" "$OUT/" 2>/dev/null; tail -6 "$OUT/matrix.log" ) &
  timeout ${SCANS_S:-130} python3 -m harvest extract examples/models/scans.py -o "$X/scans" --device cuda --force -q > "$OUT/scans_extract.log" 2>&1
  echo "harvest extract scans rc=$? ($(elapsed) s)"
  for m in "$X"/scans/g*/*.py; do
    [ -f "$m" ] || continue
    timeout 20 python3 "$m" --check > "$OUT/check.txt" 2>&1; echo "check ${m#$X/} rc=$?: $(tail -1 "$OUT/check.txt")"
  done 2>&1 | tee "$OUT/scans_checks.txt"
  wait
  (cd "$X" && tar czf "$OUT/extractions.tgz" --exclude records --exclude '*.pt' --exclude .records-staging */raw */manifest.json */report.md)
  ls -la "$OUT/extractions.tgz"; echo "all done at $(elapsed) s"
fi
if [ "$1" = runs ]; then
  # harvest run --with on the H200: square_square (a BLOCK_SIZE edit and tl.fma, then a wrong edit), small_model's
  # two softmax kernels at num_warps 8, and a transformer block's training step with two kernels at other num_warps.
  python3 -m harvest extract examples/square_square.py -o "$X/sq" --device cuda --force -q > "$OUT/extract_sq.txt" 2>&1
  echo "extract square_square rc=$? ($(elapsed) s)"
  k="$X/sq/g0_inference/square_square_kernel.py"
  sed -i "s/^CONFIG = {'BLOCK_SIZE': [0-9]*,/CONFIG = {'BLOCK_SIZE': 256,/; s/    square = a \* a$/    square = tl.fma(a, a, 0.0)/" "$k"
  timeout 150 python3 -m harvest run examples/square_square.py --with "$X/sq" -q > "$OUT/run_sq.txt" 2>&1; echo "run square_square rc=$? ($(elapsed) s)"; cat "$OUT/run_sq.txt" | tail -12
  sed -i "s/    square_1 = square \* square$/    square_1 = square * square * 1.001/" "$k"
  timeout 150 python3 -m harvest run examples/square_square.py --with "$X/sq" -q > "$OUT/run_sq_wrong.txt" 2>&1; echo "run square_square (wrong edit) rc=$? ($(elapsed) s)"; tail -3 "$OUT/run_sq_wrong.txt"
  python3 -m harvest extract examples/small_model.py -o "$X/sm" --device cuda --force -q > "$OUT/extract_sm.txt" 2>&1
  echo "extract small_model rc=$? ($(elapsed) s)"
  for m in "$X"/sm/g0_forward/softmax_kernel.py "$X"/sm/g1_backward/softmax_bwd_kernel.py; do
    [ -f "$m" ] || echo "no $m: $(ls "$X"/sm/g*/ | tr '\n' ' ')"
    sed -i "0,/'num_warps': [0-9]*/s//'num_warps': 8/" "$m"
  done
  timeout 180 python3 -m harvest run examples/small_model.py --with "$X/sm" -q > "$OUT/run_sm.txt" 2>&1; echo "run small_model rc=$? ($(elapsed) s)"; tail -12 "$OUT/run_sm.txt"
  T=examples/models/transformer_encoder.py
  timeout ${TE_S:-200} python3 -m harvest extract $T -o "$X/te" --device cuda --force -q > "$OUT/extract_te.txt" 2>&1
  echo "extract transformer_encoder rc=$? ($(elapsed) s)"
  python3 - "$X/te" <<'PY' | tee "$OUT/te_edits.txt"
import re, sys
from pathlib import Path
root = Path(sys.argv[1])
edited = 0
for graph in ("g0_forward", "g1_backward"):  # the first module of each graph with a num_warps in its CONFIG
    for path in sorted((root / graph).glob("*.py")):
        text = path.read_text()
        found = re.search(r"'num_warps': (\d+)", text)
        if found and "triton_tem" not in text[:2000]:
            warps = 4 if int(found.group(1)) != 4 else 8
            path.write_text(text.replace(found.group(0), f"'num_warps': {warps}", 1))
            print(f"edited {path.relative_to(root)}: num_warps {found.group(1)} -> {warps}")
            edited += 1
            break
print(f"{edited} modules edited")
PY
  timeout ${TE_RUN_S:-300} python3 -m harvest run $T --with "$X/te" -q > "$OUT/run_te.txt" 2>&1; echo "run transformer_encoder rc=$? ($(elapsed) s)"; tail -12 "$OUT/run_te.txt"
  (cd "$X" && tar czf "$OUT/extractions.tgz" --exclude records --exclude '*.pt' --exclude .records-staging */manifest.json */runs */report.md 2>/dev/null)
  echo "all done at $(elapsed) s"
fi
if [ "$1" = runs2 ]; then
  # square_square run as extracted (-k: the swap path's own cost), then edited, then wrong (the culprit named from
  # checksums: its 800 MB record is over the per-kernel cap); small_model's num_warps 8 softmaxes with tolerances;
  # then split_scan.py extracted and checked (scans, below)
  python3 -m harvest extract examples/square_square.py -o "$X/sq" --device cuda --force -q > "$OUT/extract_sq.txt" 2>&1
  echo "extract square_square rc=$? ($(elapsed) s)"
  timeout 150 python3 -m harvest run examples/square_square.py --with "$X/sq" -k square_square_kernel -q > "$OUT/run_sq_as.txt" 2>&1; echo "run square_square as extracted rc=$? ($(elapsed) s)"; tail -9 "$OUT/run_sq_as.txt"
  k="$X/sq/g0_inference/square_square_kernel.py"
  sed -i "s/^CONFIG = {'BLOCK_SIZE': [0-9]*,/CONFIG = {'BLOCK_SIZE': 256,/; s/    square = a \* a$/    square = tl.fma(a, a, 0.0)/" "$k"
  timeout 150 python3 -m harvest run examples/square_square.py --with "$X/sq" -q > "$OUT/run_sq.txt" 2>&1; echo "run square_square rc=$? ($(elapsed) s)"; tail -9 "$OUT/run_sq.txt"
  sed -i "s/    square_1 = square \* square$/    square_1 = square * square * 1.001/" "$k"
  timeout 150 python3 -m harvest run examples/square_square.py --with "$X/sq" -q > "$OUT/run_sq_wrong.txt" 2>&1; echo "run square_square (wrong edit) rc=$? ($(elapsed) s)"; tail -2 "$OUT/run_sq_wrong.txt"
  python3 -m harvest extract examples/small_model.py -o "$X/sm" --device cuda --force -q > "$OUT/extract_sm.txt" 2>&1
  echo "extract small_model rc=$? ($(elapsed) s)"
  for m in "$X"/sm/g0_forward/softmax_kernel.py "$X"/sm/g1_backward/softmax_bwd_kernel.py; do
    sed -i "0,/'num_warps': [0-9]*/s//'num_warps': 8/" "$m"
  done
  timeout 180 python3 -m harvest run examples/small_model.py --with "$X/sm" --rtol 1e-4 --atol 1e-4 -q > "$OUT/run_sm.txt" 2>&1; echo "run small_model rc=$? ($(elapsed) s)"; tail -12 "$OUT/run_sm.txt"
  (cd "$X" && tar czf "$OUT/extractions.tgz" --exclude records --exclude '*.pt' --exclude .records-staging */manifest.json */runs */report.md 2>/dev/null)
  set -- scans
fi
if [ "$1" = scans ]; then
  timeout ${SCANS_S:-200} python3 -m harvest extract examples/models/split_scan.py -o "$X/split_scan" --device cuda --force -q > "$OUT/split_scan.log" 2>&1
  echo "harvest extract split_scan rc=$? ($(elapsed) s)"; tail -5 "$OUT/split_scan.log"
  for m in "$X"/split_scan/g*/*.py; do
    [ -f "$m" ] || continue
    timeout 60 python3 "$m" --check > "$OUT/check.txt" 2>&1; echo "check ${m#$X/} rc=$?: $(tail -1 "$OUT/check.txt")"
  done 2>&1 | tee "$OUT/split_scan_checks.txt"
  raw_back split_scan
  [ -f "$X/sq/manifest.json" ] && (cd "$X" && tar czf "$OUT/extractions.tgz" --exclude records --exclude '*.pt' --exclude .records-staging */manifest.json */runs */report.md split_scan/g* 2>/dev/null)
  echo "all done at $(elapsed) s"
fi
