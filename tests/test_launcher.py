"""harvest.capture.launcher on the CPU: how `harvest run --with` launches a swapped module's kernel without going
through Triton's JIT at every launch. What needs a GPU (the compiled kernel's launcher itself) is stood in for by a
recording fake here and run for real on the device (docs/benchmarks.md); the binding is checked against Triton's own
binder, and the specialization key against Triton's own specialization."""

from __future__ import annotations

import itertools
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
