#!/usr/bin/env bash
# harvest's verification on a GPU machine: the one entry. Through the device tool (`carry: [".whl"]`: libcst as a
# cp312 wheel), one section a call, each under 10 minutes; what comes back is under $OUT (few files: logs and
# tarballs). Record what a call measured in docs/benchmarks.md (date, GPU, torch/triton, this command, median, spread).
#
#   OUT=$OUT bash scripts/gpu/verify.sh models [all|examples|rest]
#                                                the five examples re-made as showcases (extracted/h200/) and
#                                                examples/models/ (MODELS="a.py b.py") through scripts/model_matrix.py
#                                                --device cuda: extract, every module --check'ed (scripts/gpu/parts/models.sh)
#   OUT=$OUT bash scripts/gpu/verify.sh bench    `harvest bench` on the examples and three models: eager, Inductor in
#                                                its graph and alone, the twin column, --sweep, --profile, ncu
#                                                (scripts/gpu/parts/bench.sh; ONLY="step ..." reruns steps)
#   OUT=$OUT bash scripts/gpu/verify.sh twins [templates]
#                                                every CUDA twin built, checked against the run's record and timed
#                                                against its Triton kernel; twin / Triton per kind; the square twin's
#                                                bandwidth (scripts/gpu/parts/twins.sh; TARGETS=, VARIANTS=)
#   OUT=$OUT bash scripts/gpu/verify.sh launch   `harvest run --with` (issue 46): every kernel swapped unedited
#                                                (-k '*') on small_model, square_square and a transformer training
#                                                step (TRAIN_STEP=..., a zoo model's when ZOO holds it); small_model's
#                                                two softmaxes at num_warps 8; a reduce-overhead
#                                                target (CUDA graphs) with one edited kernel; their run.md tables.
#                                                Beside it: tests/targets/zoo_misses.py captured on the GPU (its raw/,
#                                                the launch data left out: a test fixture). ZOO="a.py b.py": those
#                                                zoo models extracted beside the others, checked after the timings.
#                                                ONLY="small_model square_square reduce_overhead train zoo_misses":
#                                                those steps alone (the default: all).
#   OUT=$OUT bash scripts/gpu/verify.sh zoo      the model zoo on the GPU (issue 45): examples/zoo/ (what this
#                                                machine's packages build; ZOO="a.py b.py" to choose) through
#                                                scripts/model_matrix.py --device cuda, every module --check'ed.
#   OUT=$OUT bash scripts/gpu/verify.sh distributed
#                                                the torchrun examples on two GPUs (kind nvidia-h200-x2; gloo on one)
#                                                (scripts/gpu/parts/distributed.sh)
#
# Timings from one call compare with each other only (the card may differ between calls): docs/benchmarks.md.
set -u
section=${1:-}
export OUT=${OUT:-/tmp/out}
case "$section" in
  models|bench|twins|distributed) shift; exec bash "scripts/gpu/parts/$section.sh" "$@" ;;
  launch|zoo) ;;
  *) echo "usage: OUT=DIR bash scripts/gpu/verify.sh models|bench|twins|launch|zoo|distributed (see its header)" >&2; exit 2 ;;
esac
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 COLUMNS=200
X=/tmp/x
L=/tmp/logs
mkdir -p "$OUT" "$X" "$L"
exec > >(tee "$OUT/run.log") 2>&1  # what a call prints comes back even when it reaches its limit
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
git log --oneline -1
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
pack() { (cd /tmp && tar czf "$OUT/logs.tgz" logs 2>/dev/null); }

extract() {  # extract TARGET NAME: on the GPU, quiet, its log under $L
  TORCHINDUCTOR_COMPILE_THREADS=4 timeout "${EXTRACT_S:-240}" python3 -m harvest extract "$1" -o "$X/$2" --device cuda -q --force \
    > "$L/extract_$2.log" 2>&1
  echo "extract $2 rc=$? ($(elapsed) s)"
}

check_all() {  # check_all DIR: every module of an extraction --check'ed on the GPU, 8 at a time; one line each
  python3 - "$1" <<'PY'
import concurrent.futures, json, subprocess, sys
from pathlib import Path
out = Path(sys.argv[1]); manifest = json.loads((out / "manifest.json").read_text())
modules = [k["module"] for g in manifest["graphs"] for k in g["kernels"] if k["module"]]
def check(module):
    done = subprocess.run([sys.executable, module, "--check"], cwd=out, capture_output=True, text=True, timeout=300)
    return module, done.returncode, (done.stdout + done.stderr).strip().splitlines()
with concurrent.futures.ThreadPoolExecutor(8) as pool:
    results = list(pool.map(check, modules))
for module, rc, lines in results:
    print(("PASS " if rc == 0 else "FAIL ") + module)
    if rc:
        print("   " + "\n   ".join(lines[-8:]))
print(f"{sum(rc == 0 for _, rc, _ in results)} of {len(results)} modules pass --check; references: {manifest['references']}")
PY
}

