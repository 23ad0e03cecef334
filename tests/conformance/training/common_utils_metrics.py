"""common_utils: stack_forest and get_metrics give JAX arrays."""

import jax.numpy as jnp
import numpy as np
import report
from flax.training import common_utils

stacked = common_utils.stack_forest([{'a': np.ones(2)}, {'a': np.zeros(2)}])
report.value('stacked type', type(stacked['a']).__name__)
report.array('stacked', stacked['a'])
got = common_utils.get_metrics([{'l': jnp.ones((1,))}, {'l': jnp.zeros((1,))}])
report.value('metrics type', type(got['l']).__name__)
report.array('metrics', got['l'])
with report.raises('metrics without a replica axis'):
  common_utils.get_metrics([{'l': jnp.ones(())}])
