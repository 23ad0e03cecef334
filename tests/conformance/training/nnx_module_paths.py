"""The module paths flax.nnx.training.{optimizer,metrics,ema} and the
names they and flax.nnx share."""

import report
from flax import nnx
import flax.nnx.training as training
import flax.nnx.training.ema as ema_mod
import flax.nnx.training.metrics as metrics_mod
import flax.nnx.training.optimizer as optimizer_mod

report.value('optimizer module', optimizer_mod is nnx.optimizer)
report.value('metrics module', metrics_mod is nnx.metrics)
report.value('training module', nnx.training is training)
report.value('ema', ema_mod.EMA is nnx.EMA)
names = ['ModelAndOptimizer', 'OptArray', 'OptState', 'OptVariable']
report.value(
  'optimizer names',
  [getattr(optimizer_mod, n) is getattr(nnx, n) for n in names],
)
report.value('metric', metrics_mod.Metric is nnx.Metric)
report.value('multimetric', metrics_mod.MultiMetric is nnx.MultiMetric)
report.value(
  'bases',
  [c.__name__ for c in nnx.OptArray.__mro__[:3]]
  + [c.__name__ for c in nnx.metrics.MetricState.__mro__[:2]],
)
