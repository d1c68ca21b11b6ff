#!/usr/bin/env bash
# Run harvest from a fresh clone: sets up the environment on first use, then `harvest "$@"`.
#   bash scripts/harvest.sh extract examples/square_square.py
set -euo pipefail
venv=$(bash "$(dirname "$0")/ensure_venv.sh")
exec "$venv/bin/harvest" "$@"
