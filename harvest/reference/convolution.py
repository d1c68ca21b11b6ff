"""A convolution whose bias Inductor leaves to the next kernel: on a GPU it runs the library's convolution without the
bias and adds the bias, one value per channel, in the kernel that reads the result (often in place, and under
autocast after a cast). The buffer that kernel reads is then the convolution without its bias, whatever node the
capture names for it; the reference computes the node as the kernel does: that buffer plus the bias.
"""

from __future__ import annotations

import ast

from harvest.model import FxExpr, FxList, FxNode, FxRef
from harvest.reference.access import Access
from harvest.reference.bound import FragmentBinding
from harvest.reference.fragment import Fragment, Op
from harvest.reference.welford import define_before
from harvest.syntax import dotted

CONVOLUTION = "torch.ops.aten.convolution.default"


def bind_convolution_without_bias(binding: FragmentBinding, buffers: dict[str, dict], fragment: Fragment,
                                  access: Access) -> None:
    """The buffers a kernel reads that hold a convolution without its bias: one with no FX node whose one origin is
    the convolution (the library call's own output), or one the capture names as the convolution itself while the
    kernel adds the loaded bias to it (under autocast the capture names the convolution's node for the buffer). The
    reference then computes the convolution node as the kernel does: the buffer plus the bias, one per channel."""
    for name in list(binding.inputs):
        info = buffers.get(name) or {}
        origins = info.get("origins") or []
        conv = fragment.ops.get(origins[0]) if not info.get("node") and len(origins) == 1 else None
        held = name
        if conv is None:
            conv = fragment.ops.get(name)
            bias = conv.args[2] if conv is not None and conv.target == CONVOLUTION and len(conv.args) >= 3 else None
            if not (isinstance(bias, FxRef) and bias.name in binding.inputs
                    and _adds(access, binding.inputs[name], binding.inputs[bias.name])):
                continue
            held = f"{name}_without_bias"  # the buffer, bound under a name of its own
            binding.inputs[held] = binding.inputs.pop(name)
            binding.input_meta[held] = binding.input_meta.pop(name, None) or conv.meta
            if name in binding.input_buffers:
                binding.input_buffers[held] = binding.input_buffers.pop(name)
            fragment.placeholders[held] = FxNode(held, "placeholder", held, meta=binding.input_meta[held])
        if conv.target != CONVOLUTION or len(conv.args) < 3:
            continue
        bias = conv.args[2]
        meta = binding.input_meta.get(held) or conv.meta  # (the library call's own buffer: the wrapper may not say)
        if not isinstance(bias, FxRef) or bias.name not in binding.inputs or meta is None or len(meta.shape) < 2:
            continue
        binding.input_meta[held] = meta
        before = list(fragment.ops)
        per_channel = f"{conv.name}_bias"
        shape = FxList(tuple(FxExpr((text,)) for text in ["1", "-1"] + ["1"] * (len(meta.shape) - 2)))
        fragment.ops[per_channel] = Op(per_channel, "torch.ops.aten.reshape.default", (bias, shape), {}, None)
        fragment.ops[conv.name] = Op(conv.name, "torch.ops.aten.add.Tensor", (FxRef(held), FxRef(per_channel)), {},
                                      conv.meta)
        fragment.broken.pop(conv.name, None)
        define_before(fragment, before, {conv.name})


def _loaded(param: str, access: Access) -> set[str]:
    """The names the kernel assigns a load of `param` to (a cast of the load included)."""
    found = set()
    for name, value in access.assigns.items():
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "to":
            value = value.func.value
        if isinstance(value, ast.Call) and dotted(value.func) == "tl.load" and value.args \
                and any(isinstance(n, ast.Name) and n.id == param for n in ast.walk(value.args[0])):
            found.add(name)
    return found


def _adds(access: Access, first: str, second: str) -> bool:
    """Whether the kernel adds what it loads from `second` to what it loads from `first`."""
    a, b = _loaded(first, access), _loaded(second, access)
    return any(isinstance(v, ast.BinOp) and isinstance(v.op, ast.Add) and isinstance(v.left, ast.Name)
               and isinstance(v.right, ast.Name) and {v.left.id, v.right.id} & a and {v.left.id, v.right.id} & b
               for v in access.assigns.values())


def convolution_without_bias(buffer: str, buffers: dict[str, dict], fragment: Fragment, binding: FragmentBinding
                             ) -> str | None:
    """The node a convolution template's output holds: on a GPU Inductor convolves without the bias (a later kernel
    adds it), so the buffer holds no node's value but that of the same convolution with no bias, which the
    reference computes from the input and weight the template read (None when the buffer is not that)."""
    origins = (buffers.get(buffer) or {}).get("origins") or []
    conv = fragment.ops.get(origins[0]) if len(origins) == 1 else None
    if conv is None or conv.target != CONVOLUTION or len(conv.args) < 3:
        return None
    x, w, bias = conv.args[:3]
    if not (isinstance(x, FxRef) and isinstance(w, FxRef) and isinstance(bias, FxRef)
            and x.name in binding.inputs and w.name in binding.inputs):
        return None
    name = f"{conv.name}_without_bias"
    fragment.ops[name] = Op(name, conv.target, (x, w, FxExpr(("None",)), *conv.args[3:]), dict(conv.kwargs), conv.meta)
    return name
