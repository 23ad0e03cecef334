"""nnx.TrainState with an optax optimizer, helpers module paths."""

import jax
import jax.numpy as jnp
import optax
import report
from flax import nnx
from flax.nnx import helpers


class Scale(nnx.Module):
  def __init__(self):
    self.k = nnx.Param(jnp.arange(3.0))
    self.b = nnx.Param(jnp.ones(3))

  def __call__(self, x):
    return x * self.k + self.b


m = Scale()
graphdef, params = nnx.split(m)
st = nnx.TrainState.create(graphdef, params=params, tx=optax.sgd(0.1))
report.array('step', st.step)
out, _ = st.apply('params')(jnp.ones((3,)))
report.array('apply', out)
st2 = st.apply_gradients(jax.tree.map(jnp.ones_like, params))
report.array('step-after', st2.step)
report.tree('params-after', st2.params)
report.value('num-leaves', jax.tree_util.tree_structure(st).num_leaves)
report.array('replace', st.replace(step=5).step)
report.value(
  'has_keyword_arg',
  [
    helpers.has_keyword_arg(lambda x, rngs=None: x, 'rngs'),
    helpers.has_keyword_arg(lambda x: x, 'rngs'),
  ],
)
report.value(
  'same-classes',
  [
    helpers.List is nnx.List,
    helpers.Dict is nnx.Dict,
    helpers.Sequential is nnx.Sequential,
  ],
)
