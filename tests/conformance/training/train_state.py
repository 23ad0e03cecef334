"""TrainState: apply_gradients with optax.sgd momentum, five steps."""

import jax
import jax.numpy as jnp
import optax
import report
from flax import linen as nn
from flax.training import train_state

model = nn.Dense(2)
x = jnp.linspace(-1, 1, 12).reshape(4, 3)
y = jnp.ones((4, 2))
params = jax.tree.map(
  lambda a: a, model.init(jax.random.key(0), jnp.ones((1, 3)))['params']
)
state = train_state.TrainState.create(
  apply_fn=model.apply, params=params, tx=optax.sgd(0.1, momentum=0.9)
)


@jax.jit
def step(state):
  def loss_fn(p):
    return jnp.mean((state.apply_fn({'params': p}, x) - y) ** 2)

  loss, grads = jax.value_and_grad(loss_fn)(state.params)
  return state.apply_gradients(grads=grads), loss


losses = []
for _ in range(5):
  state, loss = step(state)
  losses.append(loss)
report.array('losses', jnp.stack(losses))
report.tree('params', state.params)
report.value('step', int(state.step))
report.tree('opt-state', state.opt_state)
