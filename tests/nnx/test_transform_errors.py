"""Error paths of the NNX transforms (Flax 0.12.8's exception classes and
key phrases)."""

import jax
import jax.numpy as jnp
import pytest
from flax import nnx


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(2))

  def f(self, x):
    return (self.w * x).sum()


MESH = jax.make_mesh((2,), ('d',))
TRANSFORMS = {
  'jit': lambda f: nnx.jit(f),
  'grad': lambda f: nnx.grad(f),
  'value_and_grad': lambda f: nnx.value_and_grad(f),
  'vmap': lambda f: nnx.vmap(f),
  'remat': lambda f: nnx.remat(f),
  'eval_shape': lambda f: nnx.eval_shape(f),
  'scan': lambda f: nnx.scan(f),
  'pmap': lambda f: nnx.pmap(f),
  'checkify': lambda f: nnx.checkify(f),
  'custom_vjp': lambda f: nnx.custom_vjp(f),
  'shard_map': lambda f: nnx.shard_map(
    f, mesh=MESH, in_specs=jax.P(), out_specs=jax.P()
  ),
}


@pytest.mark.parametrize('name', sorted(TRANSFORMS))
def test_bound_method_rejected(name):
  with pytest.raises(
    ValueError, match=rf'nnx\.{name} does not support bound methods'
  ):
    TRANSFORMS[name](M().f)


@pytest.mark.parametrize('name', ['vmap', 'scan', 'remat', 'custom_vjp'])
def test_bound_method_rejected_by_decorator_form(name):
  decorator = getattr(nnx, name)()
  with pytest.raises(
    ValueError, match=rf'nnx\.{name} does not support bound methods'
  ):
    decorator(M().f)


def test_bound_method_of_plain_object_accepted():
  class Plain:
    def f(self, x):
      return x * 2

  assert float(nnx.jit(Plain().f)(jnp.array(2.0))) == 4.0
  assert float(nnx.vmap(Plain().f)(jnp.ones(3)).sum()) == 6.0


def test_unbound_method_accepted():
  m = M()
  assert float(nnx.jit(M.f)(m, jnp.array(2.0))) == 4.0
