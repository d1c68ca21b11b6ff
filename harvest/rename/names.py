"""Kernel names (`triton_poi_fused_add_pow_0` -> `add_kernel`) and the hints a launch gives for parameter names (what
each pointer is bound to)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from harvest.model import Graph
from harvest.ops import NOT_NAMING

# ---------------------------------------------------------------------------------------------------------------------
# Kernel names

_OP_WORDS = {"_to_copy": "cast", "convert_element_type": "cast"}
# Ops that together make one well-known function: (the ops that reveal it, what it absorbs, its name).
_COMPOSITES: tuple[tuple[str, frozenset[str], str], ...] = (
    ("native_layer_norm_backward", frozenset({"native_layer_norm", "mul", "sub", "sum", "add", "div"}),
     "layer_norm_bwd"),
    ("native_layer_norm", frozenset({"add", "mul", "sub", "rsqrt", "var_mean"}), "layer_norm_fwd"),
    ("_softmax_backward_data", frozenset({"mul", "sub", "neg", "fma", "sum"}), "softmax_bwd"),
    ("_log_softmax", frozenset({"amax", "sub", "exp", "log", "sum"}), "log_softmax"),
    ("_softmax", frozenset({"amax", "sub", "exp", "sum", "div", "mul", "abs", "ne", "eq", "all", "any", "where",
                            "logical_not"}), "softmax"),
    ("gelu_backward", frozenset({"gelu", "mul", "add", "exp", "erf"}), "gelu_bwd"),
    ("gelu", frozenset({"mul", "add", "erf", "tanh"}), "gelu"),
    ("native_batch_norm_backward", frozenset({"native_batch_norm"}), "batch_norm_bwd"),
    ("_native_batch_norm_legit_functional", frozenset({"add", "mul", "sub", "rsqrt", "var_mean"}), "batch_norm_fwd"),
    ("var_mean", frozenset({"sub", "mul", "add", "rsqrt"}), "var_mean"),
)
# Source-node names a user writes (torch.square, F.relu): when all of a kernel's source nodes are these, they name it.
_USER_FUNCS = frozenset(
    {"square", "sqrt", "rsqrt", "exp", "log", "abs", "relu", "gelu", "silu", "sigmoid", "tanh", "softmax",
     "log_softmax", "layer_norm", "add", "mul", "sub", "div", "pow", "neg", "sin", "cos", "mean", "sum", "amax",
     "maximum", "minimum", "where", "clamp", "erf", "dropout", "norm", "rms_norm"}
)
_KERNEL_PREFIX = re.compile(r"^triton_(?:poi|per|red|tem|for|spl|unk|fused|helper)?_?(?:fused_)?")


def readable_kernel_name(inductor_name: str, aten_ops: Sequence[str] = (), source_nodes: Sequence[str] = ()) -> str:
    """`triton_per_fused_native_layer_norm_0` + its comment -> `layer_norm_fwd_kernel` (not yet unique)."""
    ops = [op.split(".")[1] if op.startswith("aten.") else op.split(".")[-1] for op in aten_ops]
    if not ops:  # no comment: the op words sit between the prefix and the counter, joined by "_"
        middle = "_" + re.sub(r"_\d+$", "", _KERNEL_PREFIX.sub("", inductor_name)) + "_"
        middle = middle.replace("__to_copy_", "_cast_")
        for reveal, _, _ in _COMPOSITES:
            if f"_{reveal.lstrip('_')}_" in middle:
                ops.append(reveal)
                middle = middle.replace(f"_{reveal.lstrip('_')}_", "_")
        ops += [w for w in middle.split("_") if w and not w.isdigit()]  # (triton_for_fused_0: no op words)
    ops = [_OP_WORDS.get(op, op) for op in ops if op and op not in NOT_NAMING]
    words: list[str] = []
    absorbed: set[str] = set()
    for reveal, absorbs, name in _COMPOSITES:
        if reveal in ops and reveal not in absorbed:
            words.append(name)
            absorbed |= absorbs | {reveal}
    if not words:
        users = [re.sub(r"_\d+$", "", s) for s in source_nodes if s]
        if users and all(u in _USER_FUNCS for u in users):
            words = users[:3]
        else:
            words = list(dict.fromkeys(op.lstrip("_") for op in ops if op not in absorbed))[:3]
    words += [op.lstrip("_") for op in dict.fromkeys(ops) if op in {"sum", "amax", "mean"} and op not in absorbed
              and words and op not in words]
    base = "_".join(words) or ("foreach" if inductor_name.startswith("triton_for_") else "fused")
    base = re.sub(r"[^0-9a-zA-Z_]", "_", base).strip("_") or "fused"
    return f"{base}_kernel"


# ---------------------------------------------------------------------------------------------------------------------
# Launch bindings -> parameter hints

IDENT = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_ANON_INPUT = re.compile(r"^(arg\d+_\d+|primals_\d+|tangents_\d+|buf\d+|s\d+|ks\d+|u\d+)$")


def extern_producers(graph: Graph) -> dict[str, str]:
    """Buffer -> short name of the extern op that wrote it (`buf5` -> `addmm`), following reuse views."""
    out: dict[str, str] = {}
    for call in graph.externs:
        if call.out:
            out[call.out] = call.op.split(".")[-2] if call.op.endswith((".default", ".Tensor")) else call.op.split(".")[-1]
    return out


def buffer_base(buffer: str, inputs: set[str], producers: dict[str, str], graph: Graph | None) -> str:
    """A readable base name for what a launch argument binds to, or "" when nothing better than a role is known."""
    seen: set[str] = set()
    name = buffer
    while name and name not in seen:  # follow `buf14 = buf12` reuse chains to where the data came from
        seen.add(name)
        if name in producers:
            return _identifier(producers[name])
        if name.startswith("tangents_"):
            return "grad"
        if name in inputs and not _ANON_INPUT.match(name):
            # dynamo's placeholder names: l_self_modules_ln_parameters_weight_ -> ln_weight, l_x_ -> x
            cleaned = re.sub(r"^l_(self_)?", "", name).strip("_")
            cleaned = re.sub(r"(modules|parameters|buffers)_", "", cleaned)
            return _identifier(cleaned)
        buf = graph.buffers.get(name) if graph is not None else None
        name = buf.base if buf is not None and buf.base else ""
    return ""


def _identifier(text: str) -> str:
    text = re.sub(r"[^0-9a-zA-Z_]", "_", text).strip("_")
    return text if text and not text[0].isdigit() else ""
