"""A torchrun job's kernels: one module for a kernel every rank compiled identically, even in a graph that differs.

    results = share_rank_kernels(capture, results)     # pure: GraphResults in, GraphResults out

harvest.capture.ranks writes a graph once when every rank compiled all of it identically. A graph that differs
between ranks (a rank-dependent shape in one part of it) is written per rank, and its kernels are compared here one
by one: a kernel whose module is the same text on every rank's variant, once the graph's name, raw directory and GPU index are
read as the same (so the same kernel source, config and recorded layouts: the module holds all three), is written
once, in the lowest rank's graph, and each variant's manifest entry points to that module. Every kernel entry of a
torchrun job lists the ranks its module stands for.
"""

from __future__ import annotations

import re
from dataclasses import replace

from harvest.capture.ranks import device_neutral
from harvest.model import Capture
from harvest.module.pool import GraphResult


def share_rank_kernels(capture: Capture, results: list[GraphResult]) -> list[GraphResult]:
    if not capture.ranks:
        return results
    groups: dict[tuple[str, str], list[int]] = {}  # (compile id, AOT id) -> positions of its variants
    for position, result in enumerate(results):
        groups.setdefault((result.entry["compile_id"], result.entry["aot_id"]), []).append(position)
    results = [with_kernel_ranks(result) for result in results]
    for positions in groups.values():
        covered = sorted(rank for p in positions for rank in results[p].entry.get("ranks", []))
        if len(positions) > 1 and covered == list(capture.ranks):
            results = share_in_group(results, positions)
    return results


def with_kernel_ranks(result: GraphResult) -> GraphResult:
    """Each kernel entry lists its graph's ranks."""
    ranks = result.entry.get("ranks", [])
    kernels = [{**kernel, "ranks": list(ranks)} for kernel in result.entry["kernels"]]
    return replace(result, entry={**result.entry, "kernels": kernels})


def share_in_group(results: list[GraphResult], positions: list[int]) -> list[GraphResult]:
    """Within the variants of one graph (lowest rank first), modules equal on every variant kept in the first only."""
    first = results[positions[0]]
    for kernel in first.entry["kernels"]:
        module = kernel["module"]
        if not module or module not in first.files:
            continue
        others = [(p, same_kernel(results[p], first, kernel)) for p in positions[1:]]
        if any(entry is None for _, entry in others):
            continue
        ranks = sorted(kernel["ranks"] + [rank for p, _ in others for rank in results[p].entry.get("ranks", [])])
        for p, entry in others:
            results[p] = pointed(results[p], entry["name"], kernel, ranks)
        results[positions[0]] = pointed(results[positions[0]], kernel["name"], kernel, ranks)
        first = results[positions[0]]
    return results


def same_kernel(result: GraphResult, first: GraphResult, kept: dict) -> dict | None:
    """The kernel of this variant whose module is `kept`'s, read with the first variant's names (Inductor numbers
    a graph's kernels in order, so one op more before it renames the same kernel): None when there is none."""
    for kernel in result.entry["kernels"]:
        text = result.files.get(kernel["module"] or "")
        if text is not None and kernel["kind"] == kept["kind"] and \
                device_neutral(as_first(text, result, kernel, first, kept)) == device_neutral(first.files[kept["module"]]):
            return kernel
    return None


def as_first(text: str, result: GraphResult, kernel: dict, first: GraphResult, kept: dict) -> str:
    """A variant's module text with its graph's name, raw directory and kernel names read as the first variant's."""
    raw, first_raw = result.entry["raw"].rsplit("/", 1)[0], first.entry["raw"].rsplit("/", 1)[0]
    text = text.replace(raw + "/", first_raw + "/")
    for mine, theirs in ((result.entry["name"], first.entry["name"]), (kernel["name"], kept["name"]),
                         (kernel["display_name"], kept["display_name"])):
        text = re.sub(rf"\b{re.escape(mine)}\b", theirs, text)
    return text


def pointed(result: GraphResult, name: str, kept: dict, ranks: list[int]) -> GraphResult:
    """The kernel `name` of this graph variant stands for `ranks` through the module of `kept` (the first variant's
    entry); its own copy is not written."""
    module = kept["module"]
    kernels = [{**kernel, "module": module, "sha256": kept["sha256"], "ranks": ranks} if kernel["name"] == name else kernel
               for kernel in result.entry["kernels"]]
    own = next(kernel["module"] for kernel in result.entry["kernels"] if kernel["name"] == name)
    files = {path: text for path, text in result.files.items() if path != own or path == module}
    return replace(result, entry={**result.entry, "kernels": kernels}, files=files)
