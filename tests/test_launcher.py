"""harvest.capture.launcher on the CPU: how `harvest run --with` launches a swapped module's kernel without going
through Triton's JIT at every launch. What needs a GPU (the compiled kernel's launcher itself) is stood in for by a
recording fake here and run for real on the device (docs/benchmarks.md); the binding is checked against Triton's own
binder, and the specialization key against Triton's own specialization."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys

import pytest
import torch
from conftest import ROOT

sys.path.insert(0, str(ROOT / "tests" / "targets"))
import launch_kernels  # noqa: E402

from harvest.capture.launcher import DirectLaunch, argument_key, direct_launch_unavailable, made_keyer  # noqa: E402


class FakeCompiled:
    """What Triton's JIT returns for a launch (a CompiledKernel), with a launcher that records its calls."""

    function = "cu-function"
    packed_metadata = ("packed",)

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def launch_metadata(self, grid, stream, *args):
        return None

    def run(self, *args):
        self.calls.append(args)


class JitStandIn:
    """The JIT's first launch: counts launches, returns one FakeCompiled per specialization it is asked for."""

    def __init__(self) -> None:
        self.launches: list[tuple] = []
        self.kernels: list[FakeCompiled] = []

    def __call__(self, grid, args, kwargs):
        self.launches.append((grid, args, kwargs))
        self.kernels.append(FakeCompiled())
        return self.kernels[-1]


def direct(fn) -> tuple[DirectLaunch, JitStandIn]:
    jit = JitStandIn()
    return DirectLaunch(fn, first_launch=jit, stream=lambda: 7), jit


def test_the_first_launch_goes_through_the_jit_and_the_next_ones_call_the_compiled_launcher():
    launcher, jit = direct(launch_kernels.scale_kernel)
    a, out = torch.zeros(64), torch.zeros(64)
    launcher[(2,)](a, out, 64, 2.0, BLOCK=32, num_warps=4)
    assert len(jit.launches) == 1 and launcher.jit_launches == 1 and launcher.direct_launches == 0
    launcher[(2,)](a, out, 64, 3.0, BLOCK=32, num_warps=4)
    launcher[(2, 3)](a, out, 64, 3.0, BLOCK=32, num_warps=4)
    assert len(jit.launches) == 1 and launcher.direct_launches == 2
    first, second = jit.kernels[0].calls
    hooks = (launcher.hooks.launch_enter_hook, launcher.hooks.launch_exit_hook)
    # grid, stream, the compiled function and metadata, no launch metadata (no hook), the hooks, then every
    # parameter in the kernel's order: the constexprs from the kwargs and the defaults included
    assert first == (2, 1, 1, 7, "cu-function", ("packed",), None, *hooks, a, out, 64, 3.0, 32, 4)
    assert second[:3] == (2, 3, 1)


def test_the_binding_is_tritons_own():
    """The values passed to the launcher, in order, and the launch options, as Triton's binder makes them."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend
    from triton.runtime.jit import create_function_from_signature

    fn = launch_kernels.scale_kernel
    binder = create_function_from_signature(fn.signature, fn.params, make_backend(GPUTarget("cuda", 90, 32)))
    launcher, _ = direct(fn)
    a, out = torch.zeros(64), torch.zeros(64)
    for args, kwargs in [((a, out, 64, 2.0), {"BLOCK": 32, "num_warps": 4}),
                         ((a, out, 64, 2.0, 16), {"EXTRA": 8, "num_stages": 2}),
                         ((a, out), {"n": 64, "scale": 1.5, "BLOCK": 128})]:
        bound, _, options = binder(*args, **kwargs)
        assert launcher.bind(args, kwargs) == (list(bound.values()), options)
    assert launcher.bind((a, out), {"BLOCK": 32}) is None  # n and scale missing: the JIT says what is wrong


def test_one_key_is_one_triton_specialization():
    """Arguments that get one key get one specialization from Triton's binder, so a launch never takes a kernel
    compiled for another; and the key tells apart what Triton tells apart."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend
    from triton.runtime.jit import create_function_from_signature

    backend = make_backend(GPUTarget("cuda", 90, 32))
    storage = torch.zeros(4096)
    tensors = [storage[offset:offset + 64] for offset in (0, 1, 4, 8)] + [torch.zeros(64, dtype=torch.float16)]
    ints = [1, 2, 16, 17, 64, 2**31 - 16, 2**31, 2**40]
    for fn in (launch_kernels.scale_kernel, launch_kernels.copy_kernel):
        binder = create_function_from_signature(fn.signature, fn.params, backend)
        launcher, _ = direct(fn)
        seen: dict = {}
        for a, out, n in itertools.product(tensors, tensors[:2], ints):
            args = (a, out, n, 2.0) if fn is launch_kernels.scale_kernel else (a, out, n)
            _, specialization, _ = binder(*args, BLOCK=32)
            key = launcher.key(*launcher.bind(args, {"BLOCK": 32}))
            assert seen.setdefault(key, str(specialization)) == str(specialization), (args, key)
        assert len(set(seen.values())) > 4  # (alignment, dtype and integer width all told apart)


