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


MESH = jax.make_mesh((1,), ('d',))  # one device: the tests run on any host
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


NODE = nnx.Dict(a=nnx.Param(jnp.ones(1)))
IDENTITY = lambda x: x  # noqa: E731

PREFIX_ERRORS = [
  (
    lambda: nnx.vmap(IDENTITY, in_axes=NODE),
    r'Found graph node of type Dict at path  in `in_axes` for nnx\.vmap',
  ),
  (
    lambda: nnx.vmap(IDENTITY, out_axes=NODE),
    r'Found graph node of type Dict at path  in `out_axes` for nnx\.vmap',
  ),
  (
    lambda: nnx.grad(IDENTITY, argnums=NODE),
    r'Found graph node of type Dict at path  in `argnums` for nnx\.grad',
  ),
  (
    lambda: nnx.jit(IDENTITY, in_shardings=NODE),
    r'Found graph node of type Dict at path  in `in_shardings` for nnx\.jit',
  ),
  (
    lambda: nnx.scan(IDENTITY, in_axes=NODE),
    r'Found graph node of type Dict at path  in `in_axes` for nnx\.scan',
  ),
  (
    lambda: nnx.pmap(IDENTITY, in_axes=NODE),
    r'Found graph node of type Dict at path  in `in_axes` for nnx\.pmap',
  ),
  (
    lambda: nnx.shard_map(
      IDENTITY, mesh=MESH, in_specs=NODE, out_specs=jax.P()
    ),
    r'Found graph node of type Dict at path  in `in_specs` for '
    r'nnx\.shard_map',
  ),
  (
    lambda: nnx.grad(IDENTITY, argnums=nnx.DiffState(0, ...), graph=False),
    r'`argnums` cannot contain `DiffState` objects when `graph=False` or '
    r'`graph_updates=False`',
  ),
  (
    lambda: nnx.grad(
      IDENTITY, argnums=nnx.DiffState(0, ...), graph_updates=False
    ),
    r'`argnums` cannot contain `DiffState` objects',
  ),
  (
    lambda: nnx.vmap(IDENTITY, in_axes=nnx.StateAxes({...: 0}), graph=False),
    r'`in_axes` cannot contain `StateAxes` objects',
  ),
  (
    lambda: nnx.vmap(
      IDENTITY, out_axes=nnx.StateAxes({...: 0}), graph_updates=False
    ),
    r'`out_axes` cannot contain `StateAxes` objects',
  ),
  (
    lambda: nnx.jit(
      IDENTITY, in_shardings=nnx.StateSharding({...: None}), graph=False
    ),
    r'`in_shardings` cannot contain `StateSharding` objects',
  ),
  (
    lambda: nnx.scan(IDENTITY, in_axes=(nnx.StateAxes({...: 0}),), graph=False),
    r'`in_axes` cannot contain `StateAxes` objects',
  ),
  (
    lambda: nnx.custom_vjp(
      IDENTITY, nondiff_argnums=(nnx.DiffState(0, ...),), graph=False
    ),
    r'`nondiff_argnums` cannot contain `DiffState` objects',
  ),
  (
    lambda: nnx.vmap(IDENTITY, in_axes=(nnx.Variable(0),), graph=False),
    r'Found Variable of type Variable at path \[0\] in `in_axes` for '
    r'nnx\.vmap',
  ),
  (
    lambda: nnx.vmap(IDENTITY, in_axes=(nnx.Variable(0),)),
    r'Found Variable of type Variable at path \[0\] in `in_axes`',
  ),
]


@pytest.mark.parametrize('make, phrase', PREFIX_ERRORS)
def test_prefix_checked_at_creation(make, phrase):
  with pytest.raises(ValueError, match=phrase):
    make()


def test_prefix_checks_wait_for_the_function():
  # the decorator form checks when it gets the function
  deco = nnx.vmap(in_axes=nnx.StateAxes({...: 0}), graph=False)
  with pytest.raises(ValueError, match='cannot contain `StateAxes`'):
    deco(IDENTITY)


