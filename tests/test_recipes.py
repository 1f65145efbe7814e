"""The translation recipe's pieces: bucketed batches, training, evaluation."""


import numpy as np
import pytest

from kerattn import zoo
from kerattn.datasets import LengthBucketedBatches, WordVocabulary, translation_arrays
from kerattn.recipes import translation

PAIRS = [("open the file", "ouvrir le fichier"),
         ("cannot open the file %s now", "impossible d'ouvrir le fichier %s"),
         ("permission denied", "permission refusée"),
         ("the directory is not empty and cannot be removed here",
          "le répertoire n'est pas vide et ne peut pas être supprimé ici")] * 10


def _arrays():
    src = WordVocabulary.build([s for s, _ in PAIRS])
    tgt = WordVocabulary.build([t for _, t in PAIRS])
    x, y, _ = translation_arrays(PAIRS, src, tgt)
    return src, tgt, x, y


def test_bucketed_batches_cover_every_pair_once_without_cutting():
    _, _, x, y = _arrays()
    batches = LengthBucketedBatches(x, y, batch_size=8, bucket_width=5, seed=1)
    seen = []
    for i in range(len(batches)):
        inputs, labels = batches[i]
        width = labels.shape[1]
        assert width % 5 == 0 and inputs["source_ids"].shape[1] == width
        # Every real token of a pair is kept: rows match the originals.
        for row in range(labels.shape[0]):
            real = labels[row][labels[row] != 0]
            matches = [j for j in range(len(y))
                       if np.array_equal(y[j][y[j] != 0], real)]
            assert matches
        seen.append(labels.shape[0])
    assert sum(seen) == len(y)
    # Similar lengths share a batch: fewer padded tokens than one width.
    padded = sum(batches[i][1].size for i in range(len(batches)))
    assert padded < y.size
    with pytest.raises(ValueError, match="`batch_size`"):
        LengthBucketedBatches(x, y, batch_size=0)


def test_evaluate_scores_bleu_by_source_length():
    pytest.importorskip("sacrebleu", reason="BLEU needs the [eval] extra's sacrebleu")
    src, tgt, x, y = _arrays()
    model = zoo.bahdanau_nmt(len(src), len(tgt), embedding_dim=8, units=8,
                             alignment_units=8, maxout_units=4)
    data = {"source_vocab": src, "target_vocab": tgt, "test": PAIRS[:4],
            "test_long": PAIRS[:4]}
    results = translation.evaluate(model, data, beam_width=2)
    assert set(results["bleu_beam2_by_source_length"]) == {"1-5", "6-10"}
    by_length = results["bleu_beam2_by_source_length"]
    assert by_length["1-5"]["sentences"] == by_length["6-10"]["sentences"] == 2
    assert results["beam_greedy_fallback"] is False
    assert 0 <= results["bleu_greedy"] <= 100 and len(results["examples_beam2"]) == 4


def test_first_two_batches_differ_in_width():
    """Keras' TF adapter reads the signature off the first batches."""
    _, _, x, y = _arrays()
    for seed in range(5):
        batches = LengthBucketedBatches(x, y, batch_size=4, seed=seed)
        assert batches[0][1].shape[1] != batches[1][1].shape[1]
        batches.on_epoch_end()
        assert batches[0][1].shape[1] != batches[1][1].shape[1]


def test_fit_on_bucketed_batches():
    import keras

    src, tgt, x, y = _arrays()
    model = zoo.bahdanau_nmt(len(src), len(tgt), embedding_dim=8, units=8,
                             alignment_units=8, maxout_units=4)
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, ignore_class=0))
    history = model.fit(LengthBucketedBatches(x, y, batch_size=4), epochs=2,
                        verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))


def test_compile_and_fit_is_the_one_training_path():
    import keras

    from kerattn.recipes.common import compile_and_fit

    src, tgt, x, y = _arrays()
    model = zoo.bahdanau_nmt(len(src), len(tgt), preset="tiny")
    history, summary = compile_and_fit(
        model, LengthBucketedBatches(x, y, batch_size=8),
        (x, y, 16), loss=keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, ignore_class=0),
        learning_rate=1e-2, warmup_steps=4, epochs=2, verbose=0)
    assert summary["epochs"] == 2 and summary["steps"] == 2 * 5
    assert summary["parameters"] == model.count_params()
    assert set(summary) >= {"final_loss", "final_val_loss", "train_minutes"}
    # The warm-up: the rate rises linearly from 0 to 1e-2 over 4 steps.
    schedule = model.optimizer.learning_rate if callable(
        getattr(model.optimizer, "learning_rate", None)) else model.optimizer._learning_rate
    assert np.isclose(float(schedule(2)), 0.5e-2)
    # Then a cosine decay over the other 6 steps to a tenth of the rate at
    # the last (the formula by hand: alpha + (1 - alpha) (1 + cos(pi t)) / 2).
    for step in (4, 7, 9, 10):
        t = (step - 4) / 6
        expected = 1e-2 * (0.1 + 0.9 * 0.5 * (1 + np.cos(np.pi * t)))
        assert np.isclose(float(schedule(step)), expected, rtol=1e-5), step


