"""One kernel definition: `async_compile.triton(name, source, ...)` and its comment block (source nodes, ATen ops,
graph fragment) read into a `Kernel`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import libcst as cst
import libcst.matchers as m

from harvest.model import (
    FxNode,
    Kernel,
    KernelComment,
    KernelKind,
)
from harvest.parse.fx_args import read_fx_arguments
from harvest.parse.patterns import (
    FX_NODE_RE,
    HEURISTIC,
    KIND_BY_HEURISTIC,
    KIND_BY_PREFIX,
    SIZE_HINT_PREFIXES,
    SOURCE_NODES_RE,
    TENSOR_TYPE_RE,
)
from harvest.parse.values import keyword_args, parse_tensor_meta, plain, positional_args, split_list
from harvest.syntax import is_constexpr_annotation_cst, kernel_trees


def read_kernel(name: str, triton_call: cst.Call, comment: KernelComment) -> tuple[Kernel, tuple[str, ...]]:
    """One `async_compile.triton(...)` definition -> (Kernel, the parameters a launch binds positionally)."""
    positional = positional_args(triton_call)
    device_node = keyword_args(triton_call).get("device_str")
    device_str = str(plain(device_node)) if device_node is not None else ""
    hint = _kind_from_prefix(name)
    if len(positional) < 2 or not isinstance(positional[1], (cst.SimpleString, cst.ConcatenatedString)):
        reason = "could not read async_compile.triton(...): expected the kernel name and its source string"
        return Kernel(name, "", hint or "other", device_str, comment=comment, standalone_reason=reason), ()
    source = positional[1].evaluated_value
    if not isinstance(source, str):
        source = source.decode() if isinstance(source, bytes) else ""
    base = Kernel(name=name, source=source, kind=hint or "other", device_str=device_str, comment=comment)
    trees = kernel_trees(source)  # the one parse of this kernel: every later stage reads these trees
    tree = trees.cst
    if tree is None:
        exc = trees.cst_error
        message = exc.message if isinstance(exc, cst.ParserSyntaxError) else f"{type(exc).__name__}: {exc}"
        return replace(base, standalone_reason=f"could not read kernel source: {message.splitlines()[0]}"), ()

    functions = [s for s in tree.body if isinstance(s, cst.FunctionDef) and s.decorators]
    fn = next((f for f in functions if f.name.value == name), functions[0] if functions else None)
    if fn is None:
        return replace(base, standalone_reason="could not find the @triton.jit function in the kernel source"), ()
    params = [p.name.value for p in fn.params.params]
    constexpr = {p.name.value for p in fn.params.params if p.annotation and is_constexpr_annotation_cst(p.annotation.annotation)}
    decorator = next((d.decorator for d in fn.decorators if m.matches(d.decorator, HEURISTIC)), None)
    if decorator is None:
        runtime = tuple(p for p in params if p not in constexpr)
        reason = "could not read decorator: no @triton_heuristics.<kind>(...) above the kernel"
        return replace(base, standalone_reason=reason), runtime

    heuristic_call = cst.ensure_type(decorator, cst.Call)
    heuristic = cst.ensure_type(heuristic_call.func, cst.Attribute).attr.value
    kwargs = {key: plain(value) for key, value in keyword_args(heuristic_call).items()}
    triton_meta = kwargs.pop("triton_meta", {})
    inductor_meta = kwargs.pop("inductor_meta", {})
    size_hints = kwargs.pop("size_hints", {})
    kind = KIND_BY_HEURISTIC.get(heuristic) or hint or "other"
    if isinstance(inductor_meta, dict) and "combo_grid_meta" in inductor_meta:
        kind = "foreach"

    metas = {"triton_meta": triton_meta, "inductor_meta": inductor_meta}
    problems = [f"{label} is not a literal" for label, value in metas.items() if not isinstance(value, dict)]
    triton_meta = triton_meta if isinstance(triton_meta, dict) else {}
    signature = triton_meta.get("signature", {})
    if not isinstance(signature, dict):
        problems.append("triton_meta['signature'] is not a dict")
        signature = {}
    signature = _name_signature(signature, params, constexpr)
    constants = triton_meta.get("constants", {})
    constants = _by_param_name(constants, params) if isinstance(constants, dict) else {"source": constants}
    configs = triton_meta.get("configs", [])
    configs = configs if isinstance(configs, list) else [configs]
    runtime = tuple(p for p in params if p not in constexpr and signature.get(p) != "constexpr")
    if heuristic == FIXED_CONFIG:  # the config Inductor fixed at compile time: the kind is in the parameters
        kind = _fixed_config_kind(params, kind)

    if problems:
        reason: str | None = "could not read decorator: " + "; ".join(problems)
    elif heuristic not in KIND_BY_HEURISTIC and heuristic != FIXED_CONFIG:
        reason = f"unsupported heuristic triton_heuristics.{heuristic}"
    else:
        reason = None
    kernel = replace(
        base,
        kind=kind,
        size_hints=_size_hints(size_hints, kind),
        signature=signature,
        constants=constants,
        configs=tuple(c if isinstance(c, dict) else {"source": c} for c in configs),
        inductor_meta=inductor_meta if isinstance(inductor_meta, dict) else {"source": inductor_meta},
        triton_meta=triton_meta,
        heuristic=heuristic,
        heuristic_args=kwargs,
        standalone_reason=reason,
        jit_name=fn.name.value if fn.name.value != name else "",
    )
    return kernel, runtime


FIXED_CONFIG = "fixed_config"  # @triton_heuristics.fixed_config(config={...}): blocks chosen at compile time


def _fixed_config_kind(params: list[str], named: KernelKind) -> KernelKind:
    """A fixed_config kernel's kind, which its decorator does not say (and its `triton_unk_` name neither): a loop
    over the reduction (an R0_BLOCK), a whole row at once (a reduction size without a block), or neither."""
    if named not in ("other", "pointwise", "reduction", "persistent_reduction"):
        return named
    if any(re.fullmatch(r"R\d_BLOCK|RBLOCK", p) for p in params):
        return "reduction"
    if any(re.fullmatch(r"r\d_numel|rnumel", p) for p in params):
        return "persistent_reduction"
    return "pointwise"


def _kind_from_prefix(name: str) -> KernelKind | None:
    return KIND_BY_PREFIX.get(name[:10])


def _name_signature(signature: dict[Any, Any], params: list[str], constexpr: set[str]) -> dict[str, str]:
    """Key the signature by parameter name (2.4-2.5 used positions) and list constexpr params it left out."""
    named = _by_param_name(signature, params)
    ordered = {p: str(named[p]) if p in named else "constexpr" for p in params if p in named or p in constexpr}
    ordered.update({str(k): str(v) for k, v in named.items() if k not in ordered})
    return ordered


def _by_param_name(mapping: dict[Any, Any], params: list[str]) -> dict[str, Any]:
    return {params[k] if isinstance(k, int) and 0 <= k < len(params) else str(k): v for k, v in mapping.items()}


def _size_hints(hints: Any, kind: str) -> dict[str, int]:
    """2.6+ wrote a dict; 2.4 a list ordered [.., y, x] plus the reduction size last (which becomes 'r0_')."""
    if isinstance(hints, dict):
        return {str(k): v for k, v in hints.items()}
    if not isinstance(hints, list):
        return {}
    reduction = kind in ("reduction", "persistent_reduction", "cooperative_reduction", "split_scan") and len(hints) > 1
    tiled = hints[:-1] if reduction else hints
    named = dict(zip(SIZE_HINT_PREFIXES[-len(tiled):], tiled)) if tiled else {}
    return {**named, "r0_": hints[-1]} if reduction else named


# -- the comment block above a kernel --------------------------------------------------------------------------------


def read_comment(lines: Sequence[str]) -> KernelComment:
    """Parse `# Topologically Sorted Source Nodes`, `# Source node to ATen node mapping` and `# Graph fragment`."""
    source_nodes: tuple[str, ...] = ()
    aten_ops: tuple[str, ...] = ()
    mapping: list[tuple[str, tuple[str, ...]]] = []
    fragment: list[FxNode] = []
    returns: tuple[str, ...] = ()
    section = ""
    for raw in lines:
        text = raw.strip()
        nodes = SOURCE_NODES_RE.search(text)
        if nodes and not raw.startswith("  "):
            source_nodes, aten_ops = split_list(nodes["nodes"]), split_list(nodes["aten"])
        elif text.startswith("Source node to ATen node mapping"):
            section = "mapping"
        elif text.startswith("Graph fragment"):
            section = "fragment"
        elif section == "mapping" and "=>" in text:
            node, ops = text.split("=>", 1)
            mapping.append((node.strip(), split_list(ops)))
        elif section == "fragment" and text.startswith("return"):
            returns = tuple(n.strip(" %()") for n in text[len("return"):].split(",") if n.strip(" %()"))
        elif section == "fragment" and text.startswith("%"):
            node = _read_fx_node(text)
            if node is not None:
                fragment.append(node)
    return KernelComment(source_nodes, aten_ops, tuple(mapping), tuple(fragment), returns)


def _read_fx_node(text: str) -> FxNode | None:
    match = FX_NODE_RE.match(text)
    if match is None:
        return None
    op = "placeholder" if match["op"] == "PlaceHolder" else match["op"]
    meta = None
    tensor = TENSOR_TYPE_RE.search(match["type"])
    if tensor:
        try:
            meta = parse_tensor_meta(tensor["meta"])
        except ValueError:
            meta = None
    target = match["target"].removeprefix("torch.ops.")
    args, kwargs, error = read_fx_arguments(match["args"] or "", match["kwargs"] or "")
    return FxNode(
        name=match["name"],
        op=op,
        target=target,
        args=args,
        kwargs=kwargs,
        meta=meta,
        num_users=int(match["users"]) if match["users"] else None,
        args_error=error,
    )


