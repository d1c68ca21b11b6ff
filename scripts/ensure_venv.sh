#!/usr/bin/env bash
# Create (once) and update the virtual environment harvest runs in; prints its path.
#
#   bash scripts/ensure_venv.sh         what `harvest` needs: torch, triton, libcst, jinja2, ninja, rich, numpy
#   bash scripts/ensure_venv.sh test    that, plus the test extras (pytest, xdist, hypothesis, transformers, matplotlib, playwright)
#
# The venv lives outside the clone ($HARVEST_VENV, default ~/.cache/harvest-venv), so later runs and CI reuse it.
# torch is $HARVEST_TORCH (default torch==2.13.0, the version the test suite is verified with). On a machine without
# an NVIDIA GPU its CPU build is asked for first, from PyTorch's CPU wheel index (about 190 MB, against 3.3 GB for the
# CUDA build and its ~20 nvidia wheels); when that index cannot be reached, the CPU build by its label
# (torch==2.13.0+cpu) from pip's own indexes and wheel folders, and failing that whatever they serve for that version
# (which is the CUDA build on most machines).
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
  pip=("$venv/bin/python" -m pip install -q --disable-pip-version-check)
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
  target="$root"
  [ "$extras" = test ] && target="$root[test]"
  echo "harvest: installing harvest${extras:+ with its $extras extras} into $venv" >&2
  "${pip[@]}" -e "$target" >&2
  if [ "$extras" = test ] || [ "$have" = "$key test" ]; then echo "$key test" > "$stamp"; else echo "$key" > "$stamp"; fi
fi
echo "$venv"