run_with() {  # run_with NAME TARGET ARGS...: harvest run, then its run.md's launch line and timing table
  local name=$1 target=$2  # (NAME: the extraction under $X, zoo/<model> for a zoo model's)
  shift 2
  timeout "${RUN_S:-200}" python3 -m harvest run "$target" --with "$X/$name" "$@" > "$L/run_${name//\//_}.log" 2>&1
  local rc=$?
  local md
  md=$(ls -t "$X/$name"/runs/*/run.md 2>/dev/null | head -1)
  echo "== harvest run $target --with $X/$name $* : exit $rc ($(elapsed) s)"
  tail -n 2 "$L/run_${name//\//_}.log"
  [ -n "$md" ] && sed -n '/^Results /p;/^Launch path/p;/^| what/,/^$/p;/host, not the kernels/p;/CUDA graph and replayed/p;/The target ran CUDA graphs/p' "$md"
  [ -n "$md" ] && cp "$md" "$L/run_${name//\//_}.md" && cp "$(dirname "$md")/run.json" "$L/run_${name//\//_}.json"
}

zoo_extract() {  # the zoo models named in $ZOO, extracted a few at a time in the background (their checks later)
  for t in ${ZOO:-}; do
    name=$(basename "$t" .py)
    TORCHINDUCTOR_COMPILE_THREADS=2 timeout "${EXTRACT_S:-240}" python3 -m harvest extract "$t" -o "$X/zoo/$name" --device cuda -q --force \
      > "$L/zoo_extract_$name.log" 2>&1
    echo "zoo extract $name rc=$? ($(elapsed) s)"
  done
}

zoo_check() {  # every module of each zoo extraction --check'ed; one summary line a model
  for dir in "$X"/zoo/*/; do
    [ -f "$dir/manifest.json" ] || continue
    name=$(basename "$dir")
    check_all "$dir" > "$L/zoo_check_$name.log" 2>&1
    echo "zoo $name: $(tail -n 1 "$L/zoo_check_$name.log")"
    grep -A8 "^FAIL" "$L/zoo_check_$name.log" | head -n 30
  done
  python3 - "$X/zoo" <<'PY'
import json, sys
from pathlib import Path
for manifest in sorted(Path(sys.argv[1]).glob("*/manifest.json")):
    m = json.loads(manifest.read_text())
    for g in m["graphs"]:
        for k in g["kernels"]:
            ref = k.get("reference") or {}
            if ref.get("coverage") != "full":
                print(f"not full: {manifest.parent.name}/{k.get('module') or k['name']}: {ref.get('outputs') or k.get('standalone_reason')}")
PY
}

if [ "$section" = launch ]; then
  mkdir -p "$X/zoo"
  # (wait on the jobs by pid: a bare `wait` also waits for the tee above, which never ends)
  pids=()
  chains=${ZOO_CHAINS:-2}  # zoo extractions run in this many chains beside the launch targets'
  for c in $(seq 0 $((chains - 1))); do
    ( ZOO="$(echo ${ZOO:-} | tr ' ' '\n' | awk -v c="$c" -v n="$chains" 'NF && (NR - 1) % n == c')" zoo_extract ) & pids+=($!)
  done
  want() { case " ${ONLY:-small_model square_square reduce_overhead train zoo_misses} " in *" $1 "*) return 0 ;; esac; return 1; }
  want small_model && { extract examples/small_model.py small_model & pids+=($!); }
  want square_square && { extract examples/square_square.py square_square & pids+=($!); }
  # a transformer's training step for the unedited swap: TRAIN_STEP (default transformer_encoder), or one of $ZOO
  train=${TRAIN_STEP:-examples/models/transformer_encoder.py}
  train_name=$(basename "$train" .py)
  case " ${ZOO:-} " in
    *" $train "*) train_dir=zoo/$train_name ;;
    *) train_dir=$train_name; want train && { extract "$train" "$train_name" & pids+=($!); } ;;
  esac
  want reduce_overhead && { extract examples/models/reduce_overhead.py reduce_overhead & pids+=($!); }
  want zoo_misses && { extract tests/targets/zoo_misses.py zoo_misses & pids+=($!); }
  wait "${pids[@]}"  # (the zoo's extractions too: the timings below want the machine to themselves)
  if want small_model; then
    run_with small_model examples/small_model.py -k '*'
    for m in "$X"/small_model/g0_forward/softmax_kernel.py "$X"/small_model/g1_backward/softmax_bwd_kernel.py; do
      sed -i "0,/'num_warps': [0-9]*/s//'num_warps': 8/" "$m"
    done
    run_with small_model examples/small_model.py --rtol 1e-4 --atol 1e-4
  fi
  want square_square && run_with square_square examples/square_square.py -k '*'
  if want reduce_overhead; then  # the softmax kernel (the last of the forward graph) at another num_warps
    edited=$(ls "$X"/reduce_overhead/g0_inference/*softmax*.py 2>/dev/null | head -1)
    [ -n "$edited" ] && sed -i "0,/'num_warps': [0-9]*/s//'num_warps': 8/" "$edited" && echo "edited ${edited#$X/}: num_warps 8"
    run_with reduce_overhead examples/models/reduce_overhead.py --rtol 1e-4 --atol 1e-4
  fi
  want train && run_with "$train_dir" "$train" -k '*'
  pack
  # the GPU capture of zoo_misses, its launch data left out: a fixture for tests/test_reference_zoo.py
  [ -d "$X/zoo_misses/raw" ] && (cd "$X/zoo_misses" && tar czf "$OUT/zoo_misses_raw.tgz" --exclude records raw manifest.json)
  [ -d "$X/zoo_misses/raw" ] && check_all "$X/zoo_misses" > "$L/zoo_misses_check.log" 2>&1
  grep -v "^PASS" "$L/zoo_misses_check.log" | tail -n 40
  pack
  zoo_check
  (cd "$X" && tar czf "$OUT/zoo_raw.tgz" --exclude records zoo/*/raw zoo/*/manifest.json 2>/dev/null)
  pack
elif [ "$section" = zoo ]; then
  # ZOO_CHAINS matrix runs side by side (a model at a time each, JOBS modules checked at a time), all stopped at
  # ZOO_S seconds; each model's counts are kept as it finishes (models/*.json), so a cut call still reports them
  zoo=${ZOO:-$(ls examples/zoo/*.py | grep -v diffusers)}  # diffusers is not on this machine
  chains=${ZOO_CHAINS:-3}
  pids=()
  for c in $(seq 0 $((chains - 1))); do
    part=$(echo $zoo | tr ' ' '\n' | awk -v c="$c" -v n="$chains" 'NF && (NR - 1) % n == c')
    [ -n "$part" ] || continue
    TORCHINDUCTOR_COMPILE_THREADS=4 timeout "${ZOO_S:-500}" python3 scripts/model_matrix.py --device cuda --no-plain \
      --out "/tmp/zoo_$c" --jobs "${JOBS:-4}" --timeout 120 --extract-timeout 300 $part > "$L/zoo_$c.log" 2>&1 & pids+=($!)
  done
  wait "${pids[@]}"
  for c in $(seq 0 $((chains - 1))); do [ -f "/tmp/zoo_$c/matrix.md" ] && cat "/tmp/zoo_$c/matrix.md"; done
  python3 - /tmp/zoo_* <<'PY'
import json, sys
from pathlib import Path
kept = sorted(p for d in sys.argv[1:] for p in Path(d).glob("models/*.json"))
total, misses = {}, []
for p in kept:
    m = json.loads(p.read_text()); c = m["counts"]
    print(f"{m['model']}: {c['kernels']} kernels, {c['passing']} pass, {c['fail']} fail, {c['crash']} crash, "
          f"{c['timeout']} timeout; reference {c['reference_full']} full / {c['reference_partial']} partial / "
          f"{c['reference_none']} none; outputs compared: {c.get('outputs_recorded', 0)} record, "
          f"{c.get('outputs_reference', 0)} reference; {c['false_fail']} false FAIL; extract rc {m.get('extract_rc')}")
    for key in ("kernels", "passing", "fail", "crash", "timeout", "reference_full", "false_fail", "outputs_recorded",
                "outputs_reference"):
        total[key] = total.get(key, 0) + c[key]
    for k in m["kernels"]:
        if k.get("reference") != "full" or k.get("status") != "pass":
            why = "; ".join(k.get("reasons") or []) or json.dumps(k.get("unreferenced"))
            print(f"   {k.get('module') or k.get('inductor_name')}: {k.get('status')}, reference {k.get('reference')}: {why[:240]}")
            misses.append(f"{p.parent.parent.name}/{m['model']}")
print(f"ALL {len(kept)} models: {total}")
# the models with a miss: their raw captures come back below
Path("/tmp/zoo_misses.txt").write_text("".join(f"{d}/raw {d}/manifest.json\n" for d in dict.fromkeys(misses)))
PY
  (cd /tmp && tar czf "$OUT/zoo_logs.tgz" zoo_*/models zoo_*/logs zoo_*/matrix.json 2>/dev/null)
  # the raw captures (launch data left out) of the models with a kernel not passing or without a full reference:
  # what a CPU test replays to reproduce it (tests/fixtures/.../recorded/)
  misses=$(cat /tmp/zoo_misses.txt 2>/dev/null)
  [ -n "$misses" ] && (cd /tmp && tar czf "$OUT/zoo_misses_raw.tgz" --exclude records $misses 2>/dev/null)
  pack
fi
echo "done ($(elapsed) s)"
