"""What every kernel module of this extraction shares: tensors built from ARGUMENTS, made-up inputs, the run's
record, the comparison, --check, --bench and its timing lines, the Inductor helpers its kernels call
(`triton_helpers`: harvest's own versions), and the interpreter's libdevice stand-ins.

Written once per extraction by harvest (hashed in manifest.json); each module imports it relative to its own file:
    sys.path.insert(0, <the extraction directory>); from harness import Tensor, main
It needs torch and triton only. `harvest pack KERNEL` writes one file with the pieces a module uses inlined.
"""

import argparse
import collections
import hashlib
import inspect
import os
import sys
import types

import torch
import triton
import triton.language as tl

HARNESS_VERSION = 1

# >>> harness: Tensor
# One tensor argument of a launch: shape, stride, dtype; `offset` (elements) into the storage it views; `base`, the
# earlier argument whose storage it shares (None: a storage of its own); `zeros`, the kernel only writes it (made-up
# inputs leave it zeroed); `high`, made-up values are whole numbers below it (indices from 0; a Welford combine's
# weights, which are counts, from 1).
Tensor = collections.namedtuple("Tensor", "shape stride dtype offset base zeros high", defaults=(0, None, False, None))
# <<< harness: Tensor


# >>> harness: triton_helpers
# The Inductor helpers this extraction's kernels call as `triton_helpers.NAME(...)`, written by harvest from what
# Inductor defines them to compute (NaN wins max/min, ties keep the lowest index, Welford's combine, online softmax),
# in the same order of operations, so the kernels' results are the same bits. A module imports `triton_helpers`.
@triton.jit
def helper_promote_to_tensor(x):
    # a Python scalar becomes a one-element block; a block keeps its shape and dtype (int1 zeros change neither)
    return x + tl.zeros((1,), tl.int1)


@triton.jit
def helper_is_floating(x):
    return helper_promote_to_tensor(x).dtype.is_floating()


@triton.jit
def helper_maximum(a, b):
    take_a = a > b
    if helper_is_floating(a):
        take_a |= a != a
    return tl.where(take_a, a, b)


@triton.jit
def helper_max2(a, dim):
    return tl.reduce(a, dim, helper_maximum)


triton_helpers = types.ModuleType("triton_helpers", "harvest's versions of the Inductor helpers these kernels call")
triton_helpers.__dict__.update(
    promote_to_tensor=helper_promote_to_tensor, is_floating=helper_is_floating, maximum=helper_maximum,
    max2=helper_max2
)
# <<< harness: triton_helpers

# >>> harness: body
Storage = collections.namedtuple("Storage", "lo hi fill high")  # bytes [lo, hi); fill: made-up values' dtype or None

TOLERANCES = {
    torch.float32: dict(rtol=1e-4, atol=1e-5),
    torch.float16: dict(rtol=1e-3, atol=1e-3),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2),
    torch.float64: dict(rtol=1e-7, atol=1e-7),
}
EXACT = dict(rtol=0, atol=0)


def storages_of(arguments):
    """The storages ARGUMENTS' tensors view, in order of first use: ({argument: storage index}, [Storage])."""
    index_of, spans = {}, []
    for name, arg in arguments.items():
        if not isinstance(arg, Tensor):
            continue
        itemsize = torch.empty(0, dtype=arg.dtype).element_size()
        lo = arg.offset * itemsize
        extent = 0 if 0 in arg.shape else 1 + sum((size - 1) * abs(step) for size, step in zip(arg.shape, arg.stride))
        if arg.base is None:
            index_of[name] = len(spans)
            spans.append([lo, lo + extent * itemsize, None, None])
        else:
            index_of[name] = index_of[arg.base]
        span = spans[index_of[name]]
        span[0], span[1] = min(span[0], lo), max(span[1], lo + extent * itemsize)
        if not arg.zeros and span[2] is None:  # made-up values are drawn as the first view the kernel reads
            span[2], span[3] = arg.dtype, arg.high
    return index_of, [Storage(*span) for span in spans]


def views(arguments, storages, device):
    """ARGUMENTS with every tensor built as its view of `storages` (uint8 tensors, one per storage)."""
    index_of, _ = storages_of(arguments)
    args = {}
    for name, arg in arguments.items():
        if isinstance(arg, Tensor):
            base = storages[index_of[name]].untyped_storage()
            args[name] = torch.empty(0, dtype=arg.dtype, device=device).set_(base, arg.offset, arg.shape, arg.stride)
        else:
            args[name] = arg
    return args


