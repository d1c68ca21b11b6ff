"""One base error; one subclass per kind of failure, each with its own exit code.

User-facing messages say what was wrong, with the offending value, and what to do. The CLI prints one line
(no traceback unless --debug) and exits with `exit_code`.
"""

from __future__ import annotations


class HarvestError(Exception):
    """Base of every error harvest reports to a user."""

    exit_code = 1
    meaning = ""  # said after the name in --help's exit codes, where the name alone does not say it


class UsageError(HarvestError):
    """Bad command-line input: missing target, wrong file type, unknown option value."""

    exit_code = 2


class TargetError(HarvestError):
    """The target script failed: syntax error, exception, non-zero sys.exit."""

    exit_code = 3


class NoGraphsError(HarvestError):
    """The target ran but torch.compile produced no Inductor graph."""

    exit_code = 4


class TimeoutError_(HarvestError):
    """The target ran past --timeout."""

    exit_code = 5


class ParseError(HarvestError):
    """An output_code.py (or debug dir / trace log) that harvest cannot read."""

    exit_code = 6


class OutputError(HarvestError):
    """The output directory cannot be written, or holds files harvest will not overwrite."""

    exit_code = 7


class GateError(HarvestError):
    """A `harvest diff` gate (--max-kernels, --fail-on-unfuse) was violated."""

    exit_code = 8


class NoDeviceError(HarvestError):
    """Needs a GPU, and torch sees no CUDA device: `harvest bench`'s timing, `--ncu run`. The generated modules exit
    with the same code when they need one: a kernel module's --bench, a twin module. A kernel module's --check runs
    on the CPU (TRITON_INTERPRET=1)."""

    exit_code = 9
    meaning = "needs a GPU"


class ToolchainError(HarvestError):
    """A compiler harvest needs (nvcc, ptxas, Triton's NVIDIA backend) is missing, or rejected its input."""

    exit_code = 10


class NoTritonKernelsError(HarvestError):
    """The capture holds Inductor graphs but no Triton kernel: Inductor's C++ CPU backend compiled them (a
    TORCH_TRACE log or debug dir made on a CPU without harvest)."""

    exit_code = 11


class SwapError(HarvestError):
    """`harvest run --with`: an edited module cannot take its kernel's place (no edit, Inductor now writes another
    kernel there, a parameter that no longer maps, an edit that does not compile)."""

    exit_code = 12
    meaning = "an edit cannot replace its kernel"


class ResultsDiffer(HarvestError):
    """`harvest run --with`: the model's outputs with the edited kernels differ from its outputs with Inductor's."""

    exit_code = 13
    meaning = "the model's results differ"


class Interrupted(HarvestError):
    """Ctrl-C (SIGINT): the target was stopped; what was captured before it is kept and said so."""

    exit_code = 130  # 128 + SIGINT, as a shell reports it


# The kinds defined above, each with its own code; an error class defined elsewhere (RenderError, TemplateNotFound)
# exits 1. Taken once, here: --help must not list more kinds when more of harvest happens to be imported.
DOCUMENTED = tuple(HarvestError.__subclasses__())
EXIT_CODES = {cls.__name__.rstrip("_"): cls.exit_code for cls in DOCUMENTED}


def exit_codes_text() -> str:
    """The codes as --help lists them: "2 UsageError, ..., 9 NoDeviceError (needs a GPU), ..."."""
    return ", ".join(f"{cls.exit_code} {cls.__name__.rstrip('_')}" + (f" ({cls.meaning})" if cls.meaning else "")
                     for cls in DOCUMENTED)