def test_argument_keys():
    storage = torch.zeros(64)
    assert argument_key(storage) == (torch.float32, True) and argument_key(storage[1:]) == (torch.float32, False)
    assert argument_key(True) == (bool, True) and argument_key(1) != argument_key(2) != argument_key(True)
    assert argument_key(32) == (int, False, True, True, True) and argument_key(2**31)[3] is False
    assert argument_key(0.5) == (float,) and argument_key(None) == (None,) and argument_key((1, 2)) is None


def test_a_new_specialization_or_config_goes_through_the_jit_again():
    launcher, jit = direct(launch_kernels.scale_kernel)
    storage = torch.zeros(256)
    launcher[(1,)](storage[:64], storage[64:128], 64, 2.0, BLOCK=32)
    launcher[(1,)](storage[1:65], storage[64:128], 64, 2.0, BLOCK=32)  # a 4-byte aligned input
    launcher[(1,)](storage[:64], storage[64:128], 64, 2.0, BLOCK=64)  # another constexpr
    launcher[(1,)](storage[:64], storage[64:128], 64, 2.0, BLOCK=32, num_warps=8)  # another option
    launcher[(1,)](storage[:64], storage[64:128], 64, 2.0, BLOCK=32, EXTRA=[1])  # no key: the JIT decides
    launcher[(1,)](storage[:64], storage[64:128], 64, 2.0, BLOCK=32)  # the first again: direct
    assert launcher.jit_launches == 5 and launcher.direct_launches == 1


