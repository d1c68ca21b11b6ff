"""One graph's fusion flow (manifest "fusion"/"flow") drawn as an SVG for report.html: its kernels, extern calls,
inputs and outputs as boxes, the buffers between them as arrows.

    svg = fusion_svg(graph["fusion"]["flow"], display_names, link=lambda name: f"#kernel-{name}")

The layout is computed here, with no Graphviz and no script in the page: a node sits one layer below the deepest
node that feeds it (an edge back to an earlier layer is drawn, never followed); an edge across layers takes a place
in each layer it passes, so it runs between the boxes; each layer is ordered by the mean position of what feeds it. Pure and deterministic: the same flow gives the same bytes.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass

from harvest.text_output import clipped

CHAR_WIDTH = 6.6  # of the 11px monospace font the boxes use
LINE_HEIGHT = 15
PADDING = 8
GAP_X = 24
GAP_Y = 54
MARGIN = 10
DUMMY_WIDTH = 6  # the room an edge takes in a layer it passes
WRAP = 46  # characters per line inside a box
OPS_PER_LINE = 4
SOURCE_LINES = 3  # lines of source places in a box at most


@dataclass(frozen=True)
class Box:
    """A node as drawn: its place, size, text lines (the first is its title) and kind."""

    node_id: str
    kind: str
    x: float
    y: float
    width: float
    height: float
    lines: tuple[str, ...]
    layer: int = 0
    kernel: str = ""  # the Inductor name of a kernel node, for its link


def wrapped(text: str, width: int = WRAP) -> list[str]:
    """text cut after its commas into lines of at most width characters (a longer item stays whole)."""
    lines: list[str] = []
    for item in text.split(", "):
        if lines and len(lines[-1]) + 2 + len(item) <= width:
            lines[-1] += ", " + item
        else:
            if lines:
                lines[-1] += ","
            lines.append(item)
    return lines


def node_lines(node: dict, display: dict[str, str]) -> tuple[str, ...]:
    """The text of one node's box: its name, then (a kernel) its Inductor name, ops and up to SOURCE_LINES source
    lines (the kernel's section of the page has them all)."""
    name = display.get(node["name"], node["name"])
    places = wrapped(", ".join(node.get("lines") or []))
    if len(places) > SOURCE_LINES:
        left = len(node["lines"]) - sum(line.count(", ") + 1 for line in places[: SOURCE_LINES - 1])
        places = places[: SOURCE_LINES - 1] + [f"and {left} more" + (" line" if left == 1 else " lines")]
    if node["kind"] == "kernel":
        lines = [clipped(name, WRAP)] + ([clipped(node["name"], WRAP)] if name != node["name"] else [])
        ops = node.get("ops") or []
        for start in range(0, len(ops), OPS_PER_LINE):
            lines += wrapped(", ".join(ops[start : start + OPS_PER_LINE]))
        lines += places
    elif node["kind"] == "extern":
        lines = [name, "extern call"] + places
    else:
        lines = [name]
    return tuple(line for line in lines if line)


def node_layers(node_ids: list[str], edges: list[dict]) -> dict[str, int]:
    """Each node's layer: 0 for a node nothing feeds, else one more than the deepest node feeding it. Edges are
    followed in node order only (an edge to an earlier node, a cycle, is left out of the layering)."""
    order = {node_id: index for index, node_id in enumerate(node_ids)}
    layer = {node_id: 0 for node_id in node_ids}
    for node_id in node_ids:  # nodes come in the order the graph runs them, so one pass in that order suffices
        for edge in edges:
            src, dst = edge["src"], edge["dst"]
            if dst == node_id and src in order and order[src] < order[dst]:
                layer[dst] = max(layer[dst], layer[src] + 1)
    others = [layer[n] for n in node_ids if n != "out"]
    if "out" in layer and others:  # the graph's outputs sit below everything
        layer["out"] = max(others) + 1
    return layer


@dataclass(frozen=True)
class Layout:
    """Where everything goes: the boxes, the bends of each edge that passes layers (edge index -> one (x, top,
    bottom) per layer it passes, a vertical run through that layer's band), the stubs, and the drawing's size."""

    boxes: tuple[Box, ...]
    bends: dict[int, tuple[tuple[float, float, float], ...]]
    stubs: frozenset[int]  # edges from the graph's inputs or to its outputs across layers: drawn short
    width: float
    height: float


def layout(flow: dict, display: dict[str, str]) -> Layout:
    """The layered layout of a flow. An edge across several layers gets a point in each layer it passes (a dummy
    node, DUMMY_WIDTH wide, ordered with the boxes), so it runs between them instead of through them; edges from the
    graph's inputs or to its outputs across layers are drawn as short stubs instead."""
    nodes = flow.get("nodes") or []
    ids = [node["id"] for node in nodes]
    by_id = {node["id"]: node for node in nodes}
    edges = [e for e in flow.get("edges") or [] if e["src"] in by_id and e["dst"] in by_id]
    layer = node_layers(ids, edges)
    stubs = frozenset(i for i, e in enumerate(edges) if layer[e["dst"]] - layer[e["src"]] > 1
                      and (by_id[e["src"]]["kind"] == "input" or by_id[e["dst"]]["kind"] == "output"))
    rows: dict[int, list[tuple]] = {}  # layer -> its items: ("node", id) or ("bend", edge index)
    for node_id in ids:
        rows.setdefault(layer[node_id], []).append(("node", node_id))
    feeds: dict[tuple, list[tuple]] = {}  # item -> the items one layer up feeding it
    for index, edge in enumerate(edges):
        low, high = layer[edge["src"]], layer[edge["dst"]]
        if high <= low or index in stubs:
            continue
        previous = ("node", edge["src"])
        for depth in range(low + 1, high):
            bend = ("bend", index, depth)
            rows[depth].append(bend)
            feeds.setdefault(bend, []).append(previous)
            previous = bend
        feeds.setdefault(("node", edge["dst"]), []).append(previous)
    position: dict[tuple, float] = {}
    for depth in sorted(rows):
        first = {item: float(index) for index, item in enumerate(rows[depth])}

        def mean_feeding(item: tuple, first: dict = first) -> float:
            places = [position[f] for f in feeds.get(item, []) if f in position]
            return sum(places) / len(places) if places else first[item]

        rows[depth].sort(key=lambda item: (mean_feeding(item), first[item]))
        for index, item in enumerate(rows[depth]):
            position[item] = float(index)
    sizes: dict[tuple, tuple[float, float, tuple[str, ...]]] = {}
    for row in rows.values():
        for item in row:
            if item[0] == "node":
                lines = node_lines(by_id[item[1]], display)
                sizes[item] = (max(len(line) for line in lines) * CHAR_WIDTH + 2 * PADDING, len(lines) * LINE_HEIGHT + 2 * PADDING, lines)
            else:
                sizes[item] = (DUMMY_WIDTH, 0.0, ())
    row_widths = {d: sum(sizes[item][0] for item in row) + GAP_X * (len(row) - 1) for d, row in rows.items()}
    width = max(row_widths.values(), default=0) + 2 * MARGIN
    boxes, bends, y = [], {}, float(MARGIN)
    for depth in sorted(rows):
        x = MARGIN + (width - 2 * MARGIN - row_widths[depth]) / 2
        band = max(sizes[item][1] for item in rows[depth])
        for item in rows[depth]:
            w, h, lines = sizes[item]
            if item[0] == "node":
                node = by_id[item[1]]
                boxes.append(Box(item[1], node["kind"], round(x, 1), round(y, 1), round(w, 1), h, lines, depth,
                                 node["name"] if node["kind"] == "kernel" else ""))
            else:
                bends.setdefault(item[1], []).append((round(x + w / 2, 1), round(y, 1), round(y + band, 1)))
            x += w + GAP_X
        y += band + GAP_Y
    return Layout(tuple(boxes), {i: tuple(points) for i, points in bends.items()}, stubs, round(width, 1), round(y - GAP_Y + MARGIN, 1))


def edge_path(src: Box, dst: Box, bends: tuple[tuple[float, float, float], ...] = ()) -> str:
    """A curve from the bottom of src to the top of dst, through the layers it passes at its bends (vertical runs);
    one going back up leaves src's right side for dst's."""
    x1, y1 = src.x + src.width / 2, src.y + src.height
    x2, y2 = dst.x + dst.width / 2, dst.y
    if y2 <= y1:
        x1, y1 = src.x + src.width, src.y + src.height / 2
        x2, y2 = dst.x + dst.width, dst.y + dst.height / 2
        bend = max(src.width, dst.width) / 2 + GAP_X
        return f"M{x1:.1f},{y1:.1f} C{x1 + bend:.1f},{y1:.1f} {x2 + bend:.1f},{y2:.1f} {x2:.1f},{y2:.1f}"
    path, x, y = f"M{x1:.1f},{y1:.1f}", x1, y1
    for bx, top, bottom in bends:
        middle = (y + top) / 2
        path += f" C{x:.1f},{middle:.1f} {bx:.1f},{middle:.1f} {bx:.1f},{top:.1f} L{bx:.1f},{bottom:.1f}"
        x, y = bx, bottom
    middle = (y + y2) / 2
    return path + f" C{x:.1f},{middle:.1f} {x2:.1f},{middle:.1f} {x2:.1f},{y2:.1f}"


def stub(src: Box, dst: Box, label: str, buffers: str) -> str:
    """A short arrow into dst from the graph's inputs, or out of src to its outputs, with what it carries: drawn
    whole, such edges would cross every layer in between."""
    step = GAP_Y / 2 - 4
    if src.kind == "input":
        x, y = dst.x + dst.width / 2, dst.y
        path, text, where = f"M{x:.1f},{y - step:.1f} L{x:.1f},{y:.1f}", f"inputs: {label}", y - step - 2
    else:
        x, y = src.x + src.width / 2, src.y + src.height
        path, text, where = f"M{x:.1f},{y:.1f} L{x:.1f},{y + step:.1f}", f"outputs: {label}", y + step + 10
    return (f'<g class="edge stub"><title>{html.escape(buffers)}</title><path d="{path}" marker-end="url(#arrow)"/>'
            f'<text x="{x:.1f}" y="{where:.1f}" class="edge-label">{html.escape(text)}</text></g>')


def fusion_svg(flow: dict, display: dict[str, str], link: Callable[[str], str] | None = None) -> str:
    """The SVG text of one fusion flow. display maps Inductor's kernel names to the modules' names; link, when given,
    makes each kernel box a link (to its section of the page)."""
    drawn = layout(flow, display)
    placed = {box.node_id: box for box in drawn.boxes}
    width, height = drawn.width, drawn.height
    edges = [e for e in flow.get("edges") or [] if e["src"] in placed and e["dst"] in placed]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="fusion" viewBox="0 0 {width} {height}" width="{width}" '
           f'height="{height}" role="img" aria-label="fusion graph">',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
           'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="arrowhead"/></marker></defs>']
    for index, edge in enumerate(edges):
        src, dst = placed[edge["src"]], placed[edge["dst"]]
        bends = drawn.bends.get(index, ())
        buffers = edge.get("buffers") or []
        label = ", ".join(buffers) if len(buffers) <= 2 else f"{len(buffers)} buffers"
        if index in drawn.stubs:  # from the graph's inputs (or to its outputs) across layers: a short arrow, named
            out.append(stub(src, dst, label, ", ".join(buffers)))
            continue
        out.append(f'<g class="edge"><title>{html.escape(", ".join(buffers))}</title>'
                   f'<path d="{edge_path(src, dst, bends)}" marker-end="url(#arrow)"/>')
        if not bends:  # a long edge's buffers are its tooltip only: its label would sit far from both ends
            lx, ly = (src.x + src.width / 2 + dst.x + dst.width / 2) / 2, (src.y + src.height + dst.y) / 2
            out.append(f'<text x="{lx:.1f}" y="{ly + 4:.1f}" class="edge-label">{html.escape(label)}</text>')
        out.append("</g>")
    for box in drawn.boxes:
        body = [f'<rect x="{box.x}" y="{box.y}" width="{box.width}" height="{box.height}" rx="5" class="node {box.kind}"/>']
        for index, line in enumerate(box.lines):
            css = "title" if index == 0 else "detail"
            body.append(f'<text x="{box.x + PADDING:.1f}" y="{box.y + PADDING + (index + 0.8) * LINE_HEIGHT:.1f}" '
                        f'class="{css}">{html.escape(line)}</text>')
        inner = "".join(body)
        if box.kernel and link is not None:
            inner = f'<a href="{html.escape(link(box.kernel))}">{inner}</a>'
        out.append(f'<g class="box" data-node="{html.escape(box.node_id)}">{inner}</g>')
    out.append("</svg>")
    return "\n".join(out)
