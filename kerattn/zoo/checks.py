"""Argument checks shared by the zoo builders."""


def check_builder_args(dropout=0.0, **sizes):
    """Every size a positive int, `dropout` in [0, 1); else a ValueError."""
    for arg, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"`{arg}` must be a positive integer; got {value!r}.")
    if not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
        raise ValueError(f"`dropout` must be in [0, 1); got {dropout!r}.")
