"""Test setup: the Triton interpreter on (no GPU in CI), fixtures' locations, the requires_cuda marker."""

import os
from pathlib import Path

import pytest

# Must happen before triton is imported anywhere: kernels then run on numpy, and Inductor loads them that way.
os.environ.setdefault("TRITON_INTERPRET", "1")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if _has_cuda():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (requires_cuda); run on the device machine")
    for item in items:
        if "requires_cuda" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES
