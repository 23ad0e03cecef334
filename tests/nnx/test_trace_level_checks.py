"""Variables and Pytrees belong to the JAX trace they were created in (by
their constructor, a copy, jax.tree.unflatten or NNX's rebuilding):
mutating them from another trace is Flax 0.12.8's TraceContextError."""

import pathlib
import sys
import jax
import jax.numpy as jnp
import pytest
from flax import errors, nnx

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import stand_in_layers  # noqa: E402


class M(nnx.Module):
  def __init__(self):
    self.c = nnx.Variable(jnp.array(0))


TRACE_ERROR = 'Cannot mutate Variable from a different trace level'


def _raises_trace_error(fn, match=TRACE_ERROR):
  with pytest.raises(errors.TraceContextError, match=match):
    fn()


@pytest.mark.parametrize('graph', [True, False])
def test_state_merged_inside_grad_of_jit(graph):
  gd, st = nnx.split(M(), graph=graph)

  @jax.jit
  def f(st, x):
    def loss(x):
      m = nnx.merge(gd, st)
      m.c[...] += 1
      return x * 2.0

    return jax.grad(loss)(x)

  _raises_trace_error(lambda: f(st, 1.0))


def test_inner_transforms_of_jit():
  gd, st = nnx.split(M())

  def bump():
    m = nnx.merge(gd, st)
    m.c[...] += 1

  @jax.jit
  def scan(st, xs):
    return jax.lax.scan(lambda c, x: (bump(), (c, x))[1], 0, xs)

  @jax.jit
  def vmap(st, xs):
    return jax.vmap(lambda x: (bump(), x)[1])(xs)

  @jax.jit
  def cond(st, p):
    return jax.lax.cond(p, lambda: (bump(), 1)[1], lambda: 0)

  for fn in (lambda: scan(st, jnp.ones(3)), lambda: vmap(st, jnp.ones(3))):
    _raises_trace_error(fn)
  _raises_trace_error(lambda: cond(st, True))


def test_mutation_at_the_right_level_works():
  gd, st = nnx.split(M())

  @jax.jit
  def same_level(st):
    m = nnx.merge(gd, st)
    m.c[...] += 1
    return nnx.state(m)

  assert int(same_level(st)['c'][...]) == 1

  @jax.jit
  def carried(st, xs):
    def body(st, x):
      m = nnx.merge(gd, st)
      m.c[...] += 1
      return nnx.state(m), x

    return jax.lax.scan(body, st, xs)[0]

  assert int(carried(st, jnp.ones(3))['c'][...]) == 3

  @jax.jit
  def operand(st, p):
    def t(st):
      nnx.merge(gd, st).c[...] += 1
      return 1

    return jax.lax.cond(p, t, lambda st: 0, st)

  assert int(operand(st, True)) == 1

  @jax.jit
  def reads(st, x):
    return jax.grad(lambda x: x * nnx.merge(gd, st).c[...])(x)

  assert float(reads(st, 1.0)) == 0.0


def test_copies_and_unflattened_variables_record_their_trace():
  v = nnx.Variable(jnp.array(0))
  for w in (v.copy(), jax.tree.map(lambda x: x, v), nnx.clone(M()).c):
    _raises_trace_error(lambda w=w: jax.jit(lambda: w.__setitem__(..., 5))())

  def f(x):
    w = v.copy()

    def loss(x):
      w[...] += 1
      return x

    return jax.grad(loss)(x)

  _raises_trace_error(lambda: jax.jit(f)(1.0))


def test_metadata_writes_are_checked():
  v = nnx.Variable(jnp.array(0), foo=1)
  for fn in (
    lambda: setattr(v, 'foo', 2),
    lambda: v.set_metadata('foo', 3),
    lambda: v.set_metadata({'foo': 4}),
    lambda: v.del_metadata('foo'),
    lambda: v.set_raw_value(jnp.array(1)),
  ):
    _raises_trace_error(lambda fn=fn: jax.jit(fn)())
  assert v.foo == 1


def test_ref_values_may_be_written_from_any_trace():
  r = nnx.Variable(jnp.array(0), ref=True)

  def f(x):
    def loss(x):
      r[...] += 1
      return x

    return jax.grad(loss)(x)

  assert float(jax.jit(f)(1.0)) == 1.0
  jax.jit(lambda: r.__setitem__(..., 5))()
  assert int(r[...]) == 5
  # its metadata is still checked
  _raises_trace_error(lambda: jax.jit(lambda: setattr(r, 'z', 1))())


def test_rebuilt_modules_record_their_trace():
  gd, st = nnx.split(M())

  @jax.jit
  def f(st, x):
    m = nnx.merge(gd, st)

    def loss(x):
      m.y = 1
      return x * 2.0

    return jax.grad(loss)(x)

  _raises_trace_error(
    lambda: f(st, 1.0), "Cannot mutate 'M' from different trace level"
  )

  @jax.jit
  def g(st):
    m = nnx.merge(gd, st)
    m.y = 1
    return 0

  g(st)


def test_deleting_a_module_attribute_is_not_checked():
  m = stand_in_layers.Linear(1, 1, rngs=nnx.Rngs(0))
  jax.jit(lambda: delattr(m, 'bias'))()
  assert not hasattr(m, 'bias')


def test_nnx_transforms_keep_working():
  m = M()

  @nnx.jit
  def f(m):
    def loss(m, x):
      m.c[...] += 1
      return x * 2.0

    return nnx.grad(loss, argnums=1)(m, 1.0)

  assert float(f(m)) == 2.0 and int(m.c[...]) == 1

  @nnx.jit
  def g(m):
    def body(m, x):
      m.c[...] += 1
      return m, x

    return nnx.scan(body)(m, jnp.ones(3))[1]

  g(m)
  assert int(m.c[...]) == 4
  ys = nnx.vmap(lambda m, x: x * m.c[...], in_axes=(None, 0))(m, jnp.ones(2))
  assert ys.tolist() == [4.0, 4.0]
