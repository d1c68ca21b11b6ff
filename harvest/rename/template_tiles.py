"""A matmul template's tile sizes out of its body and into its parameters, so that CONFIG holds them.

Inductor writes a template's config (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M) as constants at the top of the kernel body
(`BLOCK_M : tl.constexpr = 64`) and launches it on a grid computed from them (`cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)`
programs). Written that way a tile size is not an edit of the config: the grid and `EVEN_K` would still say the old
one. `lift_tiles` makes each tile size a constexpr parameter and `EVEN_K` a constexpr expression of `BLOCK_K` (the
template sets it to whether K divides into whole K-tiles), and gives the tile grid as an expression of the config.
Pure: kernel text in, kernel text out (or None when the kernel is not a template harvest can read so).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
import libcst.matchers as m

TILES = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")  # the template config's sizes, in CONFIG's order
SIZES = ("M", "N", "K")


@dataclass(frozen=True)
class LiftedTiles:
    code: str  # the kernel with the tile sizes as constexpr parameters
    tiles: dict[str, int]  # their values as the template was compiled: BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M
    sizes: dict[str, int]  # the matmul's M, N and K, as the body fixes them
    a_param: str  # the parameter the template reads as its A operand (`A = arg_A`): its dtype is the matmul's
    batch: int = 1  # a batched matmul's (bmm's) matrices: the grid's second axis, one program row per matrix

    def tile_programs(self, tiles: dict[str, int]) -> int:
        """Programs of the tile grid for these tile sizes: one per BLOCK_M x BLOCK_N tile of the output."""
        return -(-self.sizes["M"] // tiles["BLOCK_M"]) * -(-self.sizes["N"] // tiles["BLOCK_N"])

    def grid_text(self) -> str:
        """The same as launch() writes it, on the config."""
        return (f'triton.cdiv({self.sizes["M"]}, config["BLOCK_M"]) * '
                f'triton.cdiv({self.sizes["N"]}, config["BLOCK_N"])')


_TILE = m.AnnAssign(
    target=m.Name(m.MatchIfTrue(lambda name: name in TILES)),
    annotation=m.Annotation(m.Attribute(value=m.Name("tl"), attr=m.Name("constexpr"))),
    value=m.Integer(),
)
_EVEN_K = m.AnnAssign(target=m.Name("EVEN_K"), value=m.Name("True") | m.Name("False"))
_SIZE = m.Assign(targets=[m.AssignTarget(target=m.Name(m.MatchIfTrue(lambda name: name in SIZES)))], value=m.Integer())


def _statements(fn: cst.FunctionDef) -> list[cst.BaseSmallStatement]:
    """The small statements at the top level of the function's body."""
    return [small for line in fn.body.body if isinstance(line, cst.SimpleStatementLine) for small in line.body]


class _Lift(cst.CSTTransformer):
    """Tile constants out of the kernel's body and into its parameters; EVEN_K computed from BLOCK_K and K."""

    def __init__(self, kernel_name: str, tiles: dict[str, int], k: int) -> None:
        self.kernel_name = kernel_name
        self.tiles = tiles
        self.k = k
        self.depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.depth += 1
        return self.depth == 1 and node.name.value == self.kernel_name

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        self.depth -= 1
        if original.name.value != self.kernel_name:
            return updated
        constexpr = cst.Annotation(cst.Attribute(value=cst.Name("tl"), attr=cst.Name("constexpr")))
        added = [cst.Param(cst.Name(tile), annotation=constexpr) for tile in self.tiles]
        params = list(updated.params.params)
        if params:  # the tile sizes on a line of their own, below the kernel's own parameters
            newline = cst.ParenthesizedWhitespace(last_line=cst.SimpleWhitespace(" " * 8))
            params[-1] = params[-1].with_changes(comma=cst.Comma(whitespace_after=newline))
        return updated.with_changes(params=updated.params.with_changes(params=[*params, *added]))

    def leave_SimpleStatementLine(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.RemovalSentinel:
        if self.depth != 1:
            return updated
        if len(updated.body) == 1 and m.matches(updated.body[0], _TILE):
            return cst.RemoveFromParent()
        if len(updated.body) == 1 and m.matches(updated.body[0], _EVEN_K):
            even = cst.parse_expression(f"{self.k} % BLOCK_K == 0")
            return updated.with_changes(body=[cst.ensure_type(updated.body[0], cst.AnnAssign).with_changes(value=even)])
        return updated


def lift_tiles(code: str, kernel_name: str) -> LiftedTiles | None:
    """The template kernel `kernel_name` in `code` with its tile sizes lifted into parameters, or None when its body
    does not fix all four tile sizes and M, N and K as integers (a persistent or TMA template, dynamic shapes)."""
    try:
        module = cst.parse_module(code)
    except cst.ParserSyntaxError:
        return None
    fn = next((s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == kernel_name), None)
    if fn is None or any(p.name.value in TILES for p in fn.params.params):
        return None
    statements = _statements(fn)
    tiles = {cst.ensure_type(s, cst.AnnAssign).target.value: int(cst.ensure_type(s, cst.AnnAssign).value.value)  # type: ignore[attr-defined]
             for s in statements if m.matches(s, _TILE)}
    sizes = {cst.ensure_type(s.targets[0].target, cst.Name).value: int(cst.ensure_type(s.value, cst.Integer).value)
             for s in statements if isinstance(s, cst.Assign) and m.matches(s, _SIZE)}
    operand = next((cst.ensure_type(s.value, cst.Name).value for s in statements
                    if m.matches(s, m.Assign(targets=[m.AssignTarget(m.Name("A"))], value=m.Name()))), "")
    if set(tiles) != set(TILES) or set(sizes) != set(SIZES) or not operand:
        return None
    ordered = {tile: tiles[tile] for tile in TILES}
    lifted = module.visit(_Lift(kernel_name, ordered, sizes["K"]))
    return LiftedTiles(lifted.code, ordered, sizes, operand)
