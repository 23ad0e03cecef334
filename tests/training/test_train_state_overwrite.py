"""TrainState with an OVERWRITE_WITH_GRADIENT entry (values of Flax 0.12.8)."""

import jax
import jax.numpy as jnp
import numpy as np
import optax

from flax.training import train_state


def _state(tx):
  params = {
    'params': {'w': jnp.array([1.0, 2.0])},
    train_state.OVERWRITE_WITH_GRADIENT: {'scale': jnp.array(3.0)},
  }
  return train_state.TrainState.create(apply_fn=None, params=params, tx=tx)


def _grads():
  return {
    'params': {'w': jnp.array([1.0, -1.0])},
    train_state.OVERWRITE_WITH_GRADIENT: {'scale': jnp.array(7.0)},
  }


def test_key_name():
  assert train_state.OVERWRITE_WITH_GRADIENT == '_overwrite_with_gradient'


def test_optimizer_state_covers_only_trained_params():
  st = _state(optax.adam(0.1))
  assert jax.tree_util.tree_map(jnp.shape, st.opt_state[0].mu) == {'w': (2,)}


def test_apply_gradients_overwrites_and_trains():
  st = _state(optax.adam(0.1)).apply_gradients(grads=_grads())
  assert int(st.step) == 1
  np.testing.assert_allclose(st.params['params']['w'], [0.9000007, 2.0999994])
  over = st.params[train_state.OVERWRITE_WITH_GRADIENT]
  np.testing.assert_array_equal(over['scale'], 7.0)
  st = _state(optax.sgd(0.5)).apply_gradients(grads=_grads())
  np.testing.assert_allclose(st.params['params']['w'], [0.5, 2.5])


def test_without_overwrite_entry():
  st = train_state.TrainState.create(
    apply_fn=None, params={'w': jnp.array([1.0])}, tx=optax.adam(0.1)
  )
  st = st.apply_gradients(grads={'w': jnp.array([2.0])})
  np.testing.assert_allclose(st.params['w'], [0.9000007])
