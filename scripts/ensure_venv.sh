#!/usr/bin/env bash
# Create (once) and update the virtual environment harvest runs in; prints its path.
# It lives outside the clone ($HARVEST_VENV, default ~/.cache/harvest-venv) so CI reuses it; a fresh machine builds it
# in about a minute: torch's CPU build (from the local wheel store when the machine has one), triton, the rest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${HARVEST_VENV:-$HOME/.cache/harvest-venv}
stamp="$venv/.harvest-deps"
# Reinstall when the dependencies change or the venv's editable install points at another clone (CI's, say).
want="$(sha256sum "$root/pyproject.toml" | cut -c1-16) $root"
if [ ! -x "$venv/bin/python" ]; then
  echo "harvest: creating $venv (first run only)" >&2
  python3 -m venv "$venv"
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || ! "$venv/bin/python" -c "import harvest" 2>/dev/null; then
  echo "harvest: installing dependencies into $venv" >&2
  # The CPU build of torch: no GPU on this machine, and a tenth of the CUDA build's size.
  "$venv/bin/python" -c "import torch" 2>/dev/null || "$venv/bin/python" -m pip install -q "torch==2.13.0" >&2
  "$venv/bin/python" -m pip install -q -e "$root[test]" >&2
  echo "$want" > "$stamp"
fi
echo "$venv"
