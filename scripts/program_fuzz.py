"""Fuzz the whole pipeline: random torch programs -> `harvest extract` -> every kernel module's --check vs the record.

    TRITON_INTERPRET=1 python scripts/program_fuzz.py --programs 1000 --seed 0 [--batch 50]

Programs mix pointwise chains, reductions (sum/mean/amax/amin/var/std/softmax/log_softmax/layer norm, over last and
non-last dims, keepdim or not), broadcasting ((a,1)+(1,b), (b,)+(a,b)), views (transpose, permute, reshape, expand,
strided slices, non-contiguous inputs), mixed dtypes (fp32/fp16/bf16/int32/bool inputs, casts, comparisons, where)
and dropout (Philox: its kernels must replay the run's random bits from the recorded seeds).

A batch of programs is ONE generated target script (one function per program, each torch.compile'd and called once),
so Inductor's and harvest's start-up is paid once per batch. The target is extracted with the real CLI
(`python -m harvest extract`); then every kernel module is imported and its own `check("cpu")` runs (what
`--check` runs), in this process. A kernel passes when each output it writes matches the record bit for bit and the
eager reference agrees; a record mismatch is a finding. Prints a line per batch and a summary line.
tests/test_program_fuzz.py runs one batch of 100 programs in CI.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported (the modules' checks run here)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from harvest.bench.child import load_kernel_module  # noqa: E402  (a module bound to its extraction's harness.py)

CATEGORIES = ("pointwise", "reduction", "broadcast", "view", "dtype", "dropout")

# ---------------------------------------------------------------------------------------------------------------------
# Random programs
#
# A program is built step by step on example tensors: each step is a template filled with existing values, evaluated
# eagerly, and kept only when it runs (so every program is valid torch, and shapes/dtypes never need to be modelled).

BASE_SHAPES = ((4, 8), (8, 5), (3, 33), (16, 16), (2, 3, 8), (4, 6, 5), (6, 64), (2, 1024))
INPUT_DTYPES = ("float32",) * 5 + ("float16", "bfloat16", "int32", "bool")
FLOAT_DTYPES = ("float32", "float16", "bfloat16")

UNARY = (
    "torch.exp(torch.clamp({a}, -5, 5))", "torch.log(torch.abs({a}) + 1)", "torch.sqrt(torch.abs({a}))",
    "torch.rsqrt(torch.abs({a}) + 1)", "torch.tanh({a})", "torch.sigmoid({a})", "torch.relu({a})", "F.gelu({a})",
    "torch.sin({a})", "torch.abs({a})", "-{a}", "{a} * {a}", "torch.erf({a})", "F.silu({a})", "{a} * 0.5 + 1",
)
BINARY = (
    "{a} + {b}", "{a} * {b}", "{a} - {b}", "{a} / (torch.abs({b}) + 1)", "torch.maximum({a}, {b})",
    "torch.minimum({a}, {b})",
)
REDUCE = (
    "{a}.sum(dim={d}, keepdim={k})", "{a}.mean(dim={d}, keepdim={k})", "{a}.amax(dim={d}, keepdim={k})",
    "{a}.amin(dim={d}, keepdim={k})", "{a}.var(dim={d}, correction=0, keepdim={k})", "{a}.std(dim={d}, keepdim={k})",
    "torch.softmax({a}, dim={d})", "torch.log_softmax({a}, dim={d})", "{a}.argmax(dim={d}, keepdim={k})",
    "({a} - {a}.mean(dim={d}, keepdim=True)) * torch.rsqrt({a}.var(dim={d}, correction=0, keepdim=True) + 1e-5)",
    "F.layer_norm({a}, {a}.shape[-1:])", "{a}.sum()", "{a}.amax()", "torch.logsumexp({a}, dim={d})",
)
VIEW = (
    "{a}.transpose(0, -1)", "{a}.t()", "{a}.permute({perm})", "{a}.reshape(-1)", "{a}.reshape({reshape})",
    "{a}.unsqueeze({u}).expand({expand})", "{a}[..., ::2]", "{a}[1:]", "{a}[::2]", "{a}[..., 1::3]",
    "{a}.flip(0)", "{a}.transpose(0, -1).contiguous()", "{a}.narrow(-1, 1, {narrow})", "{a}.unsqueeze(-1)",
    "{a}.unsqueeze(0)",
)
BROADCAST = (
    "{a} + {a}.sum(dim={d}, keepdim=True)", "{a} * {b}.unsqueeze({u})", "{a}.unsqueeze(-1) + {b}.unsqueeze(0)",
    "{a}[..., :1] * {b}", "{a} - {a}.amax(dim={d}, keepdim=True)", "{a} + {b}[..., None]", "{a} * {b}[0]",
)
DTYPE = (
    "{a}.to(torch.float16)", "{a}.to(torch.bfloat16)", "{a}.to(torch.float32)", "({a} * 4).to(torch.int32)",
    "{a} > {b}", "{a} <= 0", "{a} == {b}", "torch.where({a} > 0, {a}, {b})", "torch.where({c}, {a}, {b})",
    "({a} > 0) & ({b} < 0)", "~({a} > 0)", "{a}.to(torch.int32) + {b}.to(torch.int32)", "{a}.masked_fill({a} > 1, 0)",
    "{a}.to(torch.bool)", "{a} + {b}.to(torch.float16)", "{a}.to(torch.bfloat16) * {b}.to(torch.float16)",
    "{a}.to(torch.int32) * 3 - 1", "({a} + 1).float().sum(dim={d})",
)
DROPOUT = (
    "F.dropout({a}, p={p}, training=True)", "F.dropout({a}.float(), p={p}, training=True).to({a}.dtype)",
    "{a} * torch.rand_like({a}.float())", "F.dropout({a}, p={p}, training=True).sum(dim={d})",
)
TEMPLATES = {"pointwise": UNARY + BINARY, "reduction": REDUCE, "view": VIEW, "broadcast": BROADCAST,
             "dtype": DTYPE, "dropout": DROPOUT}
WEIGHTS = {"pointwise": 4, "reduction": 3, "view": 3, "broadcast": 2, "dtype": 3, "dropout": 1}
MAX_NUMEL = 1 << 15


@dataclass(frozen=True)
class InputSpec:
    shape: tuple[int, ...]
    dtype: str
    layout: str  # contiguous | transposed (a .t() of its transpose) | strided (every other column of a wider tensor)

    def make(self) -> torch.Tensor:
        """The input, from the global RNG (the target seeds it per program): the same code runs in the target."""
        return make_input(self.shape, self.dtype, self.layout)


# Written into each target as text (not read back with inspect: a file edited during a run would shift its lines).
MAKE_INPUT_SOURCE = '''\
def make_input(shape, dtype, layout):
    """One program input, from the global RNG (seeded per program)."""
    full = list(shape)
    if layout == "transposed":
        full[-1], full[0] = full[0], full[-1]
    elif layout == "strided":
        full[-1] *= 2
    if dtype == "bool":
        x = torch.rand(full) < 0.5
    elif dtype == "int32":
        x = torch.randint(-8, 8, full, dtype=torch.int32)
    else:
        x = torch.randn(full).to(getattr(torch, dtype))
    if layout == "transposed":
        return x.transpose(0, -1)
    if layout == "strided":
        return x[..., ::2]
    return x
'''
_namespace: dict = {"torch": torch}
exec(MAKE_INPUT_SOURCE, _namespace)  # noqa: S102 (the generator builds its example inputs with the same function)
make_input = _namespace["make_input"]


@dataclass
class Program:
    name: str
    params: list[str]
    inputs: list[InputSpec]
    lines: list[str]  # `v3 = <expr>`, one per step
    line_categories: list[frozenset[str]]
    outputs: list[str]

    @property
    def categories(self) -> frozenset[str]:
        return frozenset().union(*self.line_categories) if self.line_categories else frozenset()

    @property
    def source(self) -> str:
        body = "".join(f"    {line}\n" for line in self.lines)
        return f"def {self.name}({', '.join(self.params)}):\n{body}    return {', '.join(self.outputs)}\n"


def _fill(template: str, rng: random.Random, values: dict[str, torch.Tensor], floats_only: bool) -> str:
    """The template with {a}/{b}/{c} as values (a: float for float-only templates, c: bool) and its other holes."""
    names = list(values)
    floats = [n for n in names if values[n].dtype.is_floating_point]
    bools = [n for n in names if values[n].dtype == torch.bool]
    pool = floats if floats_only and floats else names
    a = pool[-1] if rng.random() < 0.5 else rng.choice(pool)  # the newest value half the time: chains, not fans
    rank = values[a].dim()
    dims = list(range(max(rank, 1)))
    perm = list(range(rank))
    rng.shuffle(perm)
    shape = list(values[a].shape)
    u = rng.randint(0, rank)
    expand = shape[:u] + [rng.choice((2, 3))] + shape[u:]
    reshape = [-1, shape[-1]] if rank > 2 else ([shape[0] * shape[1] // 2, 2] if rank == 2 and shape[0] * shape[1] % 2 == 0
                                                else [-1])
    return template.format(
        a=a, b=rng.choice(names), c=rng.choice(bools) if bools else f"({rng.choice(names)} > 0)",
        d=rng.choice(dims + [-1]), k=rng.choice((True, False)), p=rng.choice((0.1, 0.25, 0.5)),
        perm=", ".join(map(str, perm)) or "()", reshape=", ".join(map(str, reshape)), u=u,
        expand=", ".join(map(str, expand)), narrow=max(1, (shape[-1] if shape else 1) - 2),
    )


def _float_only(template: str) -> bool:
    return template in UNARY or template in REDUCE or template in DROPOUT or "mean" in template or "amax" in template


def _categories(group: str, expr: str, operands: list[torch.Tensor], result: torch.Tensor) -> set[str]:
    """What a step exercises: its group, plus broadcasting and dtype mixing wherever they happen."""
    found = {group}
    if any(t.shape != result.shape and t.dim() and t.numel() > 1 for t in operands) and group in (
            "pointwise", "broadcast", "dtype"):
        found.add("broadcast")
    if len({t.dtype for t in operands} | {result.dtype}) > 1:
        found.add("dtype")
    if any(not t.is_contiguous() for t in operands):
        found.add("view")
    return found


def make_program(rng: random.Random, name: str, max_steps: int = 6) -> Program:
    """A random valid program: every step ran eagerly on example inputs before it was kept."""
    base = rng.choice(BASE_SHAPES)
    rank = len(base)
    specs = []
    for i in range(rng.choice((1, 2, 2, 3))):
        kind = "full" if i == 0 else rng.choice(("full", "full", "col", "row", "last", "scalar"))
        shape = {"full": base, "col": base[:-1] + (1,), "row": (1,) * (rank - 1) + base[-1:], "last": base[-1:],
                 "scalar": (1,)}[kind]
        dtype = rng.choice(INPUT_DTYPES) if i else rng.choice(("float32", "float32", "float16", "bfloat16"))
        layout = rng.choice(("contiguous",) * 4 + ("transposed", "strided")) if len(shape) >= 2 and shape[-1] > 1 \
            else "contiguous"
        specs.append(InputSpec(shape, dtype, layout))
    params = [f"x{i}" for i in range(len(specs))]
    gen_state = torch.random.get_rng_state()
    torch.manual_seed(rng.randrange(1 << 30))
    values = {p: s.make() for p, s in zip(params, specs)}
    torch.random.set_rng_state(gen_state)
    lines: list[str] = []
    line_categories: list[frozenset[str]] = []
    namespace = {"torch": torch, "F": F}
    steps = rng.randint(1, max_steps)
    while len(lines) < steps:
        for _attempt in range(20):
            group = rng.choices(list(WEIGHTS), weights=list(WEIGHTS.values()))[0]
            template = rng.choice(TEMPLATES[group])
            expr = _fill(template, rng, values, _float_only(template))
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    result = eval(expr, namespace, dict(values))  # noqa: S307 (our own template)
            except Exception:
                continue
            if not isinstance(result, torch.Tensor) or result.numel() == 0 or result.numel() > MAX_NUMEL:
                continue
            operands = [values[n] for n in re.findall(r"\b[xv]\d+\b", expr)]
            target = f"v{len(lines)}"
            lines.append(f"{target} = {expr}")
            line_categories.append(frozenset(_categories(group, expr, operands, result)))
            values[target] = result
            break
        else:
            break
    # Every value no later step reads is returned: nothing is dead code, so every step reaches a kernel.
    computed = [f"v{i}" for i in range(len(lines))]
    used = {n for line in lines for n in re.findall(r"\bv\d+\b", line.split(" = ", 1)[1])}
    outputs = [v for v in computed if v not in used] or params[:1]
    return Program(name, params, specs, lines, line_categories, outputs)


def make_programs(count: int, seed: int, start: int = 0, max_steps: int = 6) -> list[Program]:
    """Programs start..start+count-1 of the stream for `seed` (the same programs whatever the batching)."""
    programs = []
    for index in range(start, start + count):
        programs.append(make_program(random.Random(f"{seed}:{index}"), f"p{index}", max_steps))
    return programs


# ---------------------------------------------------------------------------------------------------------------------
# The target: one script compiles and runs every program of a batch


TARGET_HEADER = '''"""Generated by scripts/program_fuzz.py: random programs, each torch.compile'd and run once (seeded per program)."""
import sys

