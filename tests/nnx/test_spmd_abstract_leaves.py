"""nnx.as_abstract on models holding arrays and numbers in data attributes."""

import jax
import jax.numpy as jnp
import pytest

from flax import nnx


@pytest.mark.parametrize('graph', [True, False])
def test_as_abstract_keeps_attribute_leaves(graph):
  # arrays and numbers held by data attributes are left as they are (only
  # Variables get shardings), in graph and tree mode
  class M(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.ones((4, 2)), out_sharding=('a', None))
      self.n = nnx.data(3)
      self.arr = nnx.data(jnp.zeros(2))

  mesh = jax.make_mesh((1,), ('a',), devices=jax.devices()[:1])
  with nnx.set_graph_mode(graph), jax.set_mesh(mesh):
    out = nnx.as_abstract(nnx.eval_shape(lambda: M()))
  assert out.w.sharding.spec == jax.P('a', None)
  assert (out.n.shape, out.n.dtype, out.n.weak_type) == ((), jnp.int32, True)
  assert (out.arr.shape, out.arr.dtype) == ((2,), jnp.float32)
  assert isinstance(out.arr, jax.ShapeDtypeStruct)