def test_node_shaped_prefix_accepted_in_tree_mode():
  m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
  axes = nnx.prefix(m, {...: None}, graph=False)
  f = nnx.vmap(lambda m, x: m(x), in_axes=(axes, 0), graph=False)
  assert f(m, jnp.ones((4, 2))).shape == (4, 3)


def _two(a, b):
  return a, b


SCAN_AXES_ERRORS = [
  (
    dict(in_axes=(nnx.Carry, nnx.Carry)),
    r'Found multiple Carry definitions at in_axes\[0\] and in_axes\[1\]',
  ),
  (
    dict(in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, nnx.Carry)),
    r'Found multiple Carry definitions at out_axes\[0\] and out_axes\[1\]',
  ),
  (
    dict(in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, None)),
    r'Cannot broadcast output state\. Got out_axes=None at: out_axes\[1\]',
  ),
  (
    dict(in_axes=0, out_axes=None),
    r'Cannot broadcast output state\. Got out_axes=None at: out_axes',
  ),
  (
    dict(in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, (0, None))),
    r'Got out_axes=None at: out_axes\[1\]\[1\]',
  ),
  (
    dict(in_axes=(nnx.Carry, 0), out_axes=0),
    r'If one of in_axes or out_axes has Carry, the other must also have '
    r'Carry',
  ),
  (
    dict(in_axes=(0, 0), out_axes=(nnx.Carry, 0)),
    r'If one of in_axes or out_axes has Carry, the other must also have '
    r'Carry',
  ),
  (
    dict(in_axes=((nnx.Carry, 0),), out_axes=(nnx.Carry, 0)),
    r'Carry must at the top-level, it cannot be nested',
  ),
]


@pytest.mark.parametrize('kw, phrase', SCAN_AXES_ERRORS)
def test_scan_axes_checked_at_creation(kw, phrase):
  with pytest.raises(ValueError, match=phrase):
    nnx.scan(_two, **kw)


def test_scan_whole_carry_takes_one_argument():
  f = nnx.scan(_two, in_axes=nnx.Carry, out_axes=nnx.Carry)
  with pytest.raises(
    ValueError,
    match=r'When in_axes=Carry, the function must take exactly one '
    r'argument, got 2 arguments',
  ):
    f(jnp.zeros(2), jnp.ones((3, 2)))


ALIASING = (
  r'Inconsistent aliasing detected\. The following nodes have '
  r'different prefixes'
)


def _shared():
  return nnx.Param(jnp.zeros((4, 4)))


ALIASING_CASES = {
  'vmap (0, 1)': lambda v: nnx.vmap(lambda a, b: None, in_axes=(0, 1))(v, v),
  'vmap (0, None)': lambda v: nnx.vmap(
    lambda a, b: a[...] + b[...], in_axes=(0, None)
  )(v, v),
  'vmap node and var': lambda v: nnx.vmap(lambda a, b: None, in_axes=(0, None))(
    nnx.Dict(a=v), v
  ),
  'vmap in 0 out 1': lambda v: nnx.vmap(lambda a: a, in_axes=0, out_axes=1)(v),
  'vmap gu=False': lambda v: nnx.vmap(
    lambda a, b: None, in_axes=(0, 1), graph_updates=False
  )(v, v),
  'shard_map': lambda v: nnx.shard_map(
    lambda a, b: None,
    mesh=MESH,
    in_specs=(jax.P('d'), jax.P()),
    out_specs=jax.P(),
  )(v, v),
  'jit': lambda v: nnx.jit(
    lambda a, b: None,
    in_shardings=(
      jax.NamedSharding(MESH, jax.P('d')),
      jax.NamedSharding(MESH, jax.P()),
    ),
  )(v, v),
  'grad': lambda v: nnx.grad(lambda a, b: (a[...] + b[...]).sum(), argnums=0)(
    v, v
  ),
  'grad gu=False': lambda v: nnx.grad(
    lambda a, b: (a[...] + b[...]).sum(), argnums=0, graph_updates=False
  )(v, v),
  'scan': lambda v: nnx.scan(lambda a, b: (a, None), in_axes=(nnx.Carry, 0))(
    v, v
  ),
}


