"""Parse: takes the text of one Inductor wrapper module (an output_code.py, as a `CapturedGraph` holds it); reads its
kernels (source, kind, signature, configs, the comment above each) and its call(): launches, buffers, extern calls,
size symbols; gives a `Graph` of `Kernel`s and `Launch`es (harvest/model.py).

Pure: a string in, a `Graph` out; no disk, no torch. The code is read with libcst. Only the comment block Inductor
writes above each kernel (source nodes, ATen mapping, graph fragment) is read with regular expressions.

Handles torch 2.4 to 2.13 wrappers: `def call(args)` or `Runner.call(self, args)`, graph partitions called from call,
`with torch.cuda._DeviceGuard(...)` nesting, list or dict `size_hints`, int- or name-keyed signatures, `grid=grid(n)`.
Python scalars passed to call() (`arg0_1 = 64` in get_args) are not buffers: they are in `Graph.inputs`, their size
symbols in `Graph.symbols`, and their example values in `Graph.scalar_values`.
"""

from harvest.parse.values import parse_tensor_meta
from harvest.parse.wrapper import parse_output_code

__all__ = ["parse_output_code", "parse_tensor_meta"]
