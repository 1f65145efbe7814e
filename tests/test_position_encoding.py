import numpy as np
import pytest

from cases import to_numpy
from kerattn.layers import PositionEmbedding, SinusoidalPositionEncoding


def np_sinusoid(length, d, start=0, base=10000.0):
    """Vaswani et al. (2017), section 3.5.

    PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(same).
    """
    pe = np.zeros((length, d))
    for pos in range(start, start + length):
        for i in range(0, d, 2):
            angle = pos / base ** (i / d)
            pe[pos - start, i] = np.sin(angle)
            if i + 1 < d:
                pe[pos - start, i + 1] = np.cos(angle)
    return pe


@pytest.mark.parametrize("d", [16, 7])
def test_sinusoid_matches_paper(d):
    x = np.zeros((2, 11, d), "float32")
    pe = to_numpy(SinusoidalPositionEncoding()(x))
    assert pe.shape == (2, 11, d)
    np.testing.assert_allclose(pe[1], np_sinusoid(11, d), atol=1e-5)
    shifted = to_numpy(SinusoidalPositionEncoding()(x, start_index=5))
    np.testing.assert_allclose(shifted[0], np_sinusoid(11, d, start=5), atol=1e-5)


def test_sinusoid_matches_keras_hub():
    keras_hub = pytest.importorskip(
        "keras_hub", reason="keras-hub is an extra; the dev extra installs it"
    )
    x = np.random.default_rng(0).standard_normal((2, 13, 12)).astype("float32")
    ours = to_numpy(SinusoidalPositionEncoding()(x))
    theirs = to_numpy(keras_hub.layers.SinePositionEncoding()(x))
    np.testing.assert_allclose(ours, theirs, atol=1e-5)


def test_learned_embedding_matches_keras_hub():
    keras_hub = pytest.importorskip(
        "keras_hub", reason="keras-hub is an extra; the dev extra installs it"
    )
    x = np.random.default_rng(1).standard_normal((2, 6, 8)).astype("float32")
    ours = PositionEmbedding(sequence_length=10)
    theirs = keras_hub.layers.PositionEmbedding(sequence_length=10)
    theirs(x)
    ours(x)
    ours.set_weights(theirs.get_weights())
    np.testing.assert_allclose(to_numpy(ours(x)), to_numpy(theirs(x)), atol=1e-6)
    table = to_numpy(ours.embeddings)
    np.testing.assert_allclose(
        to_numpy(ours(x[:, :3], start_index=4))[0], table[4:7], atol=1e-6
    )


def test_learned_embedding_too_long():
    layer = PositionEmbedding(sequence_length=4)
    with pytest.raises(ValueError, match="sequence_length"):
        layer(np.zeros((1, 5, 3), "float32"))
