"""harvest: turn what torch.compile generated into Triton kernels a person can read, run, check and tune.

    import harvest
    result = harvest.extract("examples/square_square.py", "extracted/square_square")
"""

from harvest.version import __version__


def extract(*args, **kwargs):
    """Capture every Inductor graph of a target and write one standalone module per Triton kernel.

    See harvest.api.extract for the arguments.
    """
    from harvest.api import extract as _extract

    return _extract(*args, **kwargs)


__all__ = ["extract", "__version__"]
