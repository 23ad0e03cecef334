"""flax.linen.summary.Row / Table and tabulate of a compact_name_scope model."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax.linen import summary

row = summary.Row(
  ('a',),
  None,
  '__call__',
  (),
  None,
  {'params': {'w': jnp.ones(3)}},
  {
    'params': {'w': jnp.ones(3), 'b': {'c': jnp.ones((2, 2), jnp.int8)}},
    'batch': {},
  },
  0,
  0,
)
report.value(
  'size_and_bytes',
  {
    k: list(v)
    for k, v in row.size_and_bytes(['params', 'batch', 'missing']).items()
  },
)
table = summary.Table(None, ['params'], [row])
report.value('table', [len(table), table.collections])


class Lin(nn.Module):
  f: int

  @nn.compact
  def __call__(self, x):
    return x @ self.param('k', nn.initializers.ones, (x.shape[-1], self.f))


class AE(nn.Module):
  @nn.compact_name_scope
  def encode(self, x):
    return Lin(3)(x)

  @nn.compact_name_scope
  def decode(self, x):
    return Lin(2)(x)

  def __call__(self, x):
    return self.decode(self.encode(x))


report.text('tabulate', nn.tabulate(AE(), jax.random.key(0))(jnp.ones((1, 2))))