def test_a_callable_grid_gets_the_bound_arguments_as_tritons_does():
    launcher, jit = direct(launch_kernels.scale_kernel)
    a, out = torch.zeros(64), torch.zeros(64)
    grid = lambda meta: (64 // meta["BLOCK"], meta["EXTRA"])  # noqa: E731
    launcher[grid](a, out, 64, 2.0, BLOCK=16)
    launcher[grid](a, out, 64, 2.0, BLOCK=16)
    assert jit.kernels[0].calls[0][:3] == (4, 4, 1)


def test_under_the_interpreter_the_jit_launches_and_says_why(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert direct_launch_unavailable() == "the Triton interpreter runs them on the CPU path, where nothing is compiled"
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert direct_launch_unavailable() == ""


@pytest.mark.parametrize("kwargs", [{"BLOCK": 32, "num_warps": 4}])
def test_a_launch_the_jit_refuses_raises_the_jits_error(kwargs):
    def refusing(grid, args, kw):
        raise TypeError("dynamic_func() missing 1 required positional argument: 'scale'")

    launcher = DirectLaunch(launch_kernels.scale_kernel, first_launch=refusing, stream=lambda: 7)
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        launcher[(1,)](torch.zeros(4), torch.zeros(4), 4, **kwargs)


def test_a_launcher_that_refuses_the_call_gives_the_launches_to_the_jit_and_says_why():
    told = []
    jit = JitStandIn()
    launcher = DirectLaunch(launch_kernels.scale_kernel, first_launch=jit, stream=lambda: 7, on_fallback=told.append)
    a, out = torch.zeros(64), torch.zeros(64)
    launcher[(1,)](a, out, 64, 2.0, BLOCK=32)

    def refuse(*args):
        raise TypeError("function takes exactly 17 arguments (15 given)")

    jit.kernels[0].run = refuse
    for _ in range(3):
        launcher[(1,)](a, out, 64, 2.0, BLOCK=32)
    assert len(jit.launches) == 4 and launcher.direct_launches == 0
    assert told == ["the direct launch failed (TypeError: function takes exactly 17 arguments (15 given)); launched "
                    "through Triton's JIT"]


def test_the_written_out_keyer_gives_argument_keys_and_nothing_for_other_kinds():
    storage = torch.zeros(64)
    args = (storage, storage[1:], 16, True, 0.5, None)
    keyer = made_keyer(args)
    assert keyer(*args) == tuple(map(argument_key, args))
    assert keyer(storage, storage, 1, False, 1.5, None) == tuple(map(argument_key, (storage, storage, 1, False, 1.5, None)))
    # another kind of value where the keyer was made for one: None there (no kernel is taken), or it raises
    assert keyer(storage, storage, True, 1, 2, None)[2:5] == (None, None, None)
    with pytest.raises(AttributeError):
        keyer(3, storage, 16, True, 0.5, None)


def test_the_first_specialization_gets_a_launch_written_out_and_others_go_the_general_way():
    launcher, jit = direct(launch_kernels.scale_kernel)
    storage = torch.zeros(256)
    assert launcher.fast is DirectLaunch.launch_generally
    launcher[(1,)](storage[:64], storage[64:128], 64, 2.0, BLOCK=32)
    assert launcher.fast is not DirectLaunch.launch_generally
    launcher[(1,)](storage[:64], storage[64:128], 64, 2.0, BLOCK=32)  # written out: the compiled launcher
    launcher[(1,)](storage[1:65], storage[64:128], 64, 2.0, BLOCK=32)  # misaligned: the JIT, then the general way
    launcher[(1,)](storage[1:65], storage[64:128], 64, 2.0, BLOCK=32)
    launcher[(1,)](storage[:64], storage[64:128], 48, 2.0, BLOCK=32)  # another size, the same specialization
    assert len(jit.launches) == 2 and launcher.direct_launches == 3
    (written, general), [misaligned] = jit.kernels[0].calls, jit.kernels[1].calls
    plain = lambda call: [v.data_ptr() if isinstance(v, torch.Tensor) else v for v in call[9:]]  # noqa: E731
    at = storage.data_ptr()
    assert plain(written) == [at, at + 256, 64, 2.0, 32, 4]  # (the default EXTRA=4 last)
    assert plain(general) == [at, at + 256, 48, 2.0, 32, 4] and plain(misaligned)[0] == at + 4


class StaticStandIn:
    """torch's static CUDA launcher for a compiled kernel (what needs a GPU): records the values each launch passes."""

    def __init__(self, kept: tuple[int, ...], refuse: bool = False) -> None:
        self.kept, self.refuse, self.calls = kept, refuse, []

    def __call__(self, kernel):  # DirectLaunch's `static`: (run, kept) for a compiled kernel
        return self.run, self.kept

    def run(self, *args):
        if self.refuse:
            raise TypeError("expected 4 arguments, got 5")
        self.calls.append(args)


def test_a_kernel_the_static_launcher_takes_is_launched_by_it_with_only_the_values_not_compiled_in():
    jit, static = JitStandIn(), StaticStandIn(kept=(0, 1, 3))  # n compiled in (a 1), BLOCK and EXTRA constexprs
    launcher = DirectLaunch(launch_kernels.scale_kernel, first_launch=jit, stream=lambda: 7, static=static)
    a, out = torch.zeros(64), torch.zeros(64)
    launcher[(2,)](a, out, 1, 2.0, BLOCK=32)  # compiled by the JIT, which launches it
    launcher[(2,)](a, out, 1, 3.0, BLOCK=32)  # the written-out launch
    launcher[lambda meta: (64 // meta["BLOCK"],)](a, out, 1, 4.0, BLOCK=32)  # a callable grid: the general way
    assert launcher.static_why == "" and launcher.direct_launches == 2 and jit.kernels[0].calls == []
    assert static.calls == [(2, 1, 1, 7, a, out, 3.0), (2, 1, 1, 7, a, out, 4.0)]


def test_a_launch_the_static_launcher_refuses_goes_to_tritons_launcher_and_the_run_is_told_why():
    told: list[str] = []
    jit, static = JitStandIn(), StaticStandIn(kept=(0, 1, 2, 3), refuse=True)
    launcher = DirectLaunch(launch_kernels.scale_kernel, first_launch=jit, stream=lambda: 7, static=static,
                            on_static_refused=told.append)
    a, out = torch.zeros(64), torch.zeros(64)
    for scale in (2.0, 3.0, 4.0):
        launcher[(2,)](a, out, 64, scale, BLOCK=32)
    assert told == ["torch's static CUDA launcher refused a launch (TypeError: expected 4 arguments, got 5)"]
    assert launcher.static_why == told[0] and [call[-3] for call in jit.kernels[0].calls] == [3.0, 4.0]
    assert launcher.direct_launches == 2 and len(jit.launches) == 1


def test_without_a_static_launcher_the_compiled_kernel_is_launched_by_triton_and_it_says_why(monkeypatch):
    import torch._inductor.config as inductor_config

    from harvest.capture.launcher import static_launcher

    jit = JitStandIn()
    launcher = DirectLaunch(launch_kernels.scale_kernel, first_launch=jit, stream=lambda: 7)
    a, out = torch.zeros(64), torch.zeros(64)
    launcher[(2,)](a, out, 64, 2.0, BLOCK=32)
    launcher[(2,)](a, out, 64, 3.0, BLOCK=32)
    assert launcher.static_why == "the compiled kernel has no cubin" and len(jit.kernels[0].calls) == 1
    for name in ("use_static_triton_launcher", "use_static_cuda_launcher"):
        if hasattr(inductor_config, name):
            monkeypatch.setattr(inductor_config, name, False)
    assert static_launcher(FakeCompiled()).startswith("Inductor's static CUDA launcher is off here")


def test_the_static_launcher_gets_the_values_of_the_parameters_triton_did_not_compile_in():
    """A kernel compiled offline for sm_90 with n specialized to 1 (as Triton does for a 1): torch's own static
    launcher, made for it, takes three values (two pointers and the float), and static_positions names the same.
    (In a process of its own: a worker that ran the interpreter has patched triton.language.)"""
    script = """
import triton, launch_kernels
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from torch._inductor.runtime.static_triton_launcher import StaticallyLaunchedCudaKernel
from harvest.capture.launcher import static_positions
signature = {"a_ptr": "*fp32", "out_ptr": "*fp32", "n": "constexpr", "scale": "fp32", "BLOCK": "constexpr",
             "EXTRA": "constexpr"}
kernel = triton.compile(ASTSource(launch_kernels.scale_kernel, signature, {(2,): 1, (4,): 32, (5,): 4}),
                        target=GPUTarget("cuda", 90, 32))
kernel._cubin_path = None
static = StaticallyLaunchedCudaKernel(kernel)
print(static.arg_tys, static_positions(kernel, static))
"""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "tests" / "targets")])
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[-2] == "OOf (0, 1, 3)"


SWAPPED_MODULE = '''import triton
from launch_kernels import scale_kernel

CONFIG = {"BLOCK": 32, "num_warps": 4}


def launch(a_ptr, out_ptr, n, scale, config=CONFIG):
    """Launch scale_kernel."""
    grid = (triton.cdiv(n, config["BLOCK"]),)
    scale_kernel[grid](a_ptr, out_ptr, n, scale, **config)
'''


class EventLog:  # what KernelSwaps reads of the child's event log: Inductor's kernel source, and the events it writes
    def __init__(self) -> None:
        self.events: list[dict] = []

    def kernel_source(self, graph, name):
        return "inductor's kernel"

    def write(self, event):
        self.events.append(event)


def swaps_of(tmp_path, monkeypatch, module_text):
    """KernelSwaps for one module in place of Inductor's triton_poi_0 of graph 0, launched by a DirectLaunch whose JIT
    and static launcher are stand-ins (a GPU's): the swap's side as `harvest run --with` makes it on a GPU."""
    import json

    from harvest.capture import swap

    jit, static = JitStandIn(), StaticStandIn(kept=(0, 1, 2, 3))

    class StandInLaunch(DirectLaunch):
        def __init__(self, fn, **kwargs):
            super().__init__(fn, first_launch=jit, stream=lambda: 7, static=static, **kwargs)

    monkeypatch.setattr(swap, "DirectLaunch", StandInLaunch)
    monkeypatch.setattr(swap, "direct_launch_unavailable", lambda: "")
    (tmp_path / "module.py").write_text(module_text)
    spec = [{"graph": 0, "kernel": "triton_poi_0", "source_sha": swap.source_sha("inductor's kernel"),
             "module": str(tmp_path / "module.py"), "module_kernel": "scale_kernel",
             "params": [["in_ptr0", "a_ptr"], ["out_ptr0", "out_ptr"], ["xnumel", "n"], ["ks0", "scale"]]}]
    (tmp_path / "swaps.json").write_text(json.dumps(spec))
    log = EventLog()
    return swap.KernelSwaps(tmp_path / "swaps.json", log), jit, static, log


def test_a_swap_whose_launch_is_of_harvests_shape_launches_the_compiled_kernel_on_launchs_grid(tmp_path, monkeypatch):
    swaps, jit, static, log = swaps_of(tmp_path, monkeypatch, SWAPPED_MODULE)
    a, out = torch.zeros(64), torch.zeros(64)
    params = ["out_ptr0", "ks0", "in_ptr0", "xnumel"]  # Inductor's order, not the module's
    for scale in (2.0, 3.0, 4.0):
        swaps.runner(0, "triton_poi_0", params, (out, scale, a, 64), stream=5)()
    swapped = swaps.bound[(0, "triton_poi_0")][1]
    assert swapped.grid == (2,) and swapped.grid_reads == (2,)  # n, read by the grid, is an integer
    swaps.runner(0, "triton_poi_0", params, (out, 5.0, a, 96), stream=5)()  # another n: through launch() again
    assert len(jit.launches) == 1 and static.calls == [(2, 1, 1, 5, a, out, 64, 3.0), (2, 1, 1, 5, a, out, 64, 4.0),
                                                      (3, 1, 1, 5, a, out, 96, 5.0)]
    assert [e["launch"] for e in log.events if e["event"] == "swapped"] == ["static"]


def test_a_swap_whose_launch_was_edited_beyond_its_grid_calls_launch_at_every_launch(tmp_path, monkeypatch):
    edited = SWAPPED_MODULE.replace('    grid = (', '    scale = scale * 2\n    grid = (')
    swaps, jit, static, _ = swaps_of(tmp_path, monkeypatch, edited)
    a, out = torch.zeros(64), torch.zeros(64)
    for scale in (2.0, 3.0):
        swaps.runner(0, "triton_poi_0", ["in_ptr0", "out_ptr0", "xnumel", "ks0"], (a, out, 64, scale))()
    assert swaps.bound[(0, "triton_poi_0")][1].grid is None and static.calls == [(2, 1, 1, 7, a, out, 64, 6.0)]


def test_the_written_out_launch_takes_any_integer_triton_specializes_alike():
    """A seed offset or a size that changes from launch to launch, and that Triton specializes alike (not 1, a
    multiple of 16 or not, in int32), keeps the written-out launch: BERT's dropout layer norm, one launch a layer,
    each with its own offset, went the general way after the first (twice Inductor's host time on an H100)."""
    jit, static = JitStandIn(), StaticStandIn(kept=(0, 1, 2))
    launcher = DirectLaunch(launch_kernels.copy_kernel, first_launch=jit, stream=lambda: 7, static=static)
    a, out = torch.zeros(64), torch.zeros(64)
    for n in (64, 48, 4096, 50, 1, 2**40):
        launcher[(2,)](a, out, n, BLOCK=32)
    assert [call[-1] for call in static.calls] == [48, 4096]  # 64 compiled by the JIT; 50, 1, 2**40: new ones
    assert len(jit.launches) == 4 and launcher.direct_launches == 2
    assert launcher.fast((2,), (a, out, 80), {"BLOCK": 32}) and not launcher.fast((2,), (a, out, 81), {"BLOCK": 32})


def test_a_launch_that_fails_on_the_device_stops_the_run_in_one_line_also_when_launch_is_bypassed(tmp_path, monkeypatch):
    from harvest.capture.swap import SwapRefused

    swaps, _, static, log = swaps_of(tmp_path, monkeypatch, SWAPPED_MODULE)
    a, out = torch.zeros(64), torch.zeros(64)
    params = ["in_ptr0", "out_ptr0", "xnumel", "ks0"]
    for scale in (2.0, 3.0):
        swaps.runner(0, "triton_poi_0", params, (a, out, 64, scale))()
    assert swaps.bound[(0, "triton_poi_0")][1].grid == (2,)  # launch() bypassed from here on

    def failing(*args):
        raise RuntimeError("CUDA error: an illegal memory access was encountered\nCUDA kernel errors might be ...")

    static.run = failing
    swaps.bound[(0, "triton_poi_0")][1].direct.compiled = {}  # (the written-out launch holds the old run)
    swaps.bound[(0, "triton_poi_0")][1].direct.fast = lambda grid, args, kwargs: failing()
    with pytest.raises(SwapRefused, match=r"module.py: RuntimeError: CUDA error: an illegal memory access was encountered$"):
        swaps.runner(0, "triton_poi_0", params, (a, out, 64, 4.0))()
    assert log.events[-1]["event"] == "swap_failed"
