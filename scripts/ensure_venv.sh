#!/usr/bin/env bash
# Create (once) and update the virtual environment harvest runs in; prints its path.
#
#   bash scripts/ensure_venv.sh         what `harvest` needs: torch, triton, libcst, jinja2, ninja, rich, numpy
#   bash scripts/ensure_venv.sh test    that, plus the test extras (pytest, xdist, hypothesis, transformers, matplotlib,
#                                       playwright, timm, diffusers) and the torchvision built for the torch installed
#
# The venv lives outside the clone ($HARVEST_VENV, default ~/.cache/harvest-venv), so later runs and CI reuse it.
# torch is $HARVEST_TORCH (default torch==2.13.0, the version the test suite is verified with). On a machine without
# an NVIDIA GPU its CPU build is asked for first, from PyTorch's CPU wheel index (about 190 MB, against 3.3 GB for the
# CUDA build and its ~20 nvidia wheels); when that index cannot be reached, the CPU build by its label
# (torch==2.13.0+cpu) from pip's own indexes and wheel folders, and failing that whatever they serve for that version
# (which is the CUDA build on most machines).
# torchvision (the model zoo, examples/zoo/, tests/test_zoo.py) is built for one torch release and one build of it:
# with the test extras it is pinned to the torch installed (torch 2.X.Y -> torchvision 0.(X+15).Y) and taken from the
# index that torch came from: PyTorch's CPU wheel index for a CPU torch (+cpu), else pip's indexes. PyPI's torchvision is
# a CUDA build: beside a CPU torch it does not import, and transformers and timm fail to import with it. When no
# torchvision that imports can be had, none is installed (timm, which needs it, is installed without it and the zoo's
# torchvision and timm models are skipped); the test extras never replace torch (a constraint pins the installed one).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${HARVEST_VENV:-$HOME/.cache/harvest-venv}
torch_spec=${HARVEST_TORCH:-torch==2.13.0}
cpu_index=https://download.pytorch.org/whl/cpu
extras=${1:-}
case "$extras" in
  "" | test) ;;
  *) echo "usage: bash scripts/ensure_venv.sh [test]" >&2; exit 2 ;;
esac
stamp="$venv/.harvest-deps"
# Reinstall when the dependencies change, the editable install points at another clone (CI's, say) or extras are
# wanted that were not installed; a venv with the test extras serves the main job as it is.
key="$(sha256sum "$root/pyproject.toml" | cut -c1-16) $root"
have=$(cat "$stamp" 2>/dev/null || true)
if [ ! -x "$venv/bin/python" ]; then
  echo "harvest: creating $venv (first run only: a few minutes)" >&2
  python3 -m venv "$venv"
