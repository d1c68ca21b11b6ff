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
class DroppedParam:
    """A size parameter of Inductor's def that the renamed def no longer has: Inductor overwrote it with the size it
    compiled in (`r0_numel = 512` under `def k(..., r0_numel, ...)`), so no value passed for it was ever used. The
    body keeps that line, as `name = value` with a comment saying why the size is fixed."""

    param: str  # Inductor's name ("r0_numel"); its position is its index in RenameResult.params
    name: str  # the body's name for the size ("n_cols")
    value: int  # the size Inductor compiled in
    reason: str  # why it stays fixed: the line's comment, without "# fixed: "


@dataclass(frozen=True)
class RenameResult:
    code: str  # decorator-free `@triton.jit def <kernel_name>(...)` plus the imports it needs
    kernel_name: str
    mapping: tuple[tuple[str, str, str], ...]  # (new name, Inductor name, FX node / launch binding or "")
    # (Inductor param, new name) for every parameter of Inductor's def, in its order; a dropped one's new name is
    # the body's name for its size
    params: tuple[tuple[str, str], ...]
    ok: bool
    warnings: tuple[str, ...] = ()
    dropped_params: tuple[DroppedParam, ...] = ()  # Inductor params the renamed def leaves out, in signature order


# Names a renamed variable may never take: they are read as globals inside Inductor kernels or mean something in Python.
RESERVED = frozenset(
    {"tl", "triton", "libdevice", "math", "tl_math", "triton_helpers", "triton_heuristics", "np", "torch"}
    | set(keyword.kwlist)
    | set(keyword.softkwlist)
    | set(dir(builtins))
)


def failure(code: str, name: str, warning: str) -> RenameResult:
    return RenameResult(code=code, kernel_name=name, mapping=(), params=(), ok=False, warnings=(warning,))
