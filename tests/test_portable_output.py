"""The same bytes on every machine: no file harvest writes depends on HOME, the venv, the checkout or the output path.

An extraction replayed from the H200 small-model capture and `harvest ptx` of a kernel that calls triton_helpers and
triton's standard library (whose PTX `.file` lines named the venv's site-packages) run twice, each time with another
HOME and another output directory; the two trees must be byte-identical and free of this machine's paths.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from conftest import ROOT, tree, tree_env

from harvest.ptx.text import portable_file_paths

SMALL_MODEL_RAW = ROOT / "extracted" / "h200" / "small_model" / "raw"
KERNEL = "g0_forward/softmax_kernel.py"


def test_ptx_file_lines_lose_the_paths_of_this_machine():
    ptx = (
        '\t.file\t1 "g0_forward/softmax_kernel.py"\n'
        '\t.file\t2 "/home/someone/.cache/harvest-venv/lib/python3.11/site-packages/triton/language/standard.py"\n'
        '\t.file\t3 "/usr/lib/python3/dist-packages/torch/_inductor/runtime/triton_helpers.py"\n'
        '\t.file\t4 "/tmp/harvest-ptx-abc123/scratch.py"\n'
        "\t.loc\t2 182 12\n"
    )
    assert portable_file_paths(ptx) == (
        '\t.file\t1 "g0_forward/softmax_kernel.py"\n'
        '\t.file\t2 "<installed>/triton/language/standard.py"\n'
        '\t.file\t3 "<installed>/torch/_inductor/runtime/triton_helpers.py"\n'
        '\t.file\t4 "<abs>/scratch.py"\n'
        "\t.loc\t2 182 12\n"
    )


def _extract_and_ptx(place: Path) -> Path:
    home = place / "home"
    home.mkdir(parents=True)
    out = place / "somewhere" / "out"
    env = tree_env(HOME=str(home))
    for args in (["extract", str(SMALL_MODEL_RAW), "-o", str(out)], ["ptx", str(out / KERNEL), "--arch", "sm_90"]):
        run = subprocess.run([sys.executable, "-m", "harvest", *args], cwd=place, env=env, capture_output=True, text=True, timeout=900)
        assert run.returncode == 0, run.stderr + run.stdout
    return out


@pytest.mark.slow
def test_extraction_and_ptx_are_the_same_bytes_under_another_home_and_output_path(tmp_path):
    first = _extract_and_ptx(tmp_path / "a")
    second = _extract_and_ptx(tmp_path / "elsewhere" / "b")
    files = tree(first)
    assert any(name.endswith(".triton.ptx") for name in files)
    assert files == tree(second)
    machine_paths = {str(ROOT), sys.prefix, sysconfig.get_paths()["purelib"], str(tmp_path), os.path.expanduser("~")}
    machine_paths.discard("/")
    for name, data in files.items():
        text = data.decode("utf-8", errors="replace")
        found = sorted(p for p in machine_paths | {"site-packages", "dist-packages"} if p in text)
        assert not found, f"{name} holds {found}"
    shutil.rmtree(tmp_path)
