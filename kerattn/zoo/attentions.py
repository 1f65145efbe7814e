"""The attentions of the zoo's recurrent decoders, in one table.

`luong_nmt(attention=name)` and `bahdanau_nmt(attention=name)` build their
attention layer with `make(name, energy, ...)`, which looks `name` up in
`ATTENTIONS`: a new family is one entry here, a function of the builder's
energy and sizes that returns the layer (named "attention", the name the
models' `encode` / `step`, the run folders and the plots look for).

What a factory is given:

- `energy`: the score of the builder's paper. "additive" is Bahdanau et
  al.'s `v^T tanh(W s + U h)` with a hidden layer of `units`; "luong" is
  Luong et al.'s `score` ("dot", "general", "concat", "location"), and
  the families with an energy of their own take its multiplicative form
  (`energy="luong"` of the monotonic layers).
- `units`: the hidden size of an additive score (Bahdanau's alignment
  model; the decoder's width in `luong_nmt`).
- `score`, `max_source_length`: Luong's score and its location score's
  longest source; `window`: local attention's `D`; `chunk_size`: MoChA's
  `w`.
- `options`: more keyword arguments of the layer (the builders'
  `attention_options`), over the builder's sizes; `make` refuses a name
  the layer does not take (`options_of`), the layer checks the values.

`READS_SCORE` names the families that score with Luong's `score` (the
others refuse one in `luong_nmt`).
"""

import inspect

from kerattn import checks
from kerattn.layers import (BahdanauAttention, DynamicConvolutionAttention,
                            ForwardAttention, GMMAttention,
                            HardMonotonicAttention, LocalAttention,
                            LocationSensitiveAttention, LuongAttention,
                            MultiHeadLocationAttention,
                            MonotonicChunkwiseAttention,
                            RecurrentLocationAttention,
                            StepwiseMonotonicAttention)

ENERGIES = ("additive", "luong")


def _layer(cls, options, *args, **given):
    """`cls(*args, **given)` with `options` (the user's, checked by `make`)
    over the builder's `given` sizes, named "attention"."""
    return cls(*args, **{**given, **options}, name="attention")


def _content(energy, units, score, max_source_length, coverage=False, options=None):
    if energy == "additive":
        return _layer(BahdanauAttention, options, units=units, coverage=coverage)
    return _layer(LuongAttention, options, score=score, max_length=max_source_length,
                  coverage=coverage)


def _global(energy, units=None, score=None, max_source_length=None,
            options=None, **_):
    """Content-based attention over the whole source: Bahdanau et al.'s
    additive score, or Luong et al.'s global attention with its `score`."""
    return _content(energy, units, score, max_source_length, options=options)


def _coverage(energy, units=None, score=None, max_source_length=None,
              options=None, **_):
    """The content score plus See et al.'s (2017) coverage term `w_c c^i`
    (eq. 11), on Bahdanau's score or Luong's concat score."""
    return _content(energy, units, score, max_source_length, coverage=True,
                    options=options)


def _location_sensitive(energy, units=None, options=None, **_):
    """Chorowski et al.'s (2015) location-sensitive attention, an additive
    score of `units` whatever the builder's energy."""
    return _layer(LocationSensitiveAttention, options, units=units)


def _recurrent_location(energy, units=None, options=None, **_):
    """ESPnet's location-aware recurrent attention (`AttLocRec`), an
    additive score of `units` whatever the builder's energy."""
    return _layer(RecurrentLocationAttention, options, units=units)


def _monotonic_size(energy, units):
    return {"energy": "luong"} if energy == "luong" else {"units": units}


def _hard_monotonic(energy, units=None, options=None, **_):
    """Raffel et al.'s (2017) hard monotonic attention on the builder's
    energy."""
    return _layer(HardMonotonicAttention, options, **_monotonic_size(energy, units))


def _stepwise(energy, units=None, options=None, **_):
    """He et al.'s (2019) stepwise monotonic attention on the builder's
    energy."""
    return _layer(StepwiseMonotonicAttention, options,
                  **_monotonic_size(energy, units))


def _mocha(energy, units=None, chunk_size=2, options=None, **_):
    """Chiu and Raffel's (2018) MoChA on the builder's energy."""
    return _layer(MonotonicChunkwiseAttention, options, chunk_size=chunk_size,
                  **_monotonic_size(energy, units))


def _gmm(energy, options=None, **_):
    """Graves' (2013) / Battenberg et al.'s (2020) GMM attention, v2b by
    default: location only, whatever the builder's energy."""
    return _layer(GMMAttention, options)


