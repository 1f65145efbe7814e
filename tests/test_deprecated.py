"""Each deprecated alias warns with a `DeprecationWarning` and still works."""

import keras
import numpy as np
import pytest

from kerattn import zoo
from kerattn.datasets import WordVocabulary


@pytest.fixture(scope="module")
def model():
    return zoo.bahdanau_nmt(20, 30, preset="tiny")


def test_incremental_warns_and_returns_the_model(model):
    with pytest.warns(DeprecationWarning, match="zoo.incremental.*deprecated"):
        assert zoo.incremental(model) is model


def test_incremental_warns_and_still_rejects_other_models():
    inputs = keras.Input((3,))
    other = keras.Model(inputs, keras.layers.Dense(2)(inputs))
    with pytest.warns(DeprecationWarning, match="zoo.incremental"):
        with pytest.raises(ValueError,
                           match="`model` must be a generative kerattn.zoo"):
            zoo.incremental(other)


def test_source_input_warns_and_reads_encoder_input_name(model):
    with pytest.warns(DeprecationWarning, match="source_input.*encoder_input_name"):
        assert model.source_input == model.encoder_input_name == "source_ids"
    captioner = zoo.show_attend_tell(30, feature_shape=(6, 8), preset="tiny")
    with pytest.warns(DeprecationWarning, match="source_input"):
        assert captioner.source_input == "features"
    with pytest.raises(AttributeError, match="no_such_attribute"):
        model.no_such_attribute


def test_a_subclass_setting_source_input_warns_and_sets_encoder_input_name():
    with pytest.warns(DeprecationWarning, match="source_input"):
        class Reader(zoo.GenerativeModel):
            source_input = "document_ids"

    assert Reader.encoder_input_name == "document_ids"
    ids = keras.Input((None,), dtype="int32", name="document_ids")
    reader = Reader({"document_ids": ids},
                    keras.layers.Embedding(10, 4)(ids))
    assert reader.inputs_are_ids
    assert reader.encoder_input_shape == (None,)
    assert np.shape(reader.predict({"document_ids": np.ones((1, 2), "int32")},
                                   verbose=0)) == (1, 2, 4)


def test_saving_a_model_reads_no_deprecated_alias(model, tmp_path, recwarn):
    # Keras' saving reads every attribute of a model: the alias is not one.
    model.save(str(tmp_path / "m.keras"))
    keras.saving.load_model(str(tmp_path / "m.keras"))
    assert not [w for w in recwarn if issubclass(w.category, DeprecationWarning)
                and "source_input" in str(w.message)]


@pytest.mark.parametrize("name", ["TextCodec", "vocabulary_from_json"])
def test_export_codec_aliases_warn_and_are_the_datasets_ones(name):
    import kerattn.datasets
    import kerattn.export

    with pytest.warns(DeprecationWarning, match=f"kerattn.export.{name}.*"
                      f"kerattn.datasets.{name}"):
        alias = getattr(kerattn.export, name)
    assert alias is getattr(kerattn.datasets, name)
    if name == "vocabulary_from_json":     # it still works
        vocab = WordVocabulary(["open", "file"])
        assert alias(vocab.to_json()).itos == vocab.itos
    with pytest.raises(AttributeError, match="no_such_name"):
        kerattn.export.no_such_name


def test_distribute_layout_map_warns_and_is_the_zoos():
    """The layout moved to the zoo (distribution imports no model)."""
    from kerattn import distribute

    mesh = keras.distribution.DeviceMesh((2, 2), ["batch", "model"],
                                         [f"cpu:{i}" for i in range(4)])
    with pytest.warns(DeprecationWarning, match="distribute.layout_map"):
        old = distribute.layout_map("transformer_nmt", mesh)
    new = zoo.layout_map("transformer_nmt", mesh)
    assert old["decoder_1/ffn_inner/kernel"].axes == \
        new["decoder_1/ffn_inner/kernel"].axes == (None, "model")
    with pytest.warns(DeprecationWarning):
        with pytest.raises(ValueError, match="`name` must be one of"):
            distribute.layout_map("bahdanau_nmt", mesh)


def test_model_parallel_of_a_name_warns_and_still_works():
    from kerattn import distribute

    if keras.backend.backend() != "jax":
        with pytest.raises(ValueError, match="`KERAS_BACKEND` must be 'jax'"):
            distribute.model_parallel("transformer_nmt", model_axis_size=1)
        return
    with pytest.warns(DeprecationWarning, match="model_parallel"):
        strategy = distribute.model_parallel("transformer_nmt", model_axis_size=1)
    assert strategy.kind == "model"
