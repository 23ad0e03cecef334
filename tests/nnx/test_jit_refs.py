"""nnx.jit returning jax.Refs: the passed Refs come back as themselves."""

import jax
import jax.numpy as jnp
import pytest

from flax import nnx


@nnx.dataclass
class Box(nnx.Pytree):
  r: jax.Ref = nnx.data()


def test_graph_mode_returns_input_ref_and_new_ref():
  r = jax.new_ref(jnp.array(1.0))

  @nnx.jit
  def g(r):
    r[...] += 1.0
    return jax.new_ref(jnp.array(10.0)), r

  for _ in range(2):  # the second call reuses the compiled entry
    new, same = g(r)
    assert same is r
    assert isinstance(new, jax.Ref) and float(new[...]) == 10.0
  assert float(r[...]) == 3.0


def test_graph_mode_ref_in_containers_and_with_modules():
  r = jax.new_ref(jnp.array(1.0))
  box = Box(r=jax.new_ref(jnp.array(2)))
  out = nnx.jit(lambda b, r: (b, {'a': r, 'b': [r]}, jax.new_ref(jnp.ones(2))))(
    box, r
  )
  assert out[0] is box
  assert out[1]['a'] is r and out[1]['b'][0] is r
  assert out[2][...].tolist() == [1.0, 1.0]


def test_compat_jit_returns_input_holding_ref():
  b = Box(r=jax.new_ref(1))

  @nnx.compat.jit
  def inc(box):
    box.r[...] += 1
    return box

  out = inc(b)
  assert out is b and int(out.r[...]) == 2


def test_donated_ref_returned():
  r = jax.new_ref(jnp.array(1.0))
  assert nnx.jit(lambda r: r, donate_argnums=0)(r) is r


def test_captured_ref_cannot_be_returned():
  cap = jax.new_ref(jnp.array(5.0))
  # JAX names the user function
  with pytest.raises(
    ValueError, match='function <lambda> at .* mutable array reference'
  ):
    nnx.jit(lambda x: cap)(jnp.ones(()))


def test_eval_shape_returns_the_input_ref():
  r = jax.new_ref(jnp.array(1.0))
  assert nnx.jit(lambda r: r).eval_shape(r) is r


@pytest.mark.parametrize('value', ['ref', 'box'])
def test_tree_mode_refuses_returning_refs(value):
  r = jax.new_ref(jnp.array(1.0))
  arg = r if value == 'ref' else Box(r=r)
  with pytest.raises(
    ValueError, match='function <lambda> at .* mutable array reference'
  ):
    nnx.jit(lambda a: a, graph=False)(arg)


def test_same_ref_passed_twice_is_one_ref():
  r = jax.new_ref(jnp.array(1.0))
  r2 = jax.new_ref(jnp.array(5.0))

  @nnx.jit
  def add_to_first(a, b):
    a[...] += 10.0
    return b[...], b

  # a call without aliases first: the next one must not reuse its memo
  value, same = add_to_first(r, r2)
  assert float(value) == 5.0 and same is r2
  for expected in (21.0, 31.0):
    value, same = add_to_first(r, r)
    assert float(value) == expected and same is r
  assert float(r[...]) == 31.0
  a, b = nnx.jit(lambda a, b: (a, b))({'x': r}, [r])
  assert a['x'] is r and b[0] is r
  assert nnx.jit(lambda a, b: a)(r, b=r) is r


def test_ref_as_argument_and_module_attribute():
  r = jax.new_ref(jnp.array(2.0))
  box = Box(r=r)

  def f(b, a):
    a[...] += 1.0
    return b.r[...] + a[...], b.r

  for graph_updates in (True, False):
    out = nnx.jit(lambda b, a: f(b, a)[0], graph_updates=graph_updates)(box, r)
    assert float(out) == float(r[...]) * 2
  out, ref = nnx.jit(f)(box, r)
  assert float(out) == 10.0 and ref is r and box.r is r


