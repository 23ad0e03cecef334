"""param_with_axes on a pytree-valued parameter: one spec per leaf of names."""

import jax
import jax.numpy as jnp
import report
from flax import linen as nn
from flax.linen import partitioning as nnp


def init(key, shape):
  del key
  return {'a': jnp.ones(shape), 'b': (jnp.zeros(shape), jnp.ones((2,)))}


class Model(nn.Module):
  @nn.compact
  def __call__(self, x):
    nnp.param_with_axes(
      'w', init, (3, 4), axes={'a': ('x', 'y'), 'b': (('x', None), ('z',))}
    )
    nnp.param_with_axes('k', nn.initializers.ones, (3, 4), axes=('x', 'y'))
    return x


variables = Model().init(jax.random.key(0), 1.0)
report.tree('params', variables['params'])
report.text('params_axes', repr(variables['params_axes']))
report.text('axis names', repr(nnp.get_axis_names(variables['params_axes'])))

for label, names in [
  ('list of names', ['x', 'y']),
  ('tuple of tuples', (('x', 'y'), ('z',))),
  ('mixed tuple', ('x', ('y', 'z'))),
  ('none in tree', (None, ('x',))),
  ('empty', ()),
  ('empty dict', {}),
  ('string', 'xy'),
  ('unconstrained', ('x', jax.sharding.PartitionSpec.UNCONSTRAINED)),
]:
  specs = nnp.get_axis_names({'w_axes': nnp.AxisMetadata(names)})
  report.text(label, repr(specs))

with report.raises('int in names'):
  nnp.get_axis_names({'w_axes': nnp.AxisMetadata(('x', 1))})
