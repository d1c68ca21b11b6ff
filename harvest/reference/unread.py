"""Graph values a kernel's computation names but the kernel never reads, made up for the reference.

Some ops take a tensor only for its shape or get a result that does not depend on its values: the max-pool backward
takes the pooled input for its size, a max-pool of window 1 stores offsets that are all 0, `zeros_like(x)`. Inductor
then launches the kernel without that tensor, and the reference has no parameter to bind it to. When the kernel reads
no buffer that holds it, nothing the kernel stores can depend on its values: the reference passes zeros in the
layout the graph recorded for it, and compares the outputs as usual.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from harvest.model import TensorMeta
from harvest.reference.bound import FragmentBinding
from harvest.reference.fragment import Fragment
from harvest.reference.fx_args import fx_refs


def unread_placeholders(fragment: Fragment, binding: FragmentBinding, buffers: Mapping[str, dict],
                        read_buffers: set[str]) -> dict[str, TensorMeta]:
    """The fragment's inputs that some op takes, that no kernel parameter is bound to, that live in no buffer the
    kernel reads and that the kernel cannot compute itself, with their recorded layouts. None when the kernel reads a value no op of the fragment takes: the
    value of an unbound input might come in through it (a cast Inductor fused away reads the cast's source)."""
    used = {ref for op in fragment.ops.values() for value in (*op.args, *op.kwargs.values()) for ref in fx_refs(value)}
    taken = used | {source for source, _ in binding.from_partials.values()} | set(binding.outputs.values())
    if any(name not in taken for name in binding.inputs):
        return {}
    holders: dict[str, set[str]] = {}
    for buffer, info in buffers.items():
        holders.setdefault((info or {}).get("node") or "", set()).add(buffer)
    unread = {}
    for name, placeholder in fragment.placeholders.items():
        meta = placeholder.meta
        if name in binding.inputs or name not in used or meta is None or len(meta.stride) != len(meta.shape) \
                or ({name} | holders.get(name, set())) & read_buffers or recomputable(name, fragment, binding):
            continue
        unread[name] = meta
    return unread


def recomputable(name: str, fragment: Fragment, binding: FragmentBinding) -> bool:
    """Whether a kernel could compute `name` itself: a node the capture recorded with what it reads (a view, an
    index Inductor recomputes from positions). A graph input, or a node recorded without its inputs (a library
    call's result, a reduction's: no kernel recomputes one), has values a kernel can only read."""
    op = fragment.ops.get(name)
    if op is None:
        return False
    refs = [ref for value in (*op.args, *op.kwargs.values()) for ref in fx_refs(value)]
    return all(ref in fragment.ops or ref in fragment.placeholders or ref in binding.inputs for ref in refs)


def layout_symbols(meta: TensorMeta) -> list[str]:
    """The size symbols a layout's sizes and strides use (`s0`, `ks1` of `2*s0 + ks1`), in order."""
    found = [s for size in (*meta.shape, *meta.stride) if isinstance(size, str) for s in re.findall(r"[A-Za-z_]\w*", size)]
    return list(dict.fromkeys(found))


def made_up_statements(name: str, original: str, meta: TensorMeta, shape: str, stride: str) -> list[str]:
    """Statements (unindented) that leave zeros of `meta`'s dtype, in the layout `shape` and `stride` (rendered
    sizes), in `name` (on `device`), for the graph's `original`."""
    upcast = ".float()" if meta.dtype in ("bfloat16", "float16") else ""
    return [f"# {original}: the kernel never reads it (what it stores does not depend on its values): zeros, in its layout",
            f"{name} = torch.empty_strided({shape}, {stride}, dtype=torch.{meta.dtype}, device=device).zero_(){upcast}"]
