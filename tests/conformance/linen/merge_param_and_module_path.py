"""flax.linen.module names: merge_param, tuple helpers, capture filter."""

import jax.numpy as jnp
import report
from flax import linen as nn
from flax.linen import module as module_lib
from flax.linen.module import merge_param


class Drop(nn.Module):
  deterministic: bool | None = None

  @nn.compact
  def __call__(self, x, deterministic=None):
    deterministic = merge_param(
      'deterministic', self.deterministic, deterministic
    )
    return x if deterministic else x * 0


report.array('module attr', Drop(True).apply({}, jnp.ones(2)))
report.array('call arg', Drop().apply({}, jnp.ones(2), deterministic=False))
with report.raises('both'):
  Drop(True).apply({}, jnp.ones(2), deterministic=True)
with report.raises('neither'):
  Drop().apply({}, jnp.ones(2))
report.value('tuple_reduce', list(module_lib.tuple_reduce((1,), 2)))
report.value('tuple_init', list(module_lib.tuple_init()))
report.value(
  'capture', [module_lib.capture_call_intermediates(None, '__call__')]
)
