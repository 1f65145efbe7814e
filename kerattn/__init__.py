"""kerattn: the classic attention mechanisms and a model zoo, for Keras 3."""

from kerattn import callbacks, datasets, decoding, distribute, layers, losses, zoo
from kerattn.runs import Run, load_run
from kerattn.saving import atomic_path, load_model

__version__ = "0.1.0"

__all__ = ["layers", "zoo", "decoding", "datasets", "losses", "callbacks", "distribute",
           "load_model", "atomic_path", "load_run", "Run",
           "__version__"]
