"""Where nvcc is, for the two commands that compile CUDA: `harvest twin` (each twin through `nvcc -ptx`) and
`harvest ptx` (the twin's PTX beside Triton's). Below both, so that neither command imports the other."""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from harvest.errors import ToolchainError


def executable(path: Path) -> Path | None:
    return path if path.is_file() and os.access(path, os.X_OK) else None


def _site_dirs() -> list[Path]:
    """Where pip's `nvidia` namespace package lives (its cu13/bin holds nvcc when the CUDA wheels are installed)."""
    spec = importlib.util.find_spec("nvidia")
    return [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []


def find_nvcc(environ: Mapping[str, str] | None = None, nvidia_dirs: list[Path] | None = None) -> Path:
    """nvcc from PATH, else $CUDA_HOME/bin, else the pip wheels' nvidia/cu13/bin (DESIGN #9); ToolchainError if none."""
    environ = os.environ if environ is None else environ
    found = shutil.which("nvcc", path=environ.get("PATH", ""))
    if found:
        return Path(found)
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        if environ.get(variable) and executable(Path(environ[variable]) / "bin" / "nvcc"):
            return Path(environ[variable]) / "bin" / "nvcc"
    for base in _site_dirs() if nvidia_dirs is None else nvidia_dirs:
        for sub in ("cu13", "cu12", "cuda_nvcc"):
            if executable(base / sub / "bin" / "nvcc"):
                return base / sub / "bin" / "nvcc"
    raise ToolchainError(
        "no nvcc to compile the twin: not on PATH, not in $CUDA_HOME/bin, no pip CUDA wheel "
        "(install a CUDA toolkit, set CUDA_HOME, or `pip install nvidia-cuda-nvcc`)"
    )
