"""Work-arounds for Keras bugs that kerattn's layers meet.

Each one is small, says which bug it avoids, and is tested in
`tests/test_keras_fixes.py` against the bug itself, so that it can be
removed the day Keras fixes it.
"""

import contextlib

import keras

try:  # Keras' own state of a save or a load; private, hence the guard.
    from keras.src.backend.common import global_state as _global_state
except ImportError:  # pragma: no cover - a Keras that moved it
    _global_state = None

_SHARING_KEYS = ("shared_objects/id_to_obj_map",
                 "shared_objects/id_to_config_map")


@contextlib.contextmanager
def _outside_object_sharing():
    """Run the block with Keras' object-sharing scope of a load turned off.

    While `keras.saving.load_model` runs, Keras remembers every object it
    serializes by `id()`, and hands back an object it has already built
    when a config carries a known id. A layer that makes a `Bidirectional`
    in its `build` (as `HierarchicalAttention` does, during a load) makes
    Keras serialize the wrapped layer twice (forward, then backward), so
    that id is marked shared and the backward copy remembered under it.
    Once that wrapped layer is garbage-collected, the next layer created
    can get the same `id()`, and its "forward" copy is then the earlier
    backward layer: `ValueError: Forward layer and backward layer should
    have different go_backwards value`, on some loads and not others.
    Nothing built here is shared on purpose, so nothing is lost.
    """
    if _global_state is None:
        yield
        return
    saved = [_global_state.get_global_attribute(k) for k in _SHARING_KEYS]
    for key in _SHARING_KEYS:
        _global_state.set_global_attribute(key, None)
    try:
        yield
    finally:
        for key, value in zip(_SHARING_KEYS, saved):
            _global_state.set_global_attribute(key, value)


def bidirectional(layer, **kwargs):
    """`keras.layers.Bidirectional(layer, **kwargs)`, safe to call from a
    `build` that runs while a model loads (see `_outside_object_sharing`).

    Example:

    >>> rnn = bidirectional(keras.layers.GRU(3, return_sequences=True),
    ...                     name="encoder")
    >>> rnn.forward_layer.go_backwards, rnn.backward_layer.go_backwards
    (False, True)
    """
    with _outside_object_sharing():
        return keras.layers.Bidirectional(layer, **kwargs)
