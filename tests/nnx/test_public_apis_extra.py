"""nnx.jvp, nnx.custom_vjp, nnx.cached_partial and nnx.shard_map.

Expected values were settled against Flax 0.12.8.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from flax import nnx


class Lin(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.array([[1.0, 2.0], [3.0, 4.0]]))

  def __call__(self, x):
    return x @ self.w[...]


def test_jvp_of_arrays():
  primal, tangent = nnx.jvp(
    lambda x: jnp.sin(x) * 2,
    (jnp.array([0.0, 1.0]),),
    (jnp.array([1.0, 1.0]),),
    graph=False,
  )
  np.testing.assert_allclose(primal, [0.0, 1.6829400062561035], rtol=1e-5)
  np.testing.assert_allclose(tangent, [2.0, 1.0806000232696533], rtol=1e-5)


def test_jvp_with_a_module_tangent():
  m, tangent_m = Lin(), Lin()
  tangent_m.w[...] = jnp.ones((2, 2))
  primal, tangent = nnx.jvp(
    lambda m, x: m(x),
    (m, jnp.array([1.0, 2.0])),
    (tangent_m, jnp.zeros(2)),
    graph=False,
  )
  np.testing.assert_allclose(primal, [7.0, 10.0])
  np.testing.assert_allclose(tangent, [3.0, 3.0])


def test_custom_vjp_uses_the_given_backward():
  @nnx.custom_vjp
  def h(x, y):
    return jnp.sin(x) * y

  def h_fwd(x, y):
    return h(x, y), (jnp.cos(x), y)

  def h_bwd(res, g):
    cos_x, y = res
    _, g = g  # (input updates, output cotangent)
    return (cos_x * g * y * 100, jnp.zeros_like(y) + 5)

  h.defvjp(h_fwd, h_bwd)
  x, y = jnp.array(0.5), jnp.array(2.0)
  np.testing.assert_allclose(h(x, y), 0.9588500261306763, rtol=1e-5)
  gx, gy = jax.grad(h, argnums=(0, 1))(x, y)
  np.testing.assert_allclose(gx, 175.5165, rtol=1e-5)
  assert float(gy) == 5.0
  np.testing.assert_allclose(nnx.grad(h)(x, y), 175.5165, rtol=1e-5)


def test_cached_partial_updates_the_bound_module():
  model = Lin()

  @nnx.jit
  def step(m, x):
    m.w[...] = m.w[...] + 1
    return m(x)

  cached = nnx.cached_partial(step, model)
  x = jnp.array([1.0, 2.0])
  np.testing.assert_allclose(cached(x), [10.0, 13.0])
  np.testing.assert_allclose(cached(x), [13.0, 16.0])
  np.testing.assert_allclose(model.w[...], [[3.0, 4.0], [5.0, 6.0]])


def test_shard_map_with_a_module():
  mesh = jax.make_mesh((1,), ('d',))
  sm = nnx.shard_map(
    lambda m, x: m(x), mesh=mesh, in_specs=(P(), P('d')), out_specs=P('d')
  )
  xs = jax.device_put(jnp.ones((4, 2)), NamedSharding(mesh, P('d')))
  np.testing.assert_allclose(sm(Lin(), xs), [[4.0, 6.0]] * 4)


class Counted(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.arange(8.0).reshape(4, 2))
    self.n = nnx.BatchStat(jnp.zeros(4))


@pytest.mark.parametrize(
  'kwargs', [dict(graph=False), dict(graph_updates=False)]
)
def test_shard_map_without_graph_updates(kwargs):
  mesh = jax.make_mesh((1,), ('x',), axis_types=(jax.sharding.AxisType.Auto,))

  def f(m, x):
    m.n[...] += 1.0
    m.added = nnx.Param(jnp.ones(3))  # dropped: no graph updates
    return jax.lax.psum(m.w[...] * x, 'x')

  m = Counted()
  sm = nnx.shard_map(
    f, mesh=mesh, in_specs=(P('x'), P('x')), out_specs=P('x'), **kwargs
  )
  y = sm(m, jnp.arange(4.0)[:, None])
  np.testing.assert_allclose(
    y, jnp.arange(8.0).reshape(4, 2) * jnp.arange(4.0)[:, None]
  )
  np.testing.assert_allclose(m.n[...], jnp.ones(4))
  assert not hasattr(m, 'added')
  with pytest.raises(ValueError, match=r'Duplicate BatchStat(.|\n)*\.out\.n'):
    nnx.shard_map(
      lambda m: m, mesh=mesh, in_specs=(P('x'),), out_specs=P('x'), **kwargs
    )(m)
  with pytest.raises(ValueError, match='cannot contain `StateSharding`'):
    nnx.shard_map(
      lambda m: m.w[...],
      mesh=mesh,
      in_specs=(nnx.StateSharding({...: P('x')}),),
      out_specs=P('x'),
      **kwargs,
    )(m)


def test_shard_map_graph_updates_return_inputs_and_structure():
  mesh = jax.make_mesh((1,), ('x',), axis_types=(jax.sharding.AxisType.Auto,))
  m = Counted()

  def f(m):
    m.extra = nnx.Param(jnp.ones(4))
    return m

  out = nnx.shard_map(f, mesh=mesh, in_specs=(P('x'),), out_specs=P('x'))(m)
  assert out is m
  np.testing.assert_allclose(m.extra[...], jnp.ones(4))
