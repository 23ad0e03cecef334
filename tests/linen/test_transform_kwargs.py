"""Keyword arguments of methods under nn.vmap / nn.scan / nn.remat."""

import jax
import jax.numpy as jnp
import pytest

from flax import linen as nn


class Scaled(nn.Module):
  @nn.compact
  def __call__(self, x, scale=1.0, train=False):
    w = self.param('w', jax.nn.initializers.ones, (x.shape[-1],))
    y = x * jnp.broadcast_to(w, x.shape) * scale
    return jnp.where(train, -y, y)


def test_vmap_drops_keyword_arguments_with_a_warning():
  v_cls = nn.vmap(
    Scaled, variable_axes={'params': 0}, split_rngs={'params': True}
  )
  with pytest.warns(
    RuntimeWarning,
    match='kwargs are not supported in vmap, so "scale, train" is',
  ):
    y, v = v_cls().init_with_output(
      jax.random.key(0),
      jnp.ones((3, 4)),
      scale=jnp.full((3, 1), 2.0),
      train=True,
    )
  # The defaults (scale=1.0, train=False) were used.
  assert v['params']['w'].shape == (3, 4)
  assert float(y.sum()) == 12.0
  with pytest.warns(RuntimeWarning, match='so "x" is'):
    with pytest.raises(ValueError, match='axis_size should be specified'):
      v_cls().init(jax.random.key(0), x=jnp.ones((3, 4)))


def test_scan_drops_keyword_arguments_with_a_warning():
  class Body(nn.Module):
    @nn.compact
    def __call__(self, c, x, scale=1.0):
      return c + x * scale, c

  s_cls = nn.scan(
    Body, variable_broadcast='params', split_rngs={'params': False}
  )
  with pytest.warns(RuntimeWarning, match='kwargs are not supported in scan'):
    (c, ys), _ = s_cls().init_with_output(
      jax.random.key(0), jnp.zeros(2), jnp.ones((3, 2)), scale=5.0
    )
  assert c.tolist() == [3.0, 3.0]
  assert ys.shape == (3, 2)


def test_remat_and_jit_pass_keyword_arguments():
  for transform in (nn.remat, nn.jit):
    y = transform(Scaled)().init_with_output(
      jax.random.key(0), jnp.ones((3, 4)), scale=2.0, train=True
    )[0]
    assert float(y.sum()) == -24.0
