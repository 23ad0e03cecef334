"""Linen WeightNorm over boxed (partitioned) params; MGUCell without reset gate."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn

x = jnp.arange(12.0).reshape(3, 4) / 10


class Model(nn.Module):
  filtered: bool = False

  @nn.compact
  def __call__(self, x):
    dense = nn.Dense(
      3,
      kernel_init=nn.with_partitioning(
        nn.initializers.lecun_normal(), (None, 'model')
      ),
      bias_init=nn.with_logical_partitioning(nn.initializers.ones, ('mlp',)),
    )
    if self.filtered:
      return nn.WeightNorm(
        dense, feature_axes=None, variable_filter={'kernel'}
      )(x)
    return nn.WeightNorm(dense)(x)


for filtered in [False, True]:
  y, variables = Model(filtered).init_with_output(jax.random.key(0), x)
  report.array(f'y filtered={filtered}', y)
  report.text(
    f'structure filtered={filtered}',
    str(jax.tree_util.tree_structure(variables)),
  )
  report.text(
    f'partition specs filtered={filtered}',
    str(nn.get_partition_spec(variables)),
  )
  report.array(
    f'apply filtered={filtered}', Model(filtered).apply(variables, x)
  )

for reset_gate in [True, False]:
  cell = nn.MGUCell(
    5,
    reset_gate=reset_gate,
    activation_bias_init=nn.initializers.constant(0.3),
    forget_bias_init=nn.initializers.constant(-0.2),
  )
  carry = jnp.ones((3, 5)) * 0.5
  (h, y), variables = cell.init_with_output(jax.random.key(0), carry, x)
  report.tree(f'MGU reset_gate={reset_gate} params', variables)
  report.array(f'MGU reset_gate={reset_gate} y', y)
