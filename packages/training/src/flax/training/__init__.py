"""flax.training: TrainState, checkpoints and other training utilities."""

from flax.plugins import lazy_namespace as _lazy_namespace

__getattr__, __dir__ = _lazy_namespace(__name__)
