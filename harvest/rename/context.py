"""What renaming takes and gives: the hints for one kernel, the result, and the names a new name may never take."""

from __future__ import annotations

import builtins
import keyword
from dataclasses import dataclass

from harvest.model import FxNode

# ---------------------------------------------------------------------------------------------------------------------
# Public API


@dataclass(frozen=True)
class RenameContext:
    """What the model knows about one kernel that the source alone does not say."""

    kernel_name: str = ""  # readable kernel name (from kernel_names); "" derives one from the Inductor name
    # Inductor param -> (base name without `_ptr`, the launch expression it binds to: "primals_3", "buf4", "ks0")
    param_hints: tuple[tuple[str, str, str], ...] = ()
    fragment: tuple[FxNode, ...] = ()  # the kernel's `# Graph fragment:` nodes, to trace tmps back to FX nodes


@dataclass(frozen=True)
class RenameResult:
    code: str  # decorator-free `@triton.jit def <kernel_name>(...)` plus the imports it needs
    kernel_name: str
    mapping: tuple[tuple[str, str, str], ...]  # (new name, Inductor name, FX node / launch binding or "")
    params: tuple[tuple[str, str], ...]  # (Inductor param, new param) in signature order
    ok: bool
    warnings: tuple[str, ...] = ()


# Names a renamed variable may never take: they are read as globals inside Inductor kernels or mean something in Python.
RESERVED = frozenset(
    {"tl", "triton", "libdevice", "math", "tl_math", "triton_helpers", "triton_heuristics", "np", "torch"}
    | set(keyword.kwlist)
    | set(keyword.softkwlist)
    | set(dir(builtins))
)


def _failure(code: str, name: str, warning: str) -> RenameResult:
    return RenameResult(code=code, kernel_name=name, mapping=(), params=(), ok=False, warnings=(warning,))
