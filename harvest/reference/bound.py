"""What a kernel's reference is bound to: the fragment node each kernel parameter holds, and how a parameter holds
a reduction in parts. Data only: binding.py, split.py, recorded.py, welford.py and totals.py fill a FragmentBinding;
build.py writes the reference from it."""

from __future__ import annotations

from dataclasses import dataclass, field

from harvest.model import FxExpr, TensorMeta


@dataclass(frozen=True)
class SplitReduction:
    reduce: str  # "sum" | "amax" | "amin" | "any"
    dims: tuple[int, ...]  # the partial buffer's split dimensions
    terms: int | None = None  # how many values the whole reduction combines (stage 1; sets the sum's tolerance)
    scale: int | FxExpr | None = None  # a mean or variance from partial sums: the node is the combined partials / scale
    part: int | None = None  # "welford": which of the three this buffer holds (0 mean, 1 m2, 2 weight) ...
    of: tuple[str, ...] = ()  # ... and the parameters holding the mean, m2 and weight partials, which combine together
    rows: int | None = None  # a mix-order reduction's workspace: flat, read as rows of this length before combining,
    blocks: int = 1  # in this many blocks of rows, one per column reduction it holds (their results stacked)
    middle: bool = False  # "welford": a middle stage, which combines partials it reads into fewer chunks


@dataclass
class FragmentBinding:
    inputs: dict[str, str] = field(default_factory=dict)  # fragment name -> kernel param
    input_meta: dict[str, TensorMeta | None] = field(default_factory=dict)  # fragment name -> its placeholder meta
    input_buffers: dict[str, str] = field(default_factory=dict)  # fragment name -> the buffer holding its value (recorded)
    scalar_inputs: set[str] = field(default_factory=set)  # params passed by value (`arg3_1.item()`)
    outputs: dict[str, str] = field(default_factory=dict)  # param -> fragment name
    unchecked: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    partial_outputs: dict[str, SplitReduction] = field(default_factory=dict)  # param -> how it holds outputs[param] in parts
    from_partials: dict[str, tuple[str, SplitReduction]] = field(default_factory=dict)  # node -> (partial input, split)
    scratch: set[str] = field(default_factory=set)  # Inductor's workspaces: written, but no value of the graph
    unread: dict[str, TensorMeta] = field(default_factory=dict)  # inputs the kernel never reads: zeros of this layout
    exact: bool = False  # bound from the recorded graph, not by heuristics: an output may equal an input (a copy)