fi
up_to_date() {
  case "$have" in
    "$key test") return 0 ;;
    "$key") [ -z "$extras" ] ;;
    *) return 1 ;;
  esac
}
if ! up_to_date || ! "$venv/bin/python" -c "import harvest" 2>/dev/null; then
  # Bytecode: pip writes none (--no-compile). It would compile each package's files one after the other, about 45 s
  # of a first run's 70 s on 2 cores; compileall compiles them on every core, torch's while pip installs the rest.
  # Every file is compiled before this script ends: the suite's processes then only read bytecode.
  pip=("$venv/bin/python" -m pip install -q --disable-pip-version-check --no-compile)
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  compiling=""
  compile_bytecode() { "$venv/bin/python" -m compileall -qq -j 0 "$@" >/dev/null 2>&1 || true; }
  bytecode_done() { [ -z "$compiling" ] || wait "$compiling" || true; compiling=""; }
  if ! "$venv/bin/python" -c "import torch" 2>/dev/null; then
    if [ -e /dev/nvidiactl ] || nvidia-smi -L >/dev/null 2>&1; then
      echo "harvest: installing $torch_spec (an NVIDIA GPU is present: the CUDA build) into $venv" >&2
      "${pip[@]}" "$torch_spec" >&2
    else
      echo "harvest: installing $torch_spec, CPU build (no NVIDIA GPU here) into $venv" >&2
      if ! "${pip[@]}" --index-url "$cpu_index" --timeout 20 --retries 1 "$torch_spec" >&2 2>"$venv/.torch-cpu-index.log"; then
        # The CPU build by its local version label (torch==2.13.0+cpu) from pip's own indexes and wheel folders,
        # where a mirror or a wheel cache holds it; else whatever pip serves for the version.
        cpu_spec=""
        [[ "$torch_spec" =~ ^torch==[0-9.]+$ ]] && cpu_spec="$torch_spec+cpu"
        if [ -n "$cpu_spec" ] && "${pip[@]}" "$cpu_spec" >&2 2>>"$venv/.torch-cpu-index.log"; then
          echo "harvest: PyTorch's CPU wheel index is out of reach; installed $cpu_spec from pip's own sources" >&2
        else
          echo "harvest: PyTorch's CPU wheel index could not serve $torch_spec ($(tail -n 1 "$venv/.torch-cpu-index.log")); installing what pip serves (on most machines the CUDA build, about 3 GB)" >&2
          "${pip[@]}" "$torch_spec" >&2
        fi
      fi
    fi
  fi
  constraints="$venv/.harvest-constraints.txt"
  if [ -d "$site/torch" ]; then compile_bytecode "$site/torch" & compiling=$!; fi
  version_of() { "$venv/bin/python" -c 'import importlib.metadata as m, sys; print(m.version(sys.argv[1]))' "$1"; }
  pin_installed() {  # torch (and torchvision where it imports) exactly as installed: nothing the extras pull replaces them
    echo "torch==$(version_of torch)" > "$constraints"
    if torchvision_imports; then echo "torchvision==$(version_of torchvision)" >> "$constraints"; fi
  }
  torchvision_imports() {  # (it imports torch: not while torch's bytecode is being written)
    "$venv/bin/python" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torchvision") is None)' || return 1
    bytecode_done
    "$venv/bin/python" -c "import torchvision" 2>/dev/null
  }
  pin_installed
  if [ "$extras" = test ] && ! torchvision_imports; then
    read -r vision_version torch_label < <("$venv/bin/python" -c 'import importlib.metadata as m
release, _, label = m.version("torch").partition("+")
major, minor, patch = (release.split(".") + ["0", "0"])[:3]
print(f"0.{int(minor) + 15}.{patch}", label or "-")')
    vision_log="$venv/.torchvision-install.log"
    : > "$vision_log"
    if [ "$torch_label" = cpu ]; then
      # The CPU build by its label only: pip's extra indexes would otherwise answer with PyPI's CUDA build.
      echo "harvest: installing torchvision==$vision_version+cpu (for torch $(sed -n 's/^torch==//p' "$constraints")) from PyTorch's CPU wheel index" >&2
      "${pip[@]}" -c "$constraints" --index-url "$cpu_index" --timeout 20 --retries 1 "torchvision==$vision_version+cpu" >&2 2>>"$vision_log" ||
        "${pip[@]}" -c "$constraints" "torchvision==$vision_version+cpu" >&2 2>>"$vision_log" || true
    else
      echo "harvest: installing torchvision==$vision_version (for torch $(sed -n 's/^torch==//p' "$constraints"))" >&2
      "${pip[@]}" -c "$constraints" "torchvision==$vision_version" >&2 2>>"$vision_log" || true
    fi
    if ! torchvision_imports; then
      "$venv/bin/python" -m pip uninstall -y -q torchvision >&2 2>/dev/null || true
      echo "harvest: no torchvision for torch $(sed -n 's/^torch==//p' "$constraints") here ($(grep -m 1 -E '^ERROR' "$vision_log" || tail -n 1 "$vision_log")); the zoo's torchvision and timm models will be skipped" >&2
    fi
    pin_installed
  fi
  echo "harvest: installing harvest${extras:+ with its $extras extras} into $venv" >&2
  if [ "$extras" = test ] && ! torchvision_imports; then
    # timm requires torchvision: installed with its dependencies it would bring PyPI's (see above). The test extras
    # one by one, timm without its dependencies (its others come with transformers and diffusers).
    "${pip[@]}" -c "$constraints" -e "$root" >&2
    mapfile -t test_requirements < <("$venv/bin/python" -c 'import importlib.metadata as m, re
for r in m.metadata("harvest").get_all("Requires-Dist") or []:
    name, _, marker = r.partition(";")
    if re.search(r"extra\s*==\s*.test.", marker):
        print(name.strip())')
    others=()
    for requirement in "${test_requirements[@]}"; do
      [[ "$requirement" =~ ^timm([^A-Za-z0-9_.-]|$) ]] || others+=("$requirement")
    done
    "${pip[@]}" -c "$constraints" "${others[@]}" >&2
    "${pip[@]}" --no-deps "$(printf '%s\n' "${test_requirements[@]}" | grep -E '^timm([^A-Za-z0-9_.-]|$)' || echo timm)" >&2
  else
    target="$root"
    [ "$extras" = test ] && target="$root[test]"
    "${pip[@]}" -c "$constraints" -e "$target" >&2
  fi
  bytecode_done
  compile_bytecode "$site"
  if [ "$extras" = test ] || [ "$have" = "$key test" ]; then echo "$key test" > "$stamp"; else echo "$key" > "$stamp"; fi
fi
echo "$venv"
