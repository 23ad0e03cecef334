"""Linen FP8 layers trained with flax.training's TrainState and optax.

The FP8 state lives in the ``_overwrite_with_gradient`` collection, which
``TrainState.apply_gradients`` replaces by its gradient (its next value)
instead of handing it to the optimizer.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax

from flax import linen as nn
from flax.training import train_state

OWG = '_overwrite_with_gradient'


def close(a, b, rtol=1e-6):
  np.testing.assert_allclose(np.asarray(a, np.float32), b, rtol=rtol)


def test_training_step_overwrites_the_state():
  model = nn.Dense(3, dot_general_cls=nn.Fp8DotGeneral)
  x = jnp.linspace(-2.0, 2.0, 8).reshape(2, 4)
  variables = model.init(jax.random.key(0), x)
  state = train_state.TrainState.create(
    apply_fn=model.apply, params=variables, tx=optax.sgd(0.1)
  )

  @jax.jit
  def step(state):
    def loss(params):
      return jnp.sum(state.apply_fn(params, x) ** 2)

    return state.apply_gradients(grads=jax.grad(loss)(state.params))

  first = step(state)
  second = step(first)
  fp8_state = second.params[OWG]['Fp8DirectDotGeneralOp_0']
  # Each step writes the operand's amax in front of its history and takes
  # its scale from the largest amax recorded before.
  close(fp8_state['input_amax_history'][:3], [2.0, 0.0, 0.0])
  close(fp8_state['input_amax_history'][-1], 2.0)
  close(fp8_state['input_scale'], [2.0 / 448])

  def amax(s):
    return float(jnp.abs(s.params['params']['kernel']).max())

  close(fp8_state['kernel_amax_history'][:2], [amax(first), 0.0])
  close(fp8_state['kernel_scale'], [amax(state) / 448])
  # The optimizer updated the kernel; the FP8 state bypassed it.
  assert amax(second) != amax(first)
