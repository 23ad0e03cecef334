"""nnx.jit(...).trace / .lower / .compile: the staged objects and calling a
Compiled with graph nodes, in every mode; the wrapper classes nnx.jit and
nnx.jit_partial return."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from flax.nnx.transforms import compilation


class Counter(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.array([1.0, 2.0]))
    self.n = nnx.BatchStat(jnp.array(0))


def step(c, x):
  c.n[...] += 1
  return c.w[...] * x


MODES = [
  ({}, 'JitWrapped', ''),
  ({'graph': False}, 'SimpleJitWrapped', 'Simple'),
  ({'graph_updates': False}, 'SimpleJitWrapped', 'Simple'),
]


@pytest.mark.parametrize('kw, wrapper, prefix', MODES)
def test_stages_and_compiled_call(kw, wrapper, prefix):
  f = nnx.jit(step, **kw)
  assert type(f).__name__ == wrapper
  c = Counter()
  traced = f.trace(c, 3.0)
  assert type(traced) is getattr(compilation, prefix + 'Traced')
  assert isinstance(traced.traced, jax.stages.Traced)
  assert traced.jit_wrapped is f
  assert traced.donate_argnums == ()
  lowered = traced.lower()
  assert type(lowered) is getattr(compilation, prefix + 'Lowered')
  text = lowered.as_text()
  assert 'module' in text and 'func.func' in text
  assert isinstance(lowered.cost_analysis(), dict)
  compiled = lowered.compile()
  assert type(compiled) is getattr(compilation, prefix + 'Compiled')
  assert isinstance(compiled.as_text(), str)
  np.testing.assert_allclose(compiled(c, 3.0), [3.0, 6.0])
  np.testing.assert_allclose(compiled.call(compiled, c, 1.0), [1.0, 2.0])
  assert int(c.n[...]) == 2  # the compiled calls updated the input
  assert (
    int(
      jax.tree_util.tree_leaves(
        lowered.out_tree.unflatten([0] * lowered.out_tree.num_leaves)
      )[0]
    )
    == 0
  )
  # lower() straight from the jitted function gives the same class
  assert type(f.lower(c, 3.0)) is type(lowered)


def test_compiled_rebuilds_graph_outputs():
  c = Counter()
  f = nnx.jit(lambda c: (c, c.w[...].sum()))
  compiled = f.lower(c).compile()
  out, s = compiled(c)
  assert out is c and float(s) == 3.0
  with pytest.raises(ValueError, match='lower it again'):
    compiled(nnx.Dict(a=nnx.Param(jnp.ones(2)), b=nnx.Param(jnp.ones(1))))


def test_compiled_static_arguments():
  f = nnx.jit(lambda c, k: c.w[...] * k, static_argnums=1)
  c = Counter()
  compiled = f.lower(c, 4).compile()
  np.testing.assert_allclose(compiled(c, 4), [4.0, 8.0])


def test_jit_partial_stages():
  c = Counter()
  f = nnx.jit_partial(step, c, graph_updates=False)
  assert type(f) is compilation.SimpleJitPartialWrapped
  assert f.partial_args == (c,)
  lowered = f.lower(2.0)
  assert type(lowered) is compilation.SimplePartialLowered
  assert type(f.trace(2.0)) is compilation.SimplePartialTraced
  compiled = lowered.compile()
  assert type(compiled) is compilation.SimplePartialCompiled
  np.testing.assert_allclose(compiled(2.0), [2.0, 4.0])
  np.testing.assert_allclose(f(1.0), [1.0, 2.0])
  assert int(c.n[...]) == 2


def test_simple_jit_wrapped_constructor_binds_partial_args():
  c = Counter()
  args = (None, None, None, None, None, None, False, None, None, False)
  f = compilation.SimpleJitWrapped(step, *args, (), False, ())
  assert type(f) is compilation.SimpleJitWrapped
  np.testing.assert_allclose(f(c, 2.0), [2.0, 4.0])
  g = compilation.SimpleJitWrapped(step, *args, (c,), True, ())
  assert type(g) is compilation.SimpleJitPartialWrapped
  np.testing.assert_allclose(g(1.0), [1.0, 2.0])
  assert int(c.n[...]) == 2


def test_update_shardings_place_variable_values():
  mesh = jax.make_mesh((1,), ('d',))
  sharding = jax.sharding.NamedSharding(mesh, jax.P())
  c = Counter()
  args = (None, None, None, None, None, None, False, None, None, False)
  f = compilation.SimpleJitWrapped(step, *args, (), False, (sharding, sharding))
  f(c, 1.0)
  assert c.n[...].sharding == sharding and int(c.n[...]) == 1


def test_jit_functions_handed_to_jax():
  f = nnx.jit(step)
  assert type(f._fn) is compilation.JitFn
  assert type(nnx.jit(step, graph=False)._fn) is compilation.SimpleJitFn
  c = Counter()
  p = nnx.jit_partial(step, c, graph=False)
  assert type(p._fn) is compilation.SimpleJitPartialFn
  # a SimpleJitFn in tree mode runs under jax.jit on its own: static
  # arguments first, then the pytree arguments; the values of the Variables
  # it set come back (None for the others, which keep their arrays)
  fn = compilation.SimpleJitFn(step, None, None, (), (), False, ())
  out, new = jax.jit(fn, static_argnums=0)(None, c, 2.0)
  np.testing.assert_allclose(out, [2.0, 4.0])
  assert int(new[0]) == 1 and new[1] is None
  # JitFn records the output structure of each call structure it traced
  f(c, 1.0)
  f.lower(c, 1.0)
  assert len(f._fn.out_static) == 1
  assert f._fn.ctxtag == 'nnx.jit'


@pytest.mark.parametrize(
  'kw', [dict(), dict(graph=False), dict(graph_updates=False)]
)
def test_eval_shape_of_a_jitted_function(kw):
  c = Counter()
  f = nnx.jit(step, static_argnums=1, **kw)
  out = f.eval_shape(c, 2)
  assert out == jax.ShapeDtypeStruct((2,), jnp.float32)
  assert int(c.n[...]) == 0  # nothing ran
  if kw:
    with pytest.raises(ValueError, match='Duplicate'):
      nnx.jit(lambda c: c, **kw).eval_shape(c)
  else:
    abstract = nnx.jit(lambda c: c).eval_shape(c)
    assert abstract is not c
    assert abstract.w.get_value() == jax.ShapeDtypeStruct((2,), jnp.float32)