def test_module_ref_returned_is_the_same_ref():
  box = Box(r=jax.new_ref(jnp.array(2.0)))
  assert nnx.jit(lambda b: b.r)(box) is box.r
  v = nnx.Variable(jnp.array(1.0), ref=True)
  raw = v.get_raw_value()
  assert nnx.jit(lambda v: v.get_raw_value())(v) is raw


def test_ref_set_as_attribute_comes_back():
  box = Box(r=jax.new_ref(jnp.array(2.0)))

  @nnx.jit
  def replace(b):
    b.r = jax.new_ref(jnp.array(5.0))

  replace(box)
  assert isinstance(box.r, jax.Ref) and float(box.r[...]) == 5.0


def test_new_ref_needs_a_graph_node_or_ref_argument():
  x = jnp.array(1.0)
  with pytest.raises(ValueError, match='mutable array reference'):
    nnx.jit(lambda x: {'a': jax.new_ref(x)})(x)
  out = nnx.jit(lambda v, x: jax.new_ref(x))(nnx.Param(x), x)
  assert isinstance(out, jax.Ref) and float(out[...]) == 1.0


def test_without_graph_updates_refs_are_not_returned():
  r = jax.new_ref(jnp.array(1.0))
  out = nnx.jit(lambda a, b: a[...] + b[...], graph_updates=False)(r, r)
  assert float(out) == 2.0
  with pytest.raises(ValueError, match='mutable array reference'):
    nnx.jit(lambda a, b: a, graph_updates=False)(r, r)
  with pytest.raises(ValueError, match='mutable array reference'):
    nnx.jit(lambda b: b.r, graph_updates=False)(Box(r=r))


def test_tree_mode_same_ref_twice_is_refused():
  r = jax.new_ref(jnp.array(1.0))
  with pytest.raises(ValueError, match='only one reference to a mutable array'):
    nnx.jit(lambda a, b: a[...] + b[...], graph=False)(r, r)


def test_same_ref_twice_in_cond_and_remat():
  r = jax.new_ref(jnp.array(1.0))

  def f(a, b):
    a[...] += 1.0
    return a[...] + b[...]

  assert float(nnx.cond(True, f, f, r, r)) == 4.0
  assert float(nnx.remat(f)(r, r)) == 6.0
  assert float(r[...]) == 3.0


def test_graph_mode_cond_on_module_holding_ref():
  box = Box(r=jax.new_ref(jnp.array(2.0)))

  def bump(b, x):
    b.r[...] += 1.0
    return x * b.r[...]

  assert float(nnx.cond(True, bump, bump, box, jnp.array(3.0))) == 9.0
  assert float(box.r[...]) == 3.0
  assert nnx.cond(False, lambda b: b.r, lambda b: b.r, box) is box.r


@pytest.mark.parametrize('mode', [{'graph_updates': False}, {'graph': False}])
def test_ref_mode_variables_in_cond_and_remat_without_updates(mode):
  def count(m, x):
    m.c[...] += 1.0
    return jnp.sum(m.w[...] * x)

  for run in (
    lambda m: nnx.cond(True, count, count, m, jnp.ones(2), **mode),
    lambda m: nnx.remat(count, **mode)(m, jnp.ones(2)),
  ):
    m = nnx.Module()
    with nnx.var_defaults(ref=True):
      m.w = nnx.Param(jnp.ones(2))
      m.c = nnx.BatchStat(jnp.zeros(()))
    raw = m.c.get_raw_value()
    assert float(run(m)) == 2.0
    assert float(m.c[...]) == 1.0
    if mode.get('graph') is False:
      assert m.c.get_raw_value() is raw


def test_remat_errors_name_the_user_function():
  cap = jax.new_ref(jnp.array(1.0))

  def user_fn(x):
    return cap

  for mode in ({'graph': False}, {'graph_updates': False}):
    with pytest.raises(ValueError, match='function user_fn at .* remat'):
      nnx.remat(user_fn, **mode)(jnp.ones(2))
