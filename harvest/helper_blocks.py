"""harvest/inductor_helpers.py read as text: which `triton_helpers.NAME` harvest has a version of, and the source of the
ones a set of kernels calls, with what those call, for an extraction's harness.py.

Pure and torch/triton-free: the file is read, never imported (importing it would import triton). A kernel that calls
a helper harvest has no version of keeps Inductor's import of torch's module (module_plan decides, and says so).
"""

from __future__ import annotations

import functools
import re
import textwrap
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "inductor_helpers.py"
_BLOCK = re.compile(r"^# >>> helper: (\w+)((?: before torch \d+\.\d+)?)\n(.*?)^# <<< helper: \1\2$", re.M | re.S)
_CAPTURED_WITH = re.compile(r"^Captured with torch (\S+?),", re.M)
_NEEDS = re.compile(r"\bhelper_(\w+)\b")
_LIBDEVICE = re.compile(r"\blibdevice\.(\w+)\(")
_CALLED = re.compile(r"\btriton_helpers\.(\w+)\b")
MODULE_LINE = 'triton_helpers = types.ModuleType("triton_helpers", "harvest\'s versions of the Inductor helpers these kernels call")'


@functools.lru_cache(maxsize=1)
def _all_blocks() -> tuple[tuple[str, tuple[int, int] | None, str], ...]:
    """(name, the torch version a variant came before or None, source) per block, in the file's order."""
    return tuple((name, torch_release(suffix.split()[-1]) if suffix else None, body.strip() + "\n")
                 for name, suffix, body in _BLOCK.findall(SOURCE.read_text(encoding="utf-8")))


def torch_release(version: str | None) -> tuple[int, int] | None:
    """(2, 11) for "2.11.0+cu130"; None when unknown."""
    match = re.match(r"(\d+)\.(\d+)", version or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def captured_torch(module_text: str) -> str | None:
    """The torch version a kernel module's header says it was captured with."""
    match = _CAPTURED_WITH.search(module_text)
    return match.group(1) if match else None


@functools.lru_cache(maxsize=8)
def helper_blocks(torch_version: str | None = None) -> dict[str, str]:
    """{name a kernel calls: its block's source, as Inductor of that torch defines it}, in the file's order. A
    variant block stands in for the current one, renamed to it, when the torch is older than the variant's bound;
    an unknown torch gets the current forms."""
    release = torch_release(torch_version)
    blocks = {name: body for name, before, body in _all_blocks() if before is None}
    for name, before, body in sorted((b for b in _all_blocks() if b[1] is not None), key=lambda b: b[1], reverse=True):
        if release is not None and release < before:  # the oldest bound that still lies above this torch wins
            blocks[name] = body.replace(f"helper_{name}_before_{before[0]}_{before[1]}(", f"helper_{name}(")
    return blocks


def known_helpers() -> frozenset[str]:
    return frozenset(helper_blocks())


def helpers_called(kernel_text: str) -> set[str]:
    """The `triton_helpers.NAME` a kernel's text reads (set_driver_to_* calls are Inductor's, outside kernels)."""
    return set(_CALLED.findall(kernel_text))


def with_dependencies(names) -> list[str]:
    """`names` and every helper their blocks call, in the file's order (a block's dependencies come before it)."""
    blocks = helper_blocks()  # which helpers call which is the same in every variant
    unknown = set(names) - set(blocks)
    assert not unknown, f"helpers harvest has no version of: {sorted(unknown)}"  # module_plan keeps torch's for those
    wanted, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name not in wanted:
            wanted.add(name)
            todo.extend(n for n in _NEEDS.findall(blocks[name]) if n in blocks and n != name)
    return [name for name in blocks if name in wanted]


def helpers_libdevice(names) -> set[str]:
    """The libdevice functions these helpers (and what they call) call: the interpreter shim needs them."""
    blocks = helper_blocks()
    return {fn for name in with_dependencies(names) for fn in _LIBDEVICE.findall(blocks[name])}


def helpers_source(names, torch_version: str | None = None) -> str:
    """The helper defs for these names (dependencies included), as Inductor of `torch_version` defines them, and the
    `triton_helpers` module kernels read them from; the text needs `types`, `triton`, `tl` and, when
    helpers_libdevice says so, `libdevice` imported."""
    chosen = with_dependencies(names)
    blocks = helper_blocks(torch_version)
    defs = "\n\n".join(blocks[name] for name in chosen)
    entries = textwrap.fill(", ".join(f"{name}=helper_{name}" for name in chosen), 116, initial_indent="    ", subsequent_indent="    ")
    return f"{defs}\n\n{MODULE_LINE}\ntriton_helpers.__dict__.update(\n{entries}\n)\n"
