"""Argument checks shared by the zoo builders."""


def check_builder_args(dropout=0.0, **sizes):
    """Every size a positive int, `dropout` in [0, 1); else a ValueError."""
    for arg, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"`{arg}` must be a positive integer; got {value!r}.")
    if not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
        raise ValueError(f"`dropout` must be in [0, 1); got {dropout!r}.")


def check_model(model, what):
    """A ValueError unless `model` is a `keras.Model` (`what` names it)."""
    import keras

    if not isinstance(model, keras.Model):
        raise ValueError(f"`model` must be {what}; received {model!r}.")


def numbered_layers(model, prefix):
    """The layers named `<prefix>_1`, `<prefix>_2`, ... of `model`, in order."""
    import re

    pattern = re.compile(re.escape(prefix) + r"_(\d+)")
    found = {}
    for layer in model.layers:
        match = pattern.fullmatch(layer.name)
        if match:
            found[int(match.group(1))] = layer
    return [found[k] for k in sorted(found)]


def from_preset(presets, preset, **given):
    """The sizes of `presets[preset]`, with every argument not None on top.

    `presets["paper"]` holds every size keyword of the builder (the paper's
    values); a smaller preset names what it changes.

    Raises:
        ValueError: for a preset that is not in `presets`.
    """
    if preset not in presets:
        raise ValueError(f"`preset` must be one of {tuple(presets)}; got "
                         f"{preset!r}.")
    config = dict(presets["paper"], **presets[preset])
    config.update({k: v for k, v in given.items() if v is not None})
    return config