def _dca(energy, options=None, **_):
    """Battenberg et al.'s (2020) dynamic convolution attention: location
    only, whatever the builder's energy."""
    return _layer(DynamicConvolutionAttention, options)


def _forward(agent):
    def forward(energy, units=None, options=None, **_):
        """Zhang et al.'s (2018) forward attention on a location-sensitive
        score of `units`, with or without the transition agent."""
        return _layer(ForwardAttention, options, units=units,
                      transition_agent=agent)
    return forward


def _multi_head_location(energy, units=None, options=None, **_):
    """ESPnet's multi-head location attention (`AttMultiHeadLoc`): 4 heads
    of `units / 4` (at least 1) unless `options` say otherwise."""
    heads = options.get("num_heads", 4)
    return _layer(MultiHeadLocationAttention, options, num_heads=heads,
                  key_dim=max(1, (units or heads) // heads), location=True)


def _local(mode):
    def local(energy, score=None, window=10, options=None, **_):
        """Luong et al.'s local attention (section 3.2) with their `score`."""
        return _layer(LocalAttention, options, mode=mode, window=window, score=score)
    return local


# name -> factory(energy, units=, score=, max_source_length=, window=,
# chunk_size=, options=) -> the layer; the layer class of each, whose
# arguments `options` may set.
ATTENTIONS = {
    "global": _global,
    "coverage": _coverage,
    "location-sensitive": _location_sensitive,
    "recurrent-location": _recurrent_location,
    "hard-monotonic": _hard_monotonic,
    "mocha": _mocha,
    "stepwise-monotonic": _stepwise,
    "gmm": _gmm,
    "dca": _dca,
    "forward": _forward(None),
    "forward-ta": _forward("move"),
    "multi-head-location": _multi_head_location,
    "local-m": _local("monotonic"),
    "local-p": _local("predictive"),
}
LAYERS = {
    "global": (BahdanauAttention, LuongAttention),
    "coverage": (BahdanauAttention, LuongAttention),
    "location-sensitive": LocationSensitiveAttention,
    "recurrent-location": RecurrentLocationAttention,
    "hard-monotonic": HardMonotonicAttention,
    "mocha": MonotonicChunkwiseAttention,
    "stepwise-monotonic": StepwiseMonotonicAttention,
    "gmm": GMMAttention,
    "dca": DynamicConvolutionAttention,
    "forward": ForwardAttention,
    "forward-ta": ForwardAttention,
    "multi-head-location": MultiHeadLocationAttention,
    "local-m": LocalAttention,
    "local-p": LocalAttention,
}
# The families that score with Luong's `score`.
READS_SCORE = ("global", "coverage", "local-m", "local-p")


def options_of(name, energy):
    """The keyword arguments `attention_options` may give the layer of
    `name` on `energy`: its constructor's, less `name` (the zoo's layer is
    always "attention") and the base layer's (`dtype`, `trainable`)."""
    cls = LAYERS[name]
    if isinstance(cls, tuple):   # one class a score
        cls = cls[ENERGIES.index(energy)]
    names = set()
    for klass in cls.__mro__:   # up through the kerattn classes it extends
        if not klass.__module__.startswith("kerattn."):
            break
        if "__init__" not in vars(klass):
            continue
        params = inspect.signature(klass.__init__).parameters.values()
        names |= {p.name for p in params
                  if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
        if not any(p.kind == p.VAR_KEYWORD for p in params):
            break   # it takes nothing more
    return sorted(names - {"self", "name"})


def make(name, energy, options=None, **spec):
    """The attention layer `name` of `ATTENTIONS` for a builder whose score
    is `energy` (see the module docstring for `spec`).

    `options` (the builders' `attention_options`): more keyword arguments of
    the layer, over the builder's sizes (e.g. `{"units": 64}` for a
    location-sensitive score wider than the decoder, `{"variant": "v1"}`
    for GMM attention); the layer checks their values.

    >>> make("gmm", "luong", options={"num_components": 2}).num_components
    2
    """
    checks.one_of("attention", name, list(ATTENTIONS))
    checks.one_of("energy", energy, ENERGIES)
    checks.require(options is None or isinstance(options, dict),
                   "attention_options", "None or a dict of the layer's keyword "
                   "arguments", options)
    options = dict(options or {})
    accepted = options_of(name, energy)
    unknown = sorted(set(options) - set(accepted))
    checks.require(not unknown, "attention_options",
                   f"keyword arguments of the {name!r} attention: "
                   f"{', '.join(accepted)}", unknown)
    return ATTENTIONS[name](energy, options=options, **spec)
