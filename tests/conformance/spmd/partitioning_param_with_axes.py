"""flax.linen.partitioning: param_with_axes, variable_with_axes, axis names."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax.linen import partitioning as nnp


class Dense(nn.Module):
  features: int

  @nn.compact
  def __call__(self, x):
    k = nnp.param_with_axes(
      'kernel',
      nn.initializers.lecun_normal(),
      (x.shape[-1], self.features),
      axes=('embed', 'mlp'),
    )
    nnp.param_with_axes('bias', nn.initializers.zeros, (self.features,))
    cache = nnp.variable_with_axes('cache', 'count', jnp.zeros, (), axes=())
    cache.value = cache.value + 1
    kinds.append(type(cache).__name__)
    return x @ k


kinds = []


variables = Dense(3).init(jax.random.key(0), jnp.ones((2, 4)))
report.tree(
  'variables', jax.tree_util.tree_map(jnp.shape, variables), values=False
)
report.text('params_axes', repr(variables['params_axes']))
report.value('variable types', kinds)
report.text('axis names', repr(nnp.get_axis_names(variables['params_axes'])))
with nnp.axis_rules([('embed', 'data'), ('mlp', 'model')]):
  report.text('rules', repr(nnp.get_axis_rules()))
  specs = nnp.logical_to_mesh(nnp.get_axis_names(variables['params_axes']))
  report.text('mesh specs', repr(specs))
y, state = Dense(3).apply(
  {'params': variables['params'], 'cache': variables['cache']},
  jnp.ones((2, 4)),
  mutable=['cache'],
)
report.text('apply state keys', repr(sorted(state)))
with report.raises('outside a module'):
  nnp.param_with_axes('x', nn.initializers.ones, (2,))