import torch
import torch.nn.functional as F


{make_input}

'''


def target_source(programs: Sequence[Program]) -> tuple[str, dict[tuple[str, int], frozenset[str]]]:
    """The target script, and each program line's categories keyed by (function, line number)."""
    text = TARGET_HEADER.format(make_input=MAKE_INPUT_SOURCE.rstrip())
    where: dict[tuple[str, int], frozenset[str]] = {}
    for program in programs:
        first = text.count("\n") + 2  # the def line is first+... : lines below the def
        text += program.source + "\n\n"
        for offset, categories in enumerate(program.line_categories):
            where[(program.name, first + offset)] = categories
    text += "PROGRAMS = [\n"
    for program in programs:
        specs = ", ".join(f"({s.shape!r}, {s.dtype!r}, {s.layout!r})" for s in program.inputs)
        text += f"    ({program.name}, [{specs}]),\n"
    text += "]\n\n\n"
    text += '''def main():
    failed = 0
    for fn, specs in PROGRAMS:
        torch.manual_seed(int(fn.__name__[1:]))
        inputs = [make_input(*spec) for spec in specs]
        try:
            torch.compile(fn)(*inputs)
        except Exception as exc:  # one program torch cannot compile must not hide the others
            failed += 1
            print(f"COMPILE FAILED {fn.__name__}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    print(f"ran {len(PROGRAMS)} programs, {failed} failed to compile")
    sys.exit(0)


if __name__ == "__main__":
    main()
'''
    compile(text, "<target>", "exec")
    return text, where


# ---------------------------------------------------------------------------------------------------------------------
# Extract, then run every module's check


@dataclass
class KernelResult:
    module: str
    program: str
    kind: str
    categories: frozenset[str]
    record_ok: bool  # every written output matched the record bit for bit
    reference_ok: bool  # the eager reference agreed (within the dtype's tolerance)
    output: str = ""
    precision_cast: bool = False  # the kernel's FX graph casts to fp16/bf16 (see _PRECISION_CAST)


@dataclass
class BatchResult:
    programs: int
    kernels: list[KernelResult] = field(default_factory=list)
    compile_failures: list[str] = field(default_factory=list)
    extract_error: str = ""
    seconds_extract: float = 0.0
    seconds_check: float = 0.0

    @property
    def record_mismatches(self) -> list[KernelResult]:
        return [k for k in self.kernels if not k.record_ok]

    @property
    def reference_mismatches(self) -> list[KernelResult]:
        return [k for k in self.kernels if not k.reference_ok]

    @property
    def unexplained_reference_mismatches(self) -> list[KernelResult]:
        return [k for k in self.reference_mismatches if not k.precision_cast]


def extract(target: Path, out: Path) -> subprocess.CompletedProcess:
    """`python -m harvest extract TARGET -o OUT -q` with this tree's harvest."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=path)
    return subprocess.run([sys.executable, "-m", "harvest", "extract", str(target), "-o", str(out), "-q"],
                          cwd=out.parent, env=env, capture_output=True, text=True)


# Inductor compiles x.to(torch.bfloat16) (or float16) that is then promoted back to float32 (bf16 * fp16, fp16 + fp32)
# as a cast to float32: the rounding to 16 bits is gone, so the kernel (and the compiled program) differ from eager
# by about one 16-bit ulp. The record still matches bit for bit; the eager reference rightly disagrees.
_PRECISION_CAST = re.compile(r"convert_element_type\.default\([^)]*torch\.(bfloat16|float16)\)")
_RECORDED = re.compile(r"^  (\w+): recorded: (ok \(.*\)|.*differ.*)$", re.M)
_REFERENCE = re.compile(r"^  (\w+): reference: (ok \(.*\)|.*differ.*|shape .*)$", re.M)


def check_module(path: Path) -> tuple[bool, bool, str]:
    """Import an extracted module and run its check("cpu"): (record bit for bit, reference agrees, its output)."""
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = load_kernel_module(str(path), f"_fuzz_{path.stem}_{abs(hash(path))}")  # bound to its harness.py
            ok = bool(module.check("cpu"))
    except Exception:
        return False, False, buffer.getvalue() + traceback.format_exc()
    text = buffer.getvalue()
    recorded = _RECORDED.findall(text)
    record_ok = bool(recorded) and all(r.startswith("ok") and "bit for bit" in r for _, r in recorded) \
        and "(recorded inputs)" in text and "NOT COMPARED" not in text
    reference_ok = all(r.startswith("ok") for _, r in _REFERENCE.findall(text))
    return record_ok and (ok or not reference_ok), reference_ok, text


def kernel_categories(kernel: dict, where: dict[tuple[str, int], frozenset[str]]) -> tuple[str, frozenset[str]]:
    """(program, categories) of a manifest kernel: from its source lines, its kind and the ops it fuses."""
    fusion = kernel.get("fusion") or {}
    lines = fusion.get("source_lines") or []
    program = next((line["function"] for line in lines if re.fullmatch(r"p\d+", line.get("function", ""))), "")
    found: set[str] = set()
    for line in lines:
        found |= where.get((line.get("function", ""), line.get("line", 0)), frozenset())
    ops = fusion.get("op_counts") or {}
    if kernel["kind"] != "pointwise":
        found.add("reduction")
    found.discard("dropout")  # a kernel is a dropout kernel when it draws random numbers, not when a line did
    if "inductor_random" in ops:
        found.add("dropout")
    if "reduction" in found and kernel["kind"] == "pointwise" and not {"sum", "amax", "amin", "mean"} & set(ops):
        found.discard("reduction")  # a pointwise epilogue of a reduction's line
    return program, frozenset(found)


def run_batch(programs: Sequence[Program], directory: Path) -> BatchResult:
    """Write the batch's target, extract it, check every kernel module."""
    directory.mkdir(parents=True, exist_ok=True)
    source, where = target_source(programs)
    target = directory / "fuzz_target.py"
    target.write_text(source, encoding="utf-8")
    result = BatchResult(len(programs))
    start = time.perf_counter()
    proc = extract(target, directory / "out")
    result.seconds_extract = time.perf_counter() - start
    result.compile_failures = [line for line in (proc.stdout + proc.stderr).splitlines()
                               if line.startswith("COMPILE FAILED")]
    if proc.returncode != 0:
        result.extract_error = f"harvest extract exit {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        return result
    start = time.perf_counter()
    out = directory / "out"
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    for graph in manifest["graphs"]:
        for kernel in graph["kernels"]:
            program, categories = kernel_categories(kernel, where)
            if kernel.get("standalone_reason"):
                result.kernels.append(KernelResult(kernel["module"] or kernel["name"], program, kernel["kind"],
                                                   categories, False, False, kernel["standalone_reason"]))
                continue
            path = out / kernel["module"]
            record_ok, reference_ok, text = check_module(path)
            cast = bool(_PRECISION_CAST.search(path.read_text(encoding="utf-8")))
            result.kernels.append(KernelResult(kernel["module"], program, kernel["kind"], categories, record_ok,
                                               reference_ok, text, cast))
    result.seconds_check = time.perf_counter() - start
    return result


def tally(kernels: Sequence[KernelResult]) -> Counter[str]:
    """Kernels per category (a kernel counts once in each category it exercises)."""
    return Counter(c for k in kernels for c in k.categories)


# ---------------------------------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--programs", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=50, help="programs per target (one extraction each)")
    parser.add_argument("--start", type=int, default=0, help="first program index (to re-run a part of a long run)")
    parser.add_argument("--max-steps", type=int, default=6, help="steps per program at most")
    parser.add_argument("--keep", metavar="DIR", help="keep every batch's target and extraction under DIR")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    totals: Counter[str] = Counter()
    programs = kernels = passed = mismatches = reference_failures = unexplained = compile_failures = 0
    extract_errors = 0
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="program_fuzz_") as tmp:
        root = Path(args.keep) if args.keep else Path(tmp)
        try:
            for first in range(args.start, args.start + args.programs, args.batch):
                count = min(args.batch, args.start + args.programs - first)
                batch = make_programs(count, args.seed, first, args.max_steps)
                result = run_batch(batch, root / f"batch_{first:05d}")
                programs += count
                kernels += len(result.kernels)
                bad = result.record_mismatches
                mismatches += len(bad)
                passed += sum(k.record_ok for k in result.kernels)
                reference_failures += len(result.reference_mismatches)
                unexplained += len(result.unexplained_reference_mismatches)
                compile_failures += len(result.compile_failures)
                extract_errors += bool(result.extract_error)
                totals += tally(result.kernels)
                print(f"programs {first}-{first + count - 1}: {len(result.kernels)} kernels, {len(bad)} record "
                      f"mismatches, {len(result.reference_mismatches)} reference disagreements "
                      f"({len(result.unexplained_reference_mismatches)} not from a 16-bit cast), "
                      f"{len(result.compile_failures)} compile failures; extract {result.seconds_extract:.0f} s, "
                      f"checks {result.seconds_check:.0f} s; {dict(sorted(tally(result.kernels).items()))}",
                      flush=True)
                if result.extract_error:
                    print(f"  EXTRACT FAILED: {result.extract_error}", flush=True)
                for line in result.compile_failures:
                    print(f"  {line}", flush=True)
                by_name = {p.name: p for p in batch}
                for k in bad + [k for k in result.reference_mismatches if k.record_ok]:
                    if k.record_ok and k.precision_cast:
                        print(f"  reference disagrees (16-bit cast): {k.module} ({k.program})", flush=True)
                        continue
                    what = "RECORD MISMATCH" if not k.record_ok else "reference disagrees"
                    program = by_name.get(k.program)
                    print(f"  {what}: {k.module} ({k.program})\n{k.output.rstrip()}\n"
                          f"{program.source if program else ''}", flush=True)
        except KeyboardInterrupt:
            print("interrupted; figures so far:", flush=True)
    elapsed = time.perf_counter() - start
    print(f"program fuzz: {programs} programs, {kernels} kernels, {passed} checks passed, {mismatches} record "
          f"mismatches, {reference_failures} reference disagreements ({unexplained} not from a 16-bit cast), "
          f"{compile_failures} compile failures, "
          f"{extract_errors} failed extractions; categories (kernels) {dict(sorted(totals.items()))}; "
          f"{elapsed:.0f} s (seed {args.seed})", flush=True)
    return 1 if mismatches or unexplained or extract_errors else 0


if __name__ == "__main__":
    sys.exit(main())