def made_up(storage, generator):
    """Random bytes for one storage, drawn as values of its dtype (so floats are finite, indices in bounds)."""
    if storage.fill is None:
        return torch.zeros(storage.hi, dtype=torch.uint8)
    itemsize = torch.empty(0, dtype=storage.fill).element_size()
    count = -(-storage.hi // itemsize)
    if storage.fill == torch.bool:
        values = torch.rand(count, generator=generator) < 0.5
    elif storage.fill.is_floating_point and storage.high is not None:  # counts (a Welford combine's weights): >= 1
        values = torch.randint(1, storage.high, (count,), generator=generator)
    elif storage.fill.is_floating_point:
        values = torch.randn(count, generator=generator)
    else:
        high = storage.high if storage.high is not None else 8
        values = torch.randint(0 if storage.high is not None else -8, high, (count,), generator=generator)
    return values.to(storage.fill).view(torch.uint8)[: storage.hi].clone()


def reduce_partials(partials, split):
    """A split reduction's partial buffer combined over its split dims (sum of sums, max of maxima); for a split
    Welford, `partials` is the three buffers (each chunk's mean, m2 and weight), combined by Chan's formula in
    float64, and the result is the one of mean, m2, weight that split["part"] names."""
    if split["reduce"] in ("scan", "through"):  # not partials: a scan's output, or a value computed through a sum,
        return partials.cpu()                  # whose tolerance grows with the number of values added
    if split["reduce"] == "welford":
        means, m2s, weights = (p.cpu().double() for p in partials)
        weight = weights.sum(split["dims"], keepdim=True)
        mean = (weights * means).sum(split["dims"], keepdim=True) / weight
        m2 = (m2s + weights * (means - mean) ** 2).sum(split["dims"], keepdim=True)
        return (mean, m2, weight)[split["part"]].squeeze(split["dims"]).to(partials[0].dtype)
    combine = {"sum": torch.sum, "amax": torch.amax, "amin": torch.amin, "any": torch.any}[split["reduce"]]
    if "rows" in split:  # a mix-order reduction's flat workspace: one row of partials per program (per block)
        partials = partials.reshape(split.get("blocks", 1), -1, split["rows"]).squeeze(0)
    return combine(partials.cpu(), dim=split["dims"])


def compared_actual(output, args, expected):
    """What compare() takes as the kernel's value of `output` against `expected`: its tensor, or for a split
    Welford's partials the three buffers that combine together."""
    if isinstance(expected, dict) and expected["reduce"] == "welford":
        return tuple(args[p] for p in expected["of"])
    return args[output]


def compare(name, actual, expected, oracle, tolerance=None, where=None):
    """True when actual matches expected (exactly, or within the dtype's tolerance); prints the first mismatches.

    `expected` is a tensor, or for a split reduction's partial output {"reduce", "dims", "terms", "expected"}: the
    kernel's partials are combined over the split dims, then compared with the whole reduction (a split Welford's
    three partial buffers come as `actual`, a tuple, and are combined together). `where` (--shrink): a bool tensor
    of the kernel's output, the values the programs that ran wrote; only those are compared.
    """
    split = expected if isinstance(expected, dict) else None
    what = ""
    if split is not None:
        if where is not None:
            where = written_after_combining(where, split)
            if not bool(where.any()):  # None: neither a pass nor a failure, a value --shrink cannot give
                print(f"  {name}: {oracle}: not compared under --shrink: each of its values combines partials that "
                      "programs it left out wrote (check without --shrink)")
                return None
        actual, expected = reduce_partials(actual, split), split["expected"]
        what = f", partials {split['reduce']}-combined over dims {split['dims']} vs the whole reduction of {split['terms']} values"
        if split["reduce"] == "scan":
            what = f", a scan of {split['terms']} values"
        if split["reduce"] == "through":
            what = f", computed through a sum of {split['terms']} values"
        if split["reduce"] == "welford":
            others = [p for p in split["of"] if p != split["of"][split["part"]]]
            what = f", Welford partials combined with {' and '.join(others)} over dims {split['dims']} vs the whole var_mean of {split['terms']} values"
    tolerance = tolerance or TOLERANCES.get(actual.dtype, EXACT)
    scale = None  # a value computed through a sum: atol grows with the size of its row's values
    if split is not None and split["reduce"] in ("sum", "welford", "scan", "through") and split["terms"] and actual.dtype.is_floating_point:
        # Partial sums add in another order; the rounding error of a sum of n terms grows like sqrt(n).
        tolerance = dict(rtol=tolerance["rtol"], atol=tolerance["atol"] * split["terms"] ** 0.5)
        what += f", atol scaled by sqrt({split['terms']})"
        if split["reduce"] == "through" and expected.numel():  # and by the size of the values the sum ran over
            size = expected.detach().abs().float().nan_to_num(0, 0, 0)
            scale = (size.amax(dim=split["dims"], keepdim=True) if split["dims"] else size.max()).clamp(min=1.0)
            scale = scale.expand_as(expected).reshape(-1)
            largest = float(scale.max())
            if split["dims"]:
                what += f" and by the largest value of each row along dims {split['dims']} (up to {largest:.3g})" if largest > 1 else ""
            else:
                what += f" and by the largest value, {largest:.3g}" if largest > 1 else ""
    expected = expected.to(actual.dtype).reshape(actual.shape) if expected.numel() == actual.numel() else expected
    if expected.shape != actual.shape:
        print(f"  {name}: {oracle}: shape {tuple(actual.shape)} but it gives {tuple(expected.shape)}")
        return False
    if scale is None:
        close = torch.isclose(actual.cpu(), expected.cpu(), equal_nan=True, **tolerance)
        limits = "bit for bit" if tolerance is EXACT else f"rtol={tolerance['rtol']:.3g}, atol={tolerance['atol']:.3g}"
    else:
        got, want = actual.cpu().double(), expected.cpu().double()
        atol = tolerance["atol"] * scale.cpu().reshape(actual.shape).double()
        close = ((got - want).abs() <= atol + tolerance["rtol"] * want.abs()) | (got == want) | (got.isnan() & want.isnan())
        limits = f"rtol={tolerance['rtol']:.3g}, atol={tolerance['atol'] * float(scale.max()):.3g}" + (" at most" if split["dims"] else "")
    values = f"{actual.numel()} values"
    if where is not None:
        where = where.cpu().reshape(close.shape)
        if not bool(where.any()):
            print(f"  {name}: {oracle}: NOT COMPARED: the programs --shrink ran wrote none of its {actual.numel()} values (check without --shrink)")
            return False
        close, values = close | ~where, f"{int(where.sum())} of {actual.numel()} values, those the programs --shrink ran wrote"
    if bool(close.all()):
        print(f"  {name}: {oracle}: ok ({values}, {actual.dtype}, {limits}{what})")
        return True
    bad = (~close).nonzero()
    print(f"  {name}: {oracle}: {len(bad)} of {values} differ ({limits}{what}); first ones:")
    for index in bad[:5].tolist():
        at = tuple(index)
        print(f"    at {at}: kernel {actual.cpu()[at].item()!r}, {oracle} {expected.cpu()[at].item()!r}")
    loose = TOLERANCES.get(actual.dtype)
    if tolerance is EXACT and loose is not None and bool((torch.isclose(actual.cpu(), expected.cpu(), equal_nan=True, **loose) | (close if where is None else ~where)).all()):
        print(f"    (all within {actual.dtype}'s tolerance, rtol={loose['rtol']:.3g}, atol={loose['atol']:.3g}: the values were added "
              "in another order than in the recorded run, as another config or device adds them)")
    return False


def written_after_combining(where, split):
    """For a split reduction's partials: a combined value counts as written when every partial that goes into it was."""
    if split["reduce"] in ("scan", "through"):  # one value per value: nothing combines
        return where
    where = where.cpu().float()
    if split["reduce"] == "welford":
        return where.amin(split["dims"], keepdim=True).squeeze(split["dims"]).bool()
    if "rows" in split:
        where = where.reshape(split.get("blocks", 1), -1, split["rows"]).squeeze(0)
    return where.amin(dim=split["dims"]).bool()


def partials_only(expected):
    """True for a split reduction's partials: each value the reference gives combines partials of many programs."""
    return isinstance(expected, dict) and expected["reduce"] not in ("scan", "through")


class GridSample:
    """--shrink N under the Triton interpreter: each launch runs N programs of its grid, evenly spread (the first and
    the last among them), not all, and the addresses they store to are kept, so that a check compares the values
    those programs wrote. The interpreter runs one program after another, each Triton operation a numpy call: an
    H200-sized grid of thousands of programs takes minutes on a CPU, a sample of it seconds. Outputs that programs add
    into together (atomics) or that wait for each other (a grid barrier) need the whole grid: see why_whole_grid."""

    def __init__(self, count):
        self.count, self.ran, self.stores = count, [], []

    @staticmethod
    def unsupported():
        """Why this Triton's interpreter cannot run a sample of a grid (the parts of it the sample stands in for are
        missing), or "" when it can."""
        import triton
        from triton.runtime import interpreter

        needed = [(interpreter, "GridExecutor"), (interpreter, "InterpreterBuilder"), (interpreter, "interpreter_builder")]
        missing = [name for owner, name in needed if not hasattr(owner, name)]
        # (set_grid_dim and set_grid_idx give the builder the grid_dim and grid_idx a sampled program reads)
        missing += [f"InterpreterBuilder.{name}" for name in ("create_masked_store", "set_grid_dim", "set_grid_idx")
                    if hasattr(interpreter, "InterpreterBuilder") and not hasattr(interpreter.InterpreterBuilder, name)]
        if missing:
            return f"this Triton ({triton.__version__})'s interpreter has no {', '.join(missing)}"
        return ""

    def chosen(self, total):
        if total <= self.count:
            return range(total)
        return sorted({i * (total - 1) // max(1, self.count - 1) for i in range(self.count)})

    def __enter__(self):
        import types

        import numpy as np
        from triton.runtime import interpreter

        executor, builder, sample = interpreter.GridExecutor, interpreter.InterpreterBuilder, self
        run_grid, store = executor.__call__, builder.create_masked_store
        self.patched = [(executor, "__call__", run_grid), (builder, "create_masked_store", store)]

        def some_programs(fn, chosen):
            def program(**args):  # runs as the kernel's function: its signature and its globals (see below)
                dims, index = interpreter.interpreter_builder.grid_dim, interpreter.interpreter_builder.grid_idx
                if (index[0] * dims[1] + index[1]) * dims[2] + index[2] in chosen(dims[0] * dims[1] * dims[2]):
                    return fn(**args)
                return None

            # the interpreter reads the kernel's parameters from its signature and patches `tl` in its globals
            stand_in = types.FunctionType(program.__code__, fn.__globals__, fn.__name__, None, program.__closure__)
            stand_in.__signature__ = inspect.signature(fn)
            return stand_in

        def run_some(grid, *args, **kwargs):
            fn, picked = grid.fn, {}

            def chosen(total):
                if total not in picked:
                    picked[total] = set(sample.chosen(total))
                    sample.ran.append((len(picked[total]), total))
                return picked[total]

            grid.fn = some_programs(fn, chosen)
            try:
                return run_grid(grid, *args, **kwargs)
            finally:
                grid.fn = fn

        def store_and_keep(builder_self, ptrs, value, mask, *args, **kwargs):
            written = np.broadcast_to(np.asarray(mask.data, dtype=bool), ptrs.data.shape)
            sample.stores.append((np.asarray(ptrs.data)[written].astype(np.int64), value.data.dtype.itemsize))
            return store(builder_self, ptrs, value, mask, *args, **kwargs)

        executor.__call__, builder.create_masked_store = run_some, store_and_keep
        return self

    def __exit__(self, *exc):
        for owner, name, value in self.patched:
            setattr(owner, name, value)

    def written(self, tensor):
        """Which of `tensor`'s values the programs that ran stored to: a bool tensor of its shape."""
        import numpy as np

        storage, itemsize = tensor.untyped_storage(), tensor.element_size()
        flags = torch.zeros(-(-storage.nbytes() // itemsize), dtype=torch.bool)
        for addresses, _ in self.stores:
            offsets = torch.from_numpy(np.ascontiguousarray(addresses)) - storage.data_ptr()
            offsets = offsets[(offsets >= 0) & (offsets < storage.nbytes())]
            flags[offsets // itemsize] = True
        return flags.as_strided(tensor.shape, tensor.stride(), tensor.storage_offset())

    def summary(self):
        ran = sum(r for r, _ in self.ran)
        total = sum(t for _, t in self.ran)
        return f"--shrink: ran {ran} of the grid's {total} programs (evenly spread, the first and the last among them)"


def this_device(device):
    return "cpu" if device == "cpu" else f"cuda:{torch.cuda.get_device_name(device)}"


class Kernel:
    """One kernel module with the harness bound to it: what its --check and --bench, `harvest bench` and its CUDA
    twin use. The module's own names (launch, reference, CONFIG, ARGUMENTS, OUTPUTS, ...) read through."""

    EXACT = EXACT
    compare = staticmethod(compare)
    this_device = staticmethod(this_device)

    def __init__(self, namespace):
        self.namespace = namespace
        self.STORAGES = storages_of(namespace["ARGUMENTS"])[1]
        if os.environ.get("TRITON_INTERPRET") == "1":  # the interpreter cannot run libdevice calls: numpy stands in
            import triton.language.extra.libdevice as extra_libdevice  # the helpers' libdevice (a kernel's, usually)

            for module in {namespace.get("libdevice", extra_libdevice), extra_libdevice}:
                interpret_libdevice(module)

    def __getattr__(self, name):  # the module's names first, then the harness's (time_gpu, print_bench, ...)
        if name in self.namespace:
            return self.namespace[name]
        if name in globals() and not name.startswith("_"):
            return globals()[name]
        raise AttributeError(name)

    def make_inputs(self, device="cuda", seed=0):
        """Made-up arguments with the launch's exact layouts: random inputs, zeroed outputs."""
        generator = torch.Generator().manual_seed(seed)
        return views(self.ARGUMENTS, [made_up(s, generator).to(device) for s in self.STORAGES], device)

    def record_problem(self):
        """Why the run's record cannot be used here (None when it can)."""
        if not self.RECORD:
            return "none was saved"
        if not os.path.isfile(self.record_path()):
            return f"{self.RECORD} is missing"
        return None

    def record_path(self):
        return os.path.join(os.path.dirname(os.path.abspath(self.namespace["__file__"])), self.RECORD)

    def load_record(self, device):
        """(arguments as the run passed them, {output: what Inductor's kernel wrote}), or None without a usable record."""
        if self.record_problem() is not None:
            return None
        import pickle

        try:
            data = torch.load(self.record_path(), map_location="cpu", weights_only=True)  # plain uint8 tensors
        except pickle.UnpicklingError as exc:  # torch refused the file before anything in it ran
            words = str(exc).split()
            what = f"it pickles {words[words.index('GLOBAL') + 1]}" if "GLOBAL" in words else str(exc).strip().splitlines()[0]
            sys.exit(f"{self.RECORD}: not a launch record harvest wrote ({what}); refused without loading it: extract again to remake it")
        saved = data["before"]
        if len(saved) != len(self.STORAGES) or any(b is not None and b.numel() != s.hi - s.lo for b, s in zip(saved, self.STORAGES)):
            print(f"the record {self.RECORD} holds other byte ranges than ARGUMENTS now describes (edited sizes?): not used")
            return None

        def storages(saved):
            result = []
            for storage, span in zip(self.STORAGES, saved):
                full = torch.zeros(storage.hi, dtype=torch.uint8)
                if span is not None:  # None: the kernel only writes this storage; the run's bytes there were garbage
                    full[storage.lo :] = span
                result.append(full.to(device))
            return result

        before = storages(data["before"])
        after = storages([new if new is not None else old for old, new in zip(data["before"], data["after"])])
        written = views(self.ARGUMENTS, after, device)
        return views(self.ARGUMENTS, before, device), {name: written[name] for name in self.OUTPUTS}

    def kernel_text(self):
        """The module's kernel region, as it is in the file now."""
        with open(os.path.abspath(self.namespace["__file__"]), encoding="utf-8") as f:
            text = f.read()
        start = text.index("# >>> kernel")
        return text[text.index("\n", start) + 1 : text.index("# <<< kernel")]

    def unedited(self):
        """True while the kernel text in the module is the one harvest extracted."""
        return hashlib.sha256(self.kernel_text().strip().encode("utf-8")).hexdigest() == self.KERNEL_SHA256

    def config_change(self):
        """What CONFIG changed since the record was made ("BLOCK_COLS 1024 -> 512"), "" when nothing (or unknown)."""
        recorded, now = self.namespace.get("RECORD_CONFIG"), dict(self.CONFIG)
        if recorded is None or dict(recorded) == now:
            return ""
        return ", ".join(f"{key} {recorded.get(key, '-')} -> {now.get(key, '-')}" for key in dict.fromkeys([*recorded, *now])
                         if recorded.get(key) != now.get(key))

    def why_whole_grid(self):
        """Why --shrink cannot leave programs out of this kernel (None when it can)."""
        text = self.kernel_text()
        if "atomic_" in text:
            return "its programs add into the same outputs with atomics: a part of the grid gives part of each sum"
        if "x_grid_barrier" in text:
            return "its programs wait for each other at a grid barrier and read what all of them wrote"
        return None

    def expected(self, reference_args):
        """What the reference computes, at full fp32: TF32 off for matmuls and convolutions. (Eager on a GPU convolves
        in TF32 by default; Inductor's kernels use it only where their ALLOW_TF32 says so.)"""
        matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
        try:
            return self.reference(*reference_args)
        finally:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn

    def reference_args(self, args, clone=False):
        """The reference's arguments from the kernel's; `device` (a reference that reads no tensor) is where they are."""
        names = inspect.signature(self.reference).parameters
        where = next((a.device for a in args.values() if isinstance(a, torch.Tensor)), None)
        return [where if n == "device" and n not in args else args[n].clone() if clone and isinstance(args[n], torch.Tensor)
                else args[n] for n in names]

    def check(self, device, seed=0, shrink=None):
        """Launch the kernel and compare every output it writes with two oracles, each where it exists:
        recorded: what Inductor's kernel wrote in the real run, from the same inputs (bit for bit when the kernel is
        unedited and this is the device it was recorded on); reference: the eager ops of the kernel's FX graph.
        shrink: under the Triton interpreter, run that many programs of the grid and compare what they wrote."""
        name = os.path.basename(self.namespace["__file__"])
        sample = None
        if shrink and os.environ.get("TRITON_INTERPRET") != "1":
            print("--shrink: not used: on a GPU every program runs (it is for the Triton interpreter)")
        elif shrink:
            whole = self.why_whole_grid() or GridSample.unsupported()
            if whole:
                print(f"--shrink: not used: {whole}; the whole grid runs")
            else:
                sample = GridSample(shrink)
        record = self.load_record(device)
        if record is None:
            print(f"no record ({self.record_problem() or 'it does not fit ARGUMENTS'}): made-up inputs (seed {seed}), only the eager reference compares")
            args, recorded = self.make_inputs(device, seed), {}
        else:
            args, recorded = record
        exact = record is not None and self.EXACT_POSSIBLE and self.unedited() and this_device(device) == self.RECORD_DEVICE
        config_change = self.config_change() if record is not None else ""
        if config_change:  # another config adds a reduction's values in another order: not the record's bits
            exact = False
            print(f"CONFIG is not the one the record was made with ({config_change}): the record compares within the dtype's tolerance")
        reference_args = self.reference_args(args, clone=True)
        if os.environ.get("TRITON_INTERPRET") == "1":
            hint = "" if sample else "; --shrink N runs N programs of the grid"
            print(f"running {name} under the Triton interpreter (numpy, one program at a time: this can take minutes{hint})", flush=True)
        expected = self.expected(reference_args)
        if sample is not None and not recorded and all(partials_only(expected.get(o)) for o in self.OUTPUTS):
            print("--shrink: not used: every value of every output combines partials from all of the grid's programs; the whole grid runs")
            sample = None
        if sample is None:
            self.launch(**args)
        else:
            with sample:
                self.launch(**args)
            print(sample.summary())
        print(f"{name} on {device} ({'recorded inputs' if record is not None else 'made-up inputs'}):")
        ok, shrunk = True, False
        for output in self.OUTPUTS + [n for n in expected if n not in self.OUTPUTS]:
            compared = []
            where = sample.written(args[output]) if sample is not None else None
            if output in recorded:
                compared.append(compare(output, args[output], self.as_recorded(output, recorded, expected), "recorded",
                                        EXACT if exact else None, where))
            alias = self.same_view(output, expected)
            if output in expected:
                compared.append(compare(output, compared_actual(output, args, expected[output]), expected[output], "reference", where=where))
            elif alias is not None:  # another name for the memory an output the reference computes is written to
                compared.append(compare(output, args[output], expected[alias], f"reference (as {alias}, the same memory)", where=where))
            elif output in self.UNCHECKED:
                print(f"  {output}: reference: not computed ({self.UNCHECKED[output]})")
            if not compared:
                print(f"  {output}: NOT COMPARED: no record and no reference for it")
            skipped = None in compared  # under --shrink: the values need programs it left out
            shrunk, compared = shrunk or skipped, [c for c in compared if c is not None]
            ok = ok and (bool(compared) or skipped) and all(compared)
        if shrunk:
            print("--shrink: what it could not compare needs the whole grid: check without --shrink for a full check")
        return ok

    def as_recorded(self, output, recorded, expected):
        """What `output` compares with in the record: the recorded tensor, or where the kernel adds into it with
        atomics (each launch adds in its own order) and the reference knows it as a value computed through a sum,
        the record within that sum's tolerance, as the reference compares."""
        summed = expected.get(output)
        if not self.EXACT_POSSIBLE and isinstance(summed, dict) and summed["reduce"] in ("through", "scan"):
            return dict(summed, expected=recorded[output])
        return recorded[output]

    def same_view(self, name, expected):
        """An output of `expected` that is `name`'s very view (the same storage, offset, shape and stride), or None:
        a kernel that reads a mutated input through one parameter and writes it through another."""
        index_of, _ = storages_of(self.ARGUMENTS)
        mine = self.ARGUMENTS.get(name)
        for other in expected:
            theirs = self.ARGUMENTS.get(other)
            if (other != name and isinstance(mine, Tensor) and isinstance(theirs, Tensor)
                    and index_of[name] == index_of[other] and (mine.shape, mine.stride, mine.offset, mine.dtype)
                    == (theirs.shape, theirs.stride, theirs.offset, theirs.dtype)):
                return other
        return None

    def bench_inputs(self, device, seed=0):
        """The arguments --bench times the kernel on: the run's recorded inputs when they were saved, else made-up ones."""
        record = self.load_record(device)
        if record is not None:
            return record[0], "recorded"
        return self.make_inputs(device, seed), f"made-up (seed {seed})"

    def bytes_moved(self):
        index_of, _ = storages_of(self.ARGUMENTS)
        tensors = {name: arg for name, arg in self.ARGUMENTS.items() if isinstance(arg, Tensor)}
        return bytes_moved(tensors, index_of, self.STORAGES, self.OUTPUTS)

    def bench(self, device="cuda", seed=0, config=None, copy_gbps=None, inputs=None):
        """Time the kernel and its eager reference on the GPU, on the same inputs; returns the figures (see time_gpu).
        inputs: what bench_inputs() returned, when the caller has it already."""
        args, inputs = inputs or self.bench_inputs(device, seed)
        reference_args = self.reference_args(args)
        flush = l2_flush_buffer(device)
        timings = {"kernel": time_gpu(lambda: self.launch(**args, config=config or self.CONFIG), flush)}
        try:
            computed = self.reference(*reference_args)
            if computed:
                timings["eager"] = time_gpu(lambda: self.reference(*reference_args), flush)
                if self.UNCHECKED:  # eager did part of the kernel's work: its time is a lower bound, say so
                    timings["eager"]["partial"] = f"the reference computes {len(computed)} of the kernel's {len(computed) + len(self.UNCHECKED)} outputs"
            else:  # timing a reference that computes nothing would time an empty call
                timings["eager"] = {"error": "no eager reference: it computes none of the kernel's outputs (" + next(iter(self.UNCHECKED.values()), "none") + ")"}
        except Exception as exc:  # a reference that cannot run on these inputs is reported, not fatal
            timings["eager"] = {"error": f"{type(exc).__name__}: {exc}"}
        if copy_gbps is None:
            copy_gbps = copy_bandwidth(flush, device)
        flops = peak = None
        matmul = self.namespace.get("MATMUL")
        if matmul:  # a matmul template: cuBLAS at the same size and dtype, and the peak of that dtype, now
            m, n, k, dtype, batch = matmul["M"], matmul["N"], matmul["K"], matmul["dtype"], matmul.get("B", 1)
            if batch == 1:
                a, b = torch.randn(m, k, device=device).to(dtype), torch.randn(k, n, device=device).to(dtype)
                timings["torch.mm"] = time_gpu(lambda: torch.mm(a, b), flush)
            else:  # a batched matmul's B matrices
                a, b = torch.randn(batch, m, k, device=device).to(dtype), torch.randn(batch, k, n, device=device).to(dtype)
                timings["torch.bmm"] = time_gpu(lambda: torch.bmm(a, b), flush)
            flops, peak = 2 * batch * m * n * k, matmul_peak(flush, dtype, device)
        kernel_name = os.path.splitext(os.path.basename(self.namespace["__file__"]))[0]
        return bench_result(kernel_name, device, inputs, self.bytes_moved(), timings, copy_gbps, flops, peak)


NEEDS_GPU = 9  # the exit code when a GPU is needed and there is none (harvest's own code for it)


def main(namespace):
    """The module's command line: --check (the default), --bench [--json FILE], --device, --seed. Returns the exit code."""
    file = os.path.basename(namespace["__file__"])
    parser = argparse.ArgumentParser(prog=file, description=f"{file}: an extracted Triton kernel (check it, time it, edit it).")
    parser.add_argument("--check", action="store_true", help="compare every output with the run's record and the eager reference (default)")
    parser.add_argument("--bench", action="store_true", help="time the kernel and the eager reference (CUDA events; needs a GPU)")
    parser.add_argument("--json", metavar="FILE", help="with --bench: also write the figures to FILE as JSON")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", help="cuda or cpu")
    parser.add_argument("--seed", type=int, default=0, help="seed for made-up inputs (used when there is no record)")
    parser.add_argument("--shrink", nargs="?", const=32, type=int, metavar="N",
                        help="with the Triton interpreter: run N programs of the grid (default 32; evenly spread, the first and "
                             "the last among them) and compare the values they wrote: minutes become seconds")
    options = parser.parse_args()
    if options.shrink is not None and options.shrink < 1:
        parser.error(f"--shrink {options.shrink}: give the number of programs to run, 1 or more")
    if options.device == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        print("no GPU: run with TRITON_INTERPRET=1 to use the Triton interpreter on the CPU", file=sys.stderr)
        return NEEDS_GPU
    kernel = Kernel(namespace)
    ok = True
    if options.check or not options.bench:
        ok = kernel.check(options.device, options.seed, options.shrink)
    if options.bench:
        if options.device == "cpu" or os.environ.get("TRITON_INTERPRET") == "1":
            print("--bench needs a CUDA device: the Triton interpreter's times are not GPU times; nothing was timed")
            return 1 if not ok else NEEDS_GPU
        result = kernel.bench(options.device, options.seed)
        print_bench(result)
        if options.json:
            import json

            with open(options.json, "w", encoding="utf-8") as f:
                json.dump(result, f, indent=1)
    return 0 if ok else 1


# Timing: the same lines `harvest bench` times with (from harvest/bench/timing.py).
# >>> timing: pasted verbatim into every kernel module (harvest/bench/timing.py; imports only torch)
BENCH_JSON_SCHEMA = "harvest.bench/1"  # what --bench --json writes; a CUDA twin's --bench --json writes the same


def _quantile(ordered, q):
    """The q-quantile (0..1) of an ascending list, interpolated linearly between neighbours."""
    position = (len(ordered) - 1) * q
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def l2_flush_buffer(device="cuda"):
    """A buffer twice the GPU's L2 cache: zeroing it evicts whatever the previous repetition left in L2."""
    size = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 64 * 2**20
    return torch.empty(2 * size, dtype=torch.uint8, device=device)


_SLEEP_CYCLES_PER_MS = []


def _sleep_cycles_per_ms():
    """How many torch.cuda._sleep cycles make a millisecond on this GPU (measured once)."""
    if not _SLEEP_CYCLES_PER_MS:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(1000)
        start.record()
        torch.cuda._sleep(5_000_000)
        end.record()
        end.synchronize()
        _SLEEP_CYCLES_PER_MS.append(5_000_000 / max(start.elapsed_time(end), 1e-3))
    return _SLEEP_CYCLES_PER_MS[0]


def time_gpu(fn, flush, warmup_ms=25.0, rep_ms=100.0, min_reps=10, max_reps=1000, batch=100):
    """The device time of fn() in milliseconds, from CUDA events after a warm-up, L2 flushed before each repetition.

    Returns {"median_ms", "p20_ms", "p80_ms", "reps", "first_call_ms", "method"}. first_call_ms is the first call
    alone by the host clock (compile + first launch); it is not one of the repetitions.
    """
    import time

    torch.cuda.synchronize()
    started = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    first_call_ms = (time.perf_counter() - started) * 1e3
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    queued = time.perf_counter()
    for _ in range(5):
        flush.zero_()
        fn()
    host_ms_per_rep = (time.perf_counter() - queued) * 1e3 / 5  # the host's time to queue one repetition
    end.record()
    end.synchronize()
    estimate = max(start.elapsed_time(end) / 5, 1e-3)  # flush included: it sizes the warm-up and the repetitions
    for _ in range(max(1, int(warmup_ms / estimate))):
        flush.zero_()
        fn()
    reps = max(min_reps, min(max_reps, int(rep_ms / estimate)))
    can_sleep = hasattr(torch.cuda, "_sleep")
    cycles_per_ms = _sleep_cycles_per_ms() if can_sleep else 0.0
    times, late = [], 0
    while len(times) < reps:
        # A batch the host queues in about 5 ms: short enough that CUDA's launch queue (about a thousand entries)
        # never fills, so the host never waits mid-batch while the GPU drains the queue behind it.
        count = min(batch, max(5, int(5.0 / max(host_ms_per_rep, 1e-3))), reps - len(times))
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(count)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(count)]
        ahead_ms = 1.0 + 1.5 * count * host_ms_per_rep
        if can_sleep:  # the GPU waits here while the host queues the whole batch behind it
            torch.cuda._sleep(int(ahead_ms * cycles_per_ms))
        queued = time.perf_counter()
        for i in range(count):
            flush.zero_()
            starts[i].record()
            fn()
            ends[i].record()
        queue_ms = (time.perf_counter() - queued) * 1e3
        host_ms_per_rep = queue_ms / count
        late += queue_ms > ahead_ms or not can_sleep
        torch.cuda.synchronize()
        times += [s.elapsed_time(e) for s, e in zip(starts, ends)]
    times.sort()
    method = "CUDA events, L2 flushed before each repetition"
    if late:
        method += f"; the host fell behind the GPU in {late} batch(es): host launch time may show in those"
    return {
        "median_ms": _quantile(times, 0.5),
        "p20_ms": _quantile(times, 0.2),
        "p80_ms": _quantile(times, 0.8),
        "reps": len(times),
        "first_call_ms": first_call_ms,
        "method": method,
    }


def copy_bandwidth(flush, device="cuda"):
    """Device-to-device copy bandwidth in GB/s (bytes read + written), timed like the kernels: their yardstick."""
    free, _ = torch.cuda.mem_get_info(device)
    nbytes = max(1 << 20, min(1 << 30, free // 8)) // 4096 * 4096
    source = torch.ones(nbytes, dtype=torch.uint8, device=device)
    target = torch.empty_like(source)
    timing = time_gpu(lambda: target.copy_(source), flush)
    return 2 * nbytes / (timing["median_ms"] * 1e6)


def matmul_peak(flush, dtype, device="cuda", n=8192):
    """The device's matmul throughput for `dtype` in TFLOP/s, measured now: cuBLAS (torch.mm) on two n x n
    matrices, timed like the kernels. The yardstick of a matmul template's TFLOP/s, as the copy is of GB/s."""
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    timing = time_gpu(lambda: torch.mm(a, b), flush, rep_ms=50.0, min_reps=5)
    return 2 * n**3 / (timing["median_ms"] * 1e9)


def _view_bytes(shape, stride, dtype):
    """Distinct bytes a view covers: a broadcast (stride 0) dimension counts once."""
    if any(size == 0 for size in shape):
        return 0
    elements = 1
    for size, step in zip(shape, stride):
        if step != 0:
            elements *= size
    span = 1 + sum((size - 1) * abs(step) for size, step in zip(shape, stride))
    return min(elements, span) * torch.empty(0, dtype=dtype).element_size()


def bytes_moved(tensors, storage_of, storages, outputs):
    """Bytes the launch must move at least: every tensor view it reads, once, plus every view it writes.

    tensors: name -> a view with shape, stride, offset and dtype; storage_of: name -> the index of the storage it
    views; storages: each with `fill`, None when the kernel only writes that storage; outputs: the names it writes.
    A view read and written counts twice; identical views count once. A kernel that reads its input twice (a looped
    reduction's two passes) moves more than this, so its GB/s is a lower bound of what the memory system did.
    """
    reads, writes = set(), set()
    for name, arg in tensors.items():
        view = (storage_of[name], tuple(arg.shape), tuple(arg.stride), arg.offset, arg.dtype)
        if storages[storage_of[name]].fill is not None:
            reads.add(view)
        if name in outputs:
            writes.add(view)
    return sum(_view_bytes(v[1], v[2], v[4]) for v in reads) + sum(_view_bytes(v[1], v[2], v[4]) for v in writes)


def bench_result(kernel, device, inputs, moved, timings, copy_gbps, flops=None, peak_tflops=None):
    """The JSON-ready result of one module's --bench: timings gain GB/s and % of the copy bandwidth, and for a
    matmul (flops: its 2*M*N*K) TFLOP/s and % of the matmul peak measured in the same run."""
    for timing in timings.values():
        if "median_ms" in timing:
            timing["gbps"] = moved / (timing["median_ms"] * 1e6) if moved else None
            timing["pct_copy"] = 100 * timing["gbps"] / copy_gbps if moved and copy_gbps else None
            if flops:
                timing["tflops"] = flops / (timing["median_ms"] * 1e9)
                timing["pct_peak"] = 100 * timing["tflops"] / peak_tflops if peak_tflops else None
    matmul = {"flops": flops, "peak_tflops": peak_tflops} if flops else {}
    return {
        "schema": BENCH_JSON_SCHEMA,
        "kernel": kernel,
        "device": torch.cuda.get_device_name(device),
        "torch": torch.__version__,
        "inputs": inputs,
        "bytes_moved": moved,
        "copy_gbps": copy_gbps,
        **matmul,
        "timings": timings,
    }


def print_bench(result):
    """The result as the small table the module's --bench prints."""
    print(f"{result['kernel']} on {result['device']}, {result['inputs']} inputs, {result['bytes_moved'] / 1e6:.1f} MB moved; "
          f"device copy bandwidth measured now: {result['copy_gbps']:.0f} GB/s")
    matmul = bool(result.get("flops"))
    if matmul:
        print(f"a matmul of {result['flops'] / 1e9:.2f} GFLOP per launch; cuBLAS peak measured now (8192^3): "
              f"{result['peak_tflops']:.0f} TFLOP/s" if result.get("peak_tflops") else "")
    extra = f" {'TFLOP/s':>8s} {'% peak':>7s}" if matmul else ""
    print(f"{'':16s} {'median ms':>10s} {'p20':>9s} {'p80':>9s} {'GB/s':>8s} {'% copy':>7s}{extra} {'reps':>5s}  first call (compile + launch)")
    for label, t in result["timings"].items():
        if "median_ms" not in t:
            print(f"{label:16s} not timed: {t.get('error', 'unknown reason')}")
            continue
        gbps = f"{t['gbps']:8.1f}" if t.get("gbps") else f"{'-':>8s}"
        pct = f"{t['pct_copy']:6.1f}%" if t.get("pct_copy") else f"{'-':>7s}"
        if matmul:
            pct += f" {t['tflops']:8.1f}" + (f" {t['pct_peak']:6.1f}%" if t.get("pct_peak") else f" {'-':>7s}")
        print(f"{label:16s} {t['median_ms']:10.4f} {t['p20_ms']:9.4f} {t['p80_ms']:9.4f} {gbps} {pct} {t['reps']:5d}  {t['first_call_ms']:.1f} ms")
    print("(CUDA events after a warm-up, L2 flushed before each repetition; median and p20/p80 over the repetitions)")
# <<< timing


# Interpreter support: under TRITON_INTERPRET=1 the interpreter cannot run libdevice calls, so the ones this
# extraction's kernels call get numpy versions (on a GPU nothing changes).
def interpret_libdevice(libdevice):
    """Under TRITON_INTERPRET=1, replace libdevice functions with numpy versions the interpreter can run."""
    import math  # noqa: F401  (erf, lgamma)

    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter
    from triton.runtime.interpreter import TensorHandle

    builder = getattr(interpreter, "InterpreterBuilder", None)
    if builder is not None and not hasattr(builder, "get_int1_ty"):  # triton <= 3.3: tl.zeros(..., tl.int1) fails
        builder.get_int1_ty = lambda self: tl.int1

    def retyped(x, scalar):
        if not x.type.is_block():
            return scalar
        if hasattr(x.type, "with_element_ty"):
            return x.type.with_element_ty(scalar)
        return tl.core.block_type(scalar, x.type.get_block_shapes())  # triton <= 3.3 has no with_element_ty

    # triton 3.9's interpreter gives `block_mask & (scalar < n)` (a batched matmul template's store mask) int32 data
    # under an int1 type, which its loads and stores refuse ("mask has unsupported dtype"): they get it as bools
    if builder is not None and not getattr(builder.create_masked_store, "mask_as_bool", False):
        def as_bool(mask):
            if mask.data.dtype == np.bool_:
                return mask
            return TensorHandle(mask.data.astype(np.bool_), mask.dtype)

        masked_load, masked_store = builder.create_masked_load, builder.create_masked_store

        def create_masked_load(self, ptrs, mask, *args, **kwargs):
            return masked_load(self, ptrs, as_bool(mask), *args, **kwargs)

        def create_masked_store(self, ptrs, value, mask, *args, **kwargs):
            return masked_store(self, ptrs, value, as_bool(mask), *args, **kwargs)

        create_masked_store.mask_as_bool = True
        builder.create_masked_load, builder.create_masked_store = create_masked_load, create_masked_store

    def unary(np_fn, predicate=False):
        def call(x, *_, **__):
            data = np.asarray(np_fn(x.handle.data))
            dtype = tl.int1 if predicate else x.dtype
            if not predicate:
                data = data.astype(x.handle.data.dtype, copy=False)
            return tl.core.tensor(TensorHandle(data, dtype.scalar), retyped(x, dtype.scalar))

        return call

    patch_lang, scope_type = getattr(interpreter, "_patch_lang", None), getattr(interpreter, "_LangPatchScope", None)
    if patch_lang is not None and scope_type is not None and not getattr(patch_lang, "once_per_launch", False):
        import inspect

        def patch_lang_where_needed(fn):
            # Each call of a @triton.jit function from a kernel (tl.sum, tl.zeros, a combine function, an Inductor
            # helper) has the interpreter patch the triton.language modules that function sees, found by
            # inspect.getmembers of tl, tl.tensor and tl.math: ~0.5 ms a call, half the time of a looped reduction.
            # Within a launch those modules are patched already: a call patches only a module that is not (tl.core,
            # which a kernel does not see, at the first call of a function that sees it), as the interpreter would.
            langs = [value for value in fn.__globals__.values() if inspect.ismodule(value) and value in (tl, tl.core)]
            if langs and not any(tl.core.is_builtin(getattr(lang, "load", None)) for lang in langs):
                return scope_type()
            return patch_lang(fn)

        patch_lang_where_needed.once_per_launch = True
        interpreter._patch_lang = patch_lang_where_needed

    reduce_ops = getattr(interpreter, "ReduceOps", None)
    if hasattr(reduce_ops, "generic_reduce") and not getattr(reduce_ops.generic_reduce, "folds_at_once", False):
        one_at_a_time = reduce_ops.generic_reduce

        def generic_reduce(self, input):
            # The interpreter's own fold (each output's values combined in order along the axis, kept in the
            # input's dtype), done for every output at once: one call of the combine function per step along the
            # axis instead of one per value. The same values in the same order: the same bits, many times faster.
            try:
                values, axis = self.unravel(input, self.axis)
                datas = [v.handle.data for v in values]
                kept = [d.take(0, axis=axis) for d in datas]
                extreme = EXTREMES.get(getattr(self.combine_fn.fn, "__name__", "")) if len(datas) == 1 else None
                welford = welford_form(self.combine_fn.fn, datas)
                if extreme is not None:  # Inductor's max/min, a NaN winning: numpy's own
                    kept = [extreme(datas[0], axis=axis)]
                elif welford is not None:  # the same steps in numpy: no Triton tensor made per step
                    kept = fold_welford(datas, axis, kept, guarded=welford)
                else:
                    for k in range(1, datas[0].shape[axis]):
                        acc = [self.to_tensor(a, v.dtype) for a, v in zip(kept, values)]
                        step = [self.to_tensor(d.take(k, axis=axis), v.dtype) for d, v in zip(datas, values)]
                        out = self.combine_fn.fn(*acc, *step)
                        out = out if isinstance(out, tuple) else (out,)
                        kept = [np.broadcast_to(np.asarray(o.handle.data if isinstance(o, tl.core.tensor) else o),
                                                np.shape(a)).astype(d.dtype) for o, a, d in zip(out, kept, datas)]
            except Exception:  # a combine function that branches on values: the interpreter's way
                return one_at_a_time(self, input)
            ret = []
            for value, data in zip(values, kept):
                data = np.asarray(data)
                if self.keep_dims:
                    for _ in range(1 if self.axis is not None else len(datas[0].shape)):
                        data = np.expand_dims(data, axis if self.axis is not None else 0)
                elif self.axis is None:
                    data = data.item()
                ret.append(self.to_tensor(data, value.dtype))
            return ret

        # Inductor's maximum/minimum (and harvest's helper_ copies): a NaN wins, as with numpy's max/min; equal
        # values are equal whichever is kept (a 0.0 and a -0.0 too, as the check compares them)
        EXTREMES = {"maximum": np.max, "helper_maximum": np.max, "minimum": np.min, "helper_minimum": np.min}
        WELFORD = ("welford_combine", "helper_welford_combine", "helper_welford_combine_before_2_13")

        def welford_form(fn, datas):
            # Inductor's welford_combine (or harvest's copy) over float (mean, m2, weight): whether it guards equal
            # means (torch 2.13 on: "mean_1 == mean_2"); None for any other combine function
            if getattr(fn, "__name__", "") not in WELFORD or len(datas) != 3 or any(d.dtype.kind != "f" for d in datas):
                return None
            import inspect

            try:
                return "mean_1 == mean_2" in inspect.getsource(fn)
            except (OSError, TypeError):
                return None

        def fold_welford(datas, axis, kept, guarded):
            # welford_combine's operations, in its order and its dtype, one step along the axis at a time (the
            # interpreter's own order): the same bits as calling it, without a Triton tensor per operation
            mean, m2, weight = kept
            zero = np.zeros((), mean.dtype)
            with np.errstate(all="ignore"):  # (both sides of each where are computed, as in the interpreter)
                for k in range(1, datas[0].shape[axis]):
                    mean_2, m2_2, weight_2 = (d.take(k, axis=axis) for d in datas)
                    delta = mean_2 - mean
                    if guarded:
                        delta = np.where(mean == mean_2, zero, delta)
                    new_weight = weight + weight_2
                    share = np.where(new_weight == zero, zero, weight_2 / new_weight)
                    mean, m2, weight = mean + delta * share, m2 + m2_2 + delta * delta * weight * share, new_weight
            return [mean, m2, weight]

        generic_reduce.folds_at_once = True
        reduce_ops.generic_reduce = generic_reduce

    libdevice.exp = unary(lambda v: np.exp(v))
    return libdevice
# <<< harness: body
