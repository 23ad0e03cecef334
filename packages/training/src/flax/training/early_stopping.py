"""Early stopping: stop training when a metric stops improving.

>>> from flax.training.early_stopping import EarlyStopping
>>> early_stop = EarlyStopping(min_delta=1e-3, patience=2)
>>> for epoch, loss in enumerate([4, 3, 3, 3, 2, 2, 2, 2, 1, 1]):
...   early_stop = early_stop.update(loss)
...   if early_stop.should_stop:
...     print(f'Met early stopping criteria, breaking at epoch {epoch}')
...     break
Met early stopping criteria, breaking at epoch 7
"""

import math

from flax import struct

__all__ = ['EarlyStopping']

# The progress fields as they are before the first update.
_UNTOUCHED = dict(
  best_metric=math.inf, patience_count=0, should_stop=False, has_improved=False
)


class EarlyStopping(struct.PyTreeNode):
  """Tracks the best value of a metric (lower is better).

  A metric improves when it is below ``best_metric - min_delta``.
  ``should_stop`` becomes True on the update after ``patience`` updates in
  a row without improvement.

  Attributes:
    min_delta: the smallest decrease that counts as an improvement.
    patience: how many updates without improvement to allow.
    best_metric: the best value so far.
    patience_count: updates since the last improvement.
    should_stop: whether to stop training.
    has_improved: whether the last update improved the metric.
  """

  min_delta: float = 0
  patience: int = 0
  best_metric: float = math.inf
  patience_count: int = 0
  should_stop: bool = False
  has_improved: bool = False

  def reset(self):
    """Returns the state before the first update (same settings)."""
    return self.replace(**_UNTOUCHED)

  def update(self, metric):
    """Returns the state after seeing ``metric``.

    Args:
      metric: the new value (lower is better).
    """
    # The first metric always counts as an improvement.
    if math.isinf(self.best_metric):
      improved = True
    else:
      improved = self.best_metric - metric > self.min_delta
    if improved:
      changes = dict(best_metric=metric, patience_count=0, has_improved=True)
    else:
      # Patience runs out one update after the count reaches it.
      out_of_patience = self.patience_count >= self.patience
      changes = dict(
        patience_count=self.patience_count + 1,
        should_stop=out_of_patience or self.should_stop,
        has_improved=False,
      )
    return self.replace(**changes)
