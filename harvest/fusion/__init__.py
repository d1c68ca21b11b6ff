"""Fusion: takes a parsed `Graph` and the provenance artifacts its `CapturedGraph` holds; reads which ATen ops, FX
nodes and user source lines each kernel fused, and what did not fuse and why; gives a `KernelFusion` per kernel and a
`GraphFusion` per graph (ops before fusion against kernels after, externs, the flow): manifest.json's "fusion".

Pure: frozen dataclasses out, their `to_json()` for the manifest. Everything here is read from data Inductor
wrote (graph fragments, kernel comments, launches, provenance artifacts); a reason is given only when that data
shows it, otherwise the field says "unknown".

    kf = kernel_fusion(graph, graph.kernels[0], provenance)   # ops, FX nodes, user lines, loads/stores/reductions
    gf = graph_fusion(graph, provenance)                       # ops before fusion, kernels after, externs, flow
"""

from harvest.fusion.counts import SourceCounts, count_source
from harvest.fusion.graph import GraphFusion, graph_fusion, header_comment
from harvest.fusion.kernel import FusedNode, KernelFusion, kernel_fusion
from harvest.fusion.provenance import SourceLine, parse_stack_trace, source_lines_for
from harvest.kernel_facts import REDUCTION_CALLS

__all__ = [
    "REDUCTION_CALLS", "FusedNode", "GraphFusion", "KernelFusion", "SourceCounts", "SourceLine", "count_source",
    "graph_fusion", "header_comment", "kernel_fusion", "parse_stack_trace", "source_lines_for",
]  # fmt: skip
