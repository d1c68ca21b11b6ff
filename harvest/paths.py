"""Paths as harvest's outputs show them, the same on every machine (DESIGN #11): a file of an installed package
(torch, triton, transformers ...) is named from its package down, not from the venv or HOME it sits in."""

from __future__ import annotations

import re

INSTALLED = re.compile(r"^.*[\\/](?:site|dist)-packages[\\/]")


def installed_path(path: str) -> str | None:
    """`<installed>/transformers/models/gpt2/modeling_gpt2.py` for a file under a site-packages or dist-packages
    directory (`/home/me/.cache/venv/lib/python3.11/site-packages/transformers/...`), else None."""
    if not INSTALLED.match(path):
        return None
    return "<installed>/" + INSTALLED.sub("", path).replace("\\", "/")