def _ema_case(ema_momentum, callbacks=(), epochs=8):
    """A small regression fitted by `compile_and_fit`, one full batch an
    epoch (so each epoch is one Adam step), from fixed weights; returns
    the model, its history and the weights recorded at each epoch's end."""
    import keras

    from kerattn.distribute import ArrayBatches
    from kerattn.recipes.common import compile_and_fit

    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 3)).astype("float32")
    y = (x @ np.array([[1.0], [-2.0], [0.5]]) + 0.3).astype("float32")
    xv = rng.normal(size=(8, 3)).astype("float32")
    yv = (xv @ np.array([[1.0], [-2.0], [0.5]]) + 0.3).astype("float32")
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="tanh"),
                              keras.layers.Dense(1)])
    model.set_weights([np.linspace(-0.5, 0.5, w.size, dtype="float32").reshape(w.shape)
                       for w in model.get_weights()])
    seen = []
    record = keras.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: seen.append(
            [np.array(w) for w in model.get_weights()]))
    history, _ = compile_and_fit(
        model, ArrayBatches(x, y, 16, shuffle=False),
        ArrayBatches(xv, yv, 8, shuffle=False), loss="mse", learning_rate=0.1,
        epochs=epochs, callbacks=[record, *callbacks], verbose=0,
        ema_momentum=ema_momentum)
    return model, history, seen, (xv, yv)


def test_averaged_weights_are_validated_kept_and_returned():
    """`ema_momentum`: the Polyak average of each step's weights (by hand:
    the first step's weights, then m * average + (1 - m) * weights) is
    what validation scores, what callbacks see at an epoch's end, what
    early stopping keeps, and what training ends on, also when a callback
    stops it early."""
    import keras

    m = 0.6
    _, plain, raw, (xv, yv) = _ema_case(None)        # each step's weights
    by_hand = _averages(m, raw)
    model, history, seen, _ = _ema_case(m)
    assert len(seen) == len(by_hand) == 8   # one set of weights an epoch
    for got, want in zip(seen, by_hand):
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    # Validation scores the average, not the weights being trained.
    for epoch in (0, 3, 7):
        model.set_weights(by_hand[epoch])
        want = float(np.mean((np.array(model.predict(xv, verbose=0)) - yv) ** 2))
        assert np.isclose(history.history["val_loss"][epoch], want, rtol=1e-4)
    # (The plain run's validation, of the weights being trained, differs.)
    assert not np.isclose(plain.history["val_loss"][7], want, rtol=1e-2)
    # Training ends on the last average (all 8 epochs).
    model, _, _, _ = _ema_case(m)
    for g, w in zip(model.get_weights(), by_hand[-1], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)

    # Stopped by a callback after epoch 3 (of 8): it ends on that average.
    class StopAfter(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 3:
                self.model.stop_training = True

    model, history, _, _ = _ema_case(m, [StopAfter()])
    assert len(history.history["loss"]) == 4
    for g, w in zip(model.get_weights(), by_hand[3], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    # Early stopping that restores the best epoch restores its average.
    stop = keras.callbacks.EarlyStopping("val_loss", patience=1,
                                         restore_best_weights=True)
    model, history, _, _ = _ema_case(m, [stop], epochs=40)
    best = int(np.argmin(history.history["val_loss"]))
    assert best < len(history.history["loss"]) - 1    # it did stop early
    _, _, longer, _ = _ema_case(None, epochs=best + 1)
    for g, w in zip(model.get_weights(), _averages(m, longer)[-1], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="ema_momentum"):
        _ema_case(1.0)


def _averages(m, raw):
    """The average after each step, by hand: the first step's weights, then
    m * average + (1 - m) * weights."""
    average, out = None, []
    for weights in raw:
        average = (weights if average is None else
                   [m * a + (1 - m) * w for a, w in zip(average, weights, strict=True)])
        out.append(average)
    return out


def test_time_budget_reports_the_time_left(capsys):
    """The ETA: the mean epoch so far times the epochs left, or the rest of
    the budget if that comes first; printed as each epoch after the first
    starts."""
    import keras

    from kerattn.callbacks import TimeBudget

    budget = TimeBudget(seconds=None, eta=True)
    budget.set_params({"epochs": 6})
    assert budget.remaining(2, 60.0) == 120.0
    budget.seconds = 100.0
    assert budget.remaining(2, 60.0) == 40.0
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    model.fit(np.zeros((8, 2)), np.zeros((8, 1)), batch_size=4, epochs=3,
              callbacks=[TimeBudget(eta=True)], verbose=0)
    lines = [line for line in capsys.readouterr().out.splitlines()
             if line.startswith("epoch ")]
    assert [line.split(" starts")[0] for line in lines] == ["epoch 2/3",
                                                            "epoch 3/3"]
    assert all(line.endswith(" min left") for line in lines)


def test_recipe_settings_read_the_presets():
    for name in ("bahdanau_nmt", "transformer_nmt", "convs2s_nmt"):
        config = translation.settings(name)
        assert config["preset"] in zoo.presets(name)
    assert translation.settings("transformer_nmt")["warmup_steps"] > 0
