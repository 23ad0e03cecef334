"""lr_schedule, common_utils and early stopping."""

import jax.numpy as jnp
import report
from flax.training import common_utils, early_stopping, lr_schedule

sched = lr_schedule.create_cosine_learning_rate_schedule(
  0.1, 10, 5, warmup_length=2
)
report.value('cosine', [float(sched(i)) for i in range(0, 60, 7)])
step = lr_schedule.create_stepped_learning_rate_schedule(
  1.0, 10, [[2, 0.5], [4, 0.1]]
)
report.value('stepped', [float(step(i)) for i in range(0, 60, 7)])
report.array('onehot', common_utils.onehot(jnp.array([0, 2, 1]), 3))
report.array('shard', common_utils.shard(jnp.arange(16.0).reshape(8, 2)))
es = early_stopping.EarlyStopping(min_delta=0.1, patience=1)
flags = []
for metric in (1.0, 0.95, 0.94, 0.5):
  es = es.update(metric)
  flags.append([bool(es.should_stop), float(es.best_metric)])
report.value('early-stopping', flags)
