"""The code is clean by the project's own lint settings (pyproject.toml's [tool.ruff]): a newcomer's `ruff check`
starts from nothing to fix, and a change that adds a finding fails here, not in a later review."""

from __future__ import annotations

import subprocess
import sys

from conftest import ROOT


def test_ruff_finds_nothing_in_harvest_tests_and_scripts():
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "harvest", "tests", "scripts"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
