"""A full FP8 training step: optax + TrainState overwrite the FP8 state."""

import jax
import jax.numpy as jnp
import optax
import report
from flax import linen as nn
from flax.training import train_state


class MLP(nn.Module):
  @nn.compact
  def __call__(self, x):
    x = nn.Dense(16, dot_general_cls=nn.Fp8DotGeneral)(x)
    x = nn.relu(x)
    return nn.Dense(3, dot_general_cls=nn.Fp8DotGeneral)(x)


x = jax.random.normal(jax.random.key(1), (4, 8))
target = jnp.ones((4, 3))
model = MLP()
variables = model.init(jax.random.key(0), x)
report.tree('init', variables, values=False)
state = train_state.TrainState.create(
  apply_fn=model.apply, params=variables, tx=optax.adam(1e-2)
)
report.tree('opt-state', state.opt_state, values=False)


@jax.jit
def step(state, x):
  def loss(params):
    return jnp.mean((state.apply_fn(params, x) - target) ** 2)

  value, grads = jax.value_and_grad(loss)(state.params)
  return state.apply_gradients(grads=grads), value


for i in range(4):
  state, value = step(state, x * (i + 1))
  report.value(f'loss-{i}', float(value))
fp8_state = state.params['_overwrite_with_gradient']
report.tree(
  'fp8-state-head',
  jax.tree_util.tree_map(lambda a: a[:6], fp8_state),
)
report.tree(
  'fp8-state-tail',
  jax.tree_util.tree_map(lambda a: a[-3:], fp8_state),
)
report.tree('params', state.params['params'])
report.value('step', int(state.step))
