"""What fused into what: per-kernel fusion maps and a per-graph fusion summary, from the parsed model.

Pure: takes a parsed `Graph` (plus the provenance artifacts the capture collected for it) and returns frozen
dataclasses whose `to_json()` goes into manifest.json under "fusion". Everything here is read from data Inductor
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