@pytest.mark.parametrize('name', sorted(ALIASING_CASES))
def test_inconsistent_aliasing(name):
  with pytest.raises(ValueError, match=ALIASING):
    ALIASING_CASES[name](_shared())


def test_consistent_aliasing_accepted():
  v = _shared()
  out = nnx.vmap(lambda a, b: a['a'][...] + b[...], in_axes=(0, 0))(
    nnx.Dict(a=v), v
  )
  assert out.shape == (4, 4)


DUPLICATE = r'Duplicate Param\('


def test_tree_mode_jit_returning_input_variable():
  v = nnx.Param(jnp.arange(3.0))
  with pytest.raises(ValueError, match=DUPLICATE) as info:
    nnx.jit(lambda a: a, graph=False)(v)
  assert 'does not support Variable aliasing' in str(info.value)


def test_scan_returning_input_variable_in_outputs():
  v = nnx.Param(jnp.arange(3.0))
  with pytest.raises(ValueError, match=DUPLICATE) as info:
    nnx.scan(lambda a: a, in_axes=0, out_axes=0, graph_updates=False)(v)
  assert (
    'nnx.scan with graph_updates=False does not support Variable '
    'aliasing' in str(info.value)
  )


def test_jit_partial_shared_variable_refused_at_creation():
  v = nnx.Param(jnp.arange(3.0))
  c1, c2 = nnx.Dict(v=v), nnx.Dict(v=v)
  with pytest.raises(ValueError, match=DUPLICATE) as info:
    nnx.jit_partial(lambda a, b, x: x, c1, c2, graph=False)
  assert '.args[0].v' in str(info.value)
  assert '.args[1].v' in str(info.value)


def test_while_loop_refuses_replaced_variable():
  m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))

  def swap(s):
    mod, c = s
    mod.kernel = nnx.Param(jnp.zeros((2, 2)))
    return mod, c - 1

  with pytest.raises(
    ValueError,
    match="nnx.while_loop requires body function's input and output to "
    'have the same reference and pytree structure',
  ):
    nnx.while_loop(lambda s: s[1] > 0, swap, (m, 2))


CAPTURED = {
  'vmap': (
    lambda o: nnx.vmap(lambda x: o, in_axes=0, out_axes=0)(jnp.zeros(4)),
    r'Cannot extract graph node from different trace level, got Variable\(',
  ),
  'jit': (
    lambda o: nnx.jit(lambda x: o)(jnp.zeros(4)),
    r'Cannot extract graph node from different trace level',
  ),
  'scan': (
    lambda o: nnx.scan(lambda c, x: (c, o))(jnp.zeros(()), jnp.zeros(4)),
    r'Cannot extract graph node from different trace level',
  ),
  'jit graph_updates=False': (
    lambda o: nnx.jit(lambda x: o, graph_updates=False)(jnp.zeros(4)),
    r'Cannot return captured Variable of type Variable from nnx\.jit',
  ),
  'jit tree': (
    lambda o: nnx.jit(lambda x: o, graph=False)(jnp.zeros(4)),
    r'Cannot return captured Variable of type Variable from nnx\.jit',
  ),
  'vmap graph_updates=False': (
    lambda o: nnx.vmap(lambda x: o, graph_updates=False)(jnp.zeros(4)),
    r'Cannot return captured Variable of type Variable from nnx\.vmap',
  ),
}


@pytest.mark.parametrize('name', sorted(CAPTURED))
def test_returning_captured_variable(name):
  call, phrase = CAPTURED[name]
  with pytest.raises(ValueError, match=phrase):
    call(nnx.Dict(a=nnx.Variable(jnp.arange(4))))


def test_grad_aux_may_hold_captured_variable():
  outer = nnx.Dict(a=nnx.Variable(jnp.arange(4)))
  grads, aux = nnx.grad(lambda x: (x.sum(), outer), has_aux=True)(jnp.zeros(4))
  assert grads.tolist() == [1.0, 1.0, 1.0, 1.0]
  assert aux['a'] is not outer['a']
  assert aux['a'][...].tolist() == [0, 1, 2, 3]
