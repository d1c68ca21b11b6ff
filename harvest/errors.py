"""One base error; one subclass per kind of failure, each with its own exit code.

User-facing messages say what was wrong, with the offending value, and what to do. The CLI prints one line
(no traceback unless --debug) and exits with `exit_code`.
"""

from __future__ import annotations


class HarvestError(Exception):
    """Base of every error harvest reports to a user. A kind of failure is a subclass that names its exit code (and,
    where the name alone does not say it, what the code means in --help): `class X(HarvestError, code=2)`."""

    exit_code = 1
    meaning = ""

    def __init_subclass__(cls, code: int | None = None, meaning: str = "", **rest) -> None:
        super().__init_subclass__(**rest)
        if code is not None:
            cls.exit_code, cls.meaning = code, meaning


class UsageError(HarvestError, code=2):
    """Bad command-line input: missing target, wrong file type, unknown option value."""


class TargetError(HarvestError, code=3):
    """The target script failed: syntax error, exception, non-zero sys.exit."""


class NoGraphsError(HarvestError, code=4):
    """The target ran but torch.compile produced no Inductor graph."""


class TimeoutError_(HarvestError, code=5):
    """The target ran past --timeout."""


class ParseError(HarvestError, code=6):
    """An output_code.py (or debug dir / trace log) that harvest cannot read."""


class OutputError(HarvestError, code=7):
    """The output directory cannot be written, or holds files harvest will not overwrite."""


class GateError(HarvestError, code=8):
    """A `harvest diff` gate (--max-kernels, --fail-on-unfuse) was violated."""


class NoDeviceError(HarvestError, code=9, meaning="needs a GPU"):
    """Needs a GPU, and torch sees no CUDA device: `harvest bench`'s timing, `--ncu run`. The generated modules exit
    with the same code when they need one: a kernel module's --bench, a twin module. A kernel module's --check runs
    on the CPU (TRITON_INTERPRET=1)."""


class ToolchainError(HarvestError, code=10):
    """A compiler harvest needs (nvcc, ptxas, Triton's NVIDIA backend) is missing, or rejected its input."""


class NoTritonKernelsError(HarvestError, code=11):
    """The capture holds Inductor graphs but no Triton kernel: Inductor's C++ CPU backend compiled them (a
    TORCH_TRACE log or debug dir made on a CPU without harvest)."""


class SwapError(HarvestError, code=12, meaning="an edit cannot replace its kernel"):
    """`harvest run --with`: an edited module cannot take its kernel's place (no edit, Inductor now writes another
    kernel there, a parameter that no longer maps, an edit that does not compile)."""


class ResultsDiffer(HarvestError, code=13, meaning="the model's results differ"):
    """`harvest run --with`: the model's outputs with the edited kernels differ from its outputs with Inductor's."""


class Interrupted(HarvestError, code=130):  # 128 + SIGINT, as a shell reports it
    """Ctrl-C (SIGINT): the target was stopped; what was captured before it is kept and said so."""


# The kinds defined above, each with its own code; an error class defined elsewhere (RenderError, TemplateNotFound)
# exits 1. Taken once, here: --help must not list more kinds when more of harvest happens to be imported.
DOCUMENTED = tuple(HarvestError.__subclasses__())
EXIT_CODES = {cls.__name__.rstrip("_"): cls.exit_code for cls in DOCUMENTED}


def exit_codes_text() -> str:
    """The codes as --help lists them: "2 UsageError, ..., 9 NoDeviceError (needs a GPU), ..."."""
    return ", ".join(f"{cls.exit_code} {cls.__name__.rstrip('_')}" + (f" ({cls.meaning})" if cls.meaning else "")
                     for cls in DOCUMENTED)
