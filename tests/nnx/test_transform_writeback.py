"""What graph-mode transforms write back into their inputs: structure
changes, metadata, containers mutated in place."""

import jax
import jax.numpy as jnp
import pytest

from flax import nnx


class Model(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(2))
    self.lst = nnx.data([jnp.zeros(2)])


def _pure(m):
  return jax.tree.map(lambda x: x.tolist(), nnx.state(m).to_pure_dict())


def test_vmap_broadcast_input_gains_attributes():
  m = Model()

  def f(m, x):
    m.b = nnx.Param(jnp.zeros(2))
    m.lst.append(jnp.ones(2))
    m.w = nnx.Param(m.w[...] * 2)
    return x

  nnx.vmap(f, in_axes=(None, 0))(m, jnp.arange(3.0))
  assert _pure(m) == {
    'b': [0.0, 0.0],
    'lst': {0: [0.0, 0.0], 1: [1.0, 1.0]},
    'w': [2.0, 2.0],
  }


def test_vmap_broadcast_input_cannot_gain_batched_values():
  def f(m, x):
    m.b = nnx.Param(x)

  with pytest.raises(ValueError, match='got axis spec None but output was'):
    nnx.vmap(f, in_axes=(None, 0))(Model(), jnp.arange(3.0))


def _set_meta(m):
  m.w.set_metadata(foo='bar', extra=1)
  m.w[...] = m.w[...] + 1


@pytest.mark.parametrize(
  'transform',
  ['vmap', 'pmap', 'grad', 'value_and_grad', 'cond', 'switch', 'remat'],
)
def test_metadata_set_inside_comes_back(transform):
  m = nnx.Module()
  m.w = nnx.Param(jnp.ones(2), foo='orig')

  def loss(m):
    _set_meta(m)
    return jnp.sum(m.w[...])

  if transform in ('vmap', 'pmap'):
    mapped = getattr(nnx, transform)(
      lambda m, x: _set_meta(m), in_axes=(None, 0)
    )
    mapped(m, jnp.ones(1))
  elif transform in ('grad', 'value_and_grad'):
    getattr(nnx, transform)(loss)(m)
  elif transform == 'cond':
    nnx.cond(True, _set_meta, _set_meta, m)
  elif transform == 'switch':
    nnx.switch(1, [_set_meta, _set_meta], m)
  else:
    nnx.remat(_set_meta)(m)
  assert m.w.get_metadata() == {
    'eager_sharding': True,
    'extra': 1,
    'foo': 'bar',
    'hijax': False,
    'ref': False,
  }
  assert m.w[...].tolist() == [2.0, 2.0]


def test_jit_keeps_metadata_set_inside():
  m = nnx.Module()
  m.w = nnx.Param(jnp.ones(2), foo='orig')
  nnx.jit(_set_meta)(m)
  assert m.w.get_metadata()['foo'] == 'orig'
  assert 'extra' not in m.w.get_metadata()
  assert m.w[...].tolist() == [2.0, 2.0]
