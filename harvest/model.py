"""The typed model every stage shares: what a captured Inductor module contains.

All classes are frozen dataclasses of plain values (str, int, tuples, dicts of plain values): a model can be
compared with ==, and is never changed after it is built. Some hold dicts, so they are not hashable; the manifest's
JSON is written field by field by the stages (api.py, fusion.py), not with `dataclasses.asdict`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

KernelKind = Literal["pointwise", "reduction", "persistent_reduction", "cooperative_reduction", "split_scan", "template", "foreach", "user", "other"]
GraphRole = Literal["inference", "forward", "backward", "unknown"]


@dataclass(frozen=True)
class TensorMeta:
    """Shape, stride and dtype of a tensor. Sizes are ints, or strings for symbols (`s0`, `ks0`, `2*s0`)."""

    shape: tuple[int | str, ...]
    stride: tuple[int | str, ...]
    dtype: str  # torch dtype name without the module: "float32", "bfloat16", "int64", "bool"
    device: str = ""  # "cuda", "cpu", "" when unknown

    @property
    def is_symbolic(self) -> bool:
        return any(isinstance(s, str) for s in self.shape + self.stride)


@dataclass(frozen=True)
class FxRef:
    """An FX node used as an argument: `%view_1`."""

    name: str  # "view_1"


@dataclass(frozen=True)
class FxExpr:
    """A literal or a size expression used as an argument (`2`, `-inf`, `torch.float32`, `ks0 * 2`), as the Python
    tokens it is written with (`inf`/`nan` already spelled `float("inf")`)."""

    tokens: tuple[str, ...]
    symbols: tuple[str, ...] = ()  # the size symbols among the tokens (s0, ks0), in order of first use

    @property
    def text(self) -> str:
        """Python source: the tokens with one space between them, a leading unary minus attached (`-1`)."""
        if len(self.tokens) > 1 and self.tokens[0] == "-":
            return "-" + " ".join(self.tokens[1:])
        return " ".join(self.tokens)


@dataclass(frozen=True)
class FxDevice:
    """A device argument (`cuda:0`, `cpu`): the reference uses the device of its inputs."""


@dataclass(frozen=True)
class FxList:
    """`[...]` in an argument (a Python tuple `(...)` stays a tuple)."""

    items: tuple[FxValue, ...]


@dataclass(frozen=True)
class FxDict:
    """`{key: value, ...}` inside an argument."""

    items: tuple[tuple[str, FxValue], ...]


# An argument value: a node, an expression, a device, or a list, tuple or dict of them. All hashable.
FxValue = FxRef | FxExpr | FxDevice | FxList | FxDict | tuple


@dataclass(frozen=True)
class FxNode:
    """One line of a kernel's `# Graph fragment:` comment, its arguments read into values.

    `%pow_1 : Tensor "f32[100, 100][100, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.pow.Tensor_Scalar](args = (%arg0_1, 2), kwargs = {})`
    """

    name: str  # "pow_1"
    op: str  # "call_function", "placeholder" (PlaceHolder), "get_attr", "output"
    target: str  # "aten.pow.Tensor_Scalar"; for placeholders the placeholder's name
    args: tuple[FxValue, ...] = ()  # `(FxRef("arg0_1"), FxExpr(("2",)))`
    kwargs: tuple[tuple[str, FxValue], ...] = ()  # `(("dim", FxList((FxExpr(("-1",)),))),)`
    meta: TensorMeta | None = None
    num_users: int | None = None
    args_error: str = ""  # why the argument text could not be read (then args and kwargs are empty)

    @property
    def refs(self) -> tuple[str, ...]:
        """The FX nodes this node reads, in the order its arguments name them."""
        return tuple(fx_refs((self.args, tuple(value for _, value in self.kwargs))))


def fx_refs(value: FxValue) -> list[str]:
    """The FX nodes an argument value names, in order."""
    if isinstance(value, FxRef):
        return [value.name]
    if isinstance(value, (FxList, FxDict)):
        return fx_refs(value.items)
    if isinstance(value, tuple):
        return [name for item in value for name in fx_refs(item)]
    return []


@dataclass(frozen=True)
class KernelComment:
    """The comment block Inductor writes above each kernel definition (empty fields when the torch version lacks them)."""

    source_nodes: tuple[str, ...] = ()  # "Topologically Sorted Source Nodes: [square, square_1]" (2.4: "Source Nodes")
    aten_ops: tuple[str, ...] = ()  # "Original ATen: [aten.pow]"
    node_to_aten: tuple[tuple[str, tuple[str, ...]], ...] = ()  # "square => pow_1" -> ("square", ("pow_1",))
    fragment: tuple[FxNode, ...] = ()  # "# Graph fragment:" lines, in order
    fragment_return: tuple[str, ...] = ()  # names after "return" in the fragment (the kernel's stored nodes)


@dataclass(frozen=True)
class Kernel:
    """One `name = async_compile.triton('name', '''source''', device_str=...)` definition."""

    name: str  # "triton_poi_fused_add_pow_0"
    source: str  # the Triton module source, exactly as Inductor wrote it
    kind: KernelKind
    device_str: str  # "cuda" / "cpu"
    size_hints: dict[str, int] = field(default_factory=dict)  # {"x": 16384, "r0_": 1024}; 2.4 lists become x/y/z
    signature: dict[str, str] = field(default_factory=dict)  # param -> "*fp32" | "i32" | "constexpr"
    constants: dict[str, Any] = field(default_factory=dict)  # triton_meta["constants"]
    configs: tuple[dict[str, Any], ...] = ()  # triton_meta["configs"] with keys as strings "(1,)" for JSON
    inductor_meta: dict[str, Any] = field(default_factory=dict)
    heuristic: str = ""  # decorator name: "pointwise", "reduction", "persistent_reduction", "template", ...
    heuristic_args: dict[str, Any] = field(default_factory=dict)  # other decorator kwargs (reduction_hint, ...)
    comment: KernelComment = field(default_factory=KernelComment)
    standalone_reason: str | None = None  # why it cannot become a standalone module; None when it can
    triton_meta: dict[str, Any] = field(default_factory=dict)  # all of it as written (device, enable_fp_fusion, ...)
    jit_name: str = ""  # the @triton.jit function's own name: a user's kernel keeps it ("" when it is `name`)

    @property
    def params(self) -> tuple[str, ...]:
        """Kernel parameters in order (constexpr block sizes included)."""
        return tuple(self.signature)


@dataclass(frozen=True)
class Buffer:
    """A tensor the wrapper's call() binds to a name: a graph input, an allocation, a view of another buffer, or what
    a library call returned (its layout from the `assert_size_stride` after it, its dtype its first input's)."""

    name: str  # "arg0_1", "primals_1", "buf0"
    meta: TensorMeta
    origin: Literal["input", "empty", "view", "other", "extern"]
    base: str | None = None  # for views: the buffer it reinterprets
    offset: int | str = 0  # for views: storage offset in elements
    input_index: int | None = None  # position in call(args) for inputs


@dataclass(frozen=True)
class LaunchView:
    """The layout a launch passes with `reinterpret_tensor(buf4, (2048, 512), (512, 1), 0)`: sizes are ints, or
    strings for size expressions (`s0`, `64*ks0`)."""

    shape: tuple[int | str, ...]
    stride: tuple[int | str, ...]
    offset: int | str = 0


@dataclass(frozen=True)
class LaunchArg:
    """One argument of a kernel launch, bound to the kernel parameter at the same position."""

    param: str  # kernel parameter name ("in_ptr0", "xnumel")
    expr: str  # the call site's source text ("arg0_1", "buf0", "100000000", "ks0", "s0*s1")
    buffer: str | None = None  # buffer name when expr names (or views) a tensor
    value: int | None = None  # integer value when expr is a literal
    view: LaunchView | None = None  # the layout, when expr is `reinterpret_tensor(buffer, shape, stride[, offset])`
    item_of: str | None = None  # the tensor whose one value expr passes: `arg3_1.item()` -> "arg3_1"


@dataclass(frozen=True)
class Launch:
    """`kernel.run(args..., stream=...)` inside the wrapper's call() (or a graph partition)."""

    kernel: str
    args: tuple[LaunchArg, ...]
    order: int  # position among all launches of the graph
    function: str = "call"  # "call", "Runner.call", "partition_0", ...
    grid: str = ""  # explicit grid text for torch versions that pass it (2.4 `grid=grid(n)`), else ""


@dataclass(frozen=True)
class ExternCall:
    """A call that is not a Triton kernel: `extern_kernels.mm(buf0, arg1_1, out=buf1)`, aten fallbacks, ..."""

    op: str  # "extern_kernels.mm", "aten.convolution.default", "torch.ops.aten.native_dropout.default"
    args: tuple[str, ...]  # source text of each positional argument
    out: str | None  # buffer written (out= or the assigned name)
    order: int  # position among launches and extern calls of the graph
    function: str = "call"


@dataclass(frozen=True)
class Graph:
    """One captured Inductor wrapper module (one output_code.py)."""

    name: str  # stable id within a capture: "g0_inference", "g1_forward", "g2_backward"
    role: GraphRole
    kernels: tuple[Kernel, ...]
    launches: tuple[Launch, ...]
    buffers: dict[str, Buffer]
    inputs: tuple[str, ...]  # call(args) names in order
    outputs: tuple[str, ...]  # names returned by call()
    externs: tuple[ExternCall, ...] = ()
    symbols: tuple[str, ...] = ()  # size symbols the graph binds (s0, ks0, ...)
    aot_id: str = ""  # "0_inference" from the "# AOT ID:" header
    unparsed: tuple[str, ...] = ()  # statements of call() the parser did not understand (kept for the report)
    scalar_values: dict[str, int | float] = field(default_factory=dict)  # get_args() examples: {"arg0_1": 64, "s77": 64}
    symbol_inputs: dict[str, str] = field(default_factory=dict)  # a size symbol -> the scalar input it is: {"s77": "arg0_1"}

    def kernel(self, name: str) -> Kernel:
        for k in self.kernels:
            if k.name == name:
                return k
        raise KeyError(name)

    def launches_of(self, kernel: str) -> tuple[Launch, ...]:
        return tuple(launch for launch in self.launches if launch.kernel == kernel)


@dataclass(frozen=True)
class Provenance:
    """What the torch version told us about where a kernel came from (empty when it told us nothing)."""

    fx_nodes: tuple[str, ...] = ()  # post-grad FX nodes the kernel holds
    pre_grad_nodes: tuple[str, ...] = ()  # pre-grad nodes those came from
    stack_traces: tuple[str, ...] = ()  # user source lines: "examples/model.py:12 in forward: x = self.ln(x)"


@dataclass(frozen=True)
class AutotuneWinner:
    """The config Inductor's autotuner picked for a kernel at run time."""

    kwargs: dict[str, int]  # {"XBLOCK": 1024} / {"XBLOCK": 1, "R0_BLOCK": 512}
    num_warps: int
    num_stages: int
    chosen_by: str = "autotune"  # or "interpreter (runs the first config)" on the CPU path


@dataclass(frozen=True)
class RecordedView:
    """A tensor argument of a recorded launch: a view of one of the launch's storages."""

    storage: int  # index into RecordedLaunch.storages; arguments on one storage alias each other
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int  # storage offset in elements of dtype
    dtype: str  # "float32", "bfloat16", "int64", "bool", ...


@dataclass(frozen=True)
class RecordedStorage:
    """The bytes [lo, hi) of a storage that the launch's tensor arguments view."""

    lo: int
    hi: int
    device: str  # "cuda" / "cpu"
    written: bool | None  # the launch changed these bytes (None when its data was not saved)


@dataclass(frozen=True)
class RecordedArg:
    param: str  # Inductor's parameter name
    view: RecordedView | None = None  # tensors
    value: int | float | bool | None = None  # scalars (None for a tensor or an unknown object)


@dataclass(frozen=True)
class RecordedLaunch:
    """The first launch of a kernel in a graph as it happened in the real run (see harvest.capture.record)."""

    kernel: str
    args: tuple[RecordedArg, ...]
    storages: tuple[RecordedStorage, ...]
    config: AutotuneWinner | None  # the config that ran and what chose it; None when the run could not tell
    grid: tuple[int, ...] | None
    data: str = ""  # record file relative to raw/<graph>/records/, "" when only layouts were recorded
    data_note: str = ""  # why the data was not saved
    launches: int = 1  # launches of this kernel in this graph during the run
    distinct: int = 1  # how many of them differed in argument layouts or scalar values
    checksums: tuple[int, ...] = ()  # when the data was not saved: sum of each storage's bytes after the launch

    def arg(self, param: str) -> RecordedArg | None:
        return next((a for a in self.args if a.param == param), None)


@dataclass(frozen=True)
class CapturedGraph:
    """One wrapper module as the capture child saw it, before parsing."""

    index: int  # order of capture (0, 1, 2...)
    aot_id: str  # "0_inference", "1_forward", "1_backward"; "" when unknown
    compile_id: str  # dynamo compile id "0/0", "1/0"; "" when unknown
    source: str  # output_code.py text (kernel-path comments normalised, see capture)
    provenance: dict[str, Any] = field(default_factory=dict)  # raw provenance artifacts by name
    winners: dict[str, AutotuneWinner] = field(default_factory=dict)  # kernel name -> autotune winner
    recorded: dict[str, RecordedLaunch] = field(default_factory=dict)  # kernel name -> its first launch in the run
    # kernel name -> the FX graph it computes and the buffer behind each argument, as the capture child recorded it
    # while Inductor generated the kernel (plain JSON data: see harvest.capture.kernel_graph); empty for artifacts
    kernel_graphs: dict[str, dict] = field(default_factory=dict)
    # A torchrun job (harvest.capture.ranks): the ranks that compiled this graph identically, where its raw capture
    # is ("rank0/g0_forward", under raw/), and the rank it is named after when not every rank compiled it so.
    ranks: tuple[int, ...] = ()
    raw_name: str = ""
    specific_to: int | None = None

    @property
    def role(self) -> GraphRole:
        for role in ("inference", "forward", "backward"):
            if self.aot_id.endswith(role):
                return role  # type: ignore[return-value]
        return "unknown"

    @property
    def name(self) -> str:
        """Stable directory name: g<index>_<role>, and _rank<r> for a graph of a torchrun job that not every rank
        compiled identically."""
        return f"g{self.index}_{self.role}" + (f"_rank{self.specific_to}" if self.specific_to is not None else "")

    @property
    def raw_dir(self) -> str:
        """Where its output_code.py and records are, under raw/: its name, or its rank's directory in a torchrun job."""
        return self.raw_name or self.name


@dataclass(frozen=True)
class Capture:
    """Everything one run of a target produced."""

    target: str  # as the user gave it
    command: tuple[str, ...]  # argv after the target
    device: str  # "cuda" or "cpu (Triton interpreter, offline target sm_90)"
    torch_version: str
    triton_version: str
    gpu_name: str  # "NVIDIA H200" or ""
    graphs: tuple[CapturedGraph, ...]
    mode: Literal["cuda", "cpu-triton", "artifact"]
    incomplete: str = ""  # why the artifact is cut short (a TORCH_TRACE log cut mid-record), else ""
    ranks: tuple[int, ...] = ()  # a torchrun job's ranks (each one's own capture is in raw/rank<r>/); () for one process
    launcher: tuple[str, ...] = ()  # torchrun's own arguments for a torchrun job ("--standalone", "--nproc-per-node=2")

    @property
    def record_device(self) -> str:
        """Where the run's records were made: "cpu" or "cuda:<GPU name>" (outputs match bit for bit only there)."""
        return f"cuda:{self.gpu_name}" if self.gpu_name else "cpu"
