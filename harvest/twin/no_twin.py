"""The twin's one refusal: a kernel outside what it translates."""


class NoTwin(Exception):
    """This kernel is outside what the CUDA twin translates; the message says why."""
