"""Importing a file by its path (a kernel module of an extraction, Inductor's wrapper module under --run-artifact)
without writing anything beside it: no `__pycache__` in the user's extraction, whatever PYTHONDONTWRITEBYTECODE says.

Only files that harvest's own commands were asked to run come here (see each caller): files harvest reads as data
are never imported."""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType


@contextlib.contextmanager
def no_bytecode_written():
    """Within the block, Python writes no .pyc for what it imports (the setting as it was afterwards)."""
    before = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        yield
    finally:
        sys.dont_write_bytecode = before


def import_file(path: str | Path, name: str, register: bool = False) -> ModuleType:
    """The module in `path`, imported under `name`; `register` puts it in sys.modules first (a wrapper module's code
    may look itself up there). Raises ImportError when the file cannot be imported, or what its code raises."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: not a Python file that can be imported")
    module = importlib.util.module_from_spec(spec)
    if register:
        sys.modules[name] = module
    with no_bytecode_written():
        spec.loader.exec_module(module)
    return module
