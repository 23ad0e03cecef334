"""Array references (jax.Ref) leaving an update context or a graph-mode
jit: the Refs a function was given come out as NoUpdate markers (the outer
merge keeps them), those made inside as ArrayRefOutput markers (the outer
merge makes new Refs of their values), as Flax 0.12.8."""

import pathlib
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import nnx
from flax.nnx import graphlib

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from stand_in_layers import Linear  # noqa: E402


@nnx.dataclass
class Box(nnx.Pytree):
  r: jax.Ref = nnx.data()


def ref_linear(seed=0):
  return nnx.with_vars(Linear(1, 2, rngs=nnx.Rngs(seed)), ref=True)


def value_of(v):
  return v.get_raw_value()


def test_inner_split_marks_given_and_new_refs():
  m1, box1 = ref_linear(), Box(jax.new_ref(jnp.ones(2)))
  captured = ref_linear(1)
  with nnx.update_context('t'):
    with nnx.split_context('t') as ctx:
      graphdef, state = ctx.split((m1, box1))
    # the outer split keeps the Refs
    assert isinstance(value_of(state[0]['kernel']), jax.Ref)
    with nnx.merge_context('t', True) as ctx:
      m2, box2 = ctx.merge(graphdef, state)
    new_box = Box(jax.new_ref(jnp.full(2, 3.0)))
    with nnx.split_context('t') as ctx:
      graphdef_out, out = ctx.split((m2, box2, new_box, captured, m2))
    for name in ('kernel', 'bias'):
      assert isinstance(value_of(out[0][name]), graphlib.NoUpdate)
      marker = value_of(out[3][name])
      assert isinstance(marker, graphlib.ArrayRefOutput)
      np.testing.assert_array_equal(marker.value, getattr(captured, name)[...])
    assert isinstance(out[1]['r'], graphlib.NoUpdate)
    assert isinstance(out[2]['r'], graphlib.ArrayRefOutput)
    assert 4 not in out  # a repeated object is a reference
    # NoUpdate has no leaves, ArrayRefOutput its value
    assert len(jax.tree.leaves(out)) == 3
    # the objects split keep their Refs; the marked Variables are copies
    assert isinstance(value_of(m2.kernel), jax.Ref)
    assert isinstance(value_of(captured.kernel), jax.Ref)
    assert out[0]['kernel'] is not m2.kernel
    assert out[0]['kernel'].get_metadata('ref') is True
    with nnx.merge_context('t', False) as ctx:
      m3, box3, new3, cap3, m4 = ctx.merge(graphdef_out, out)
  assert m3 is m1 and m4 is m1 and box3 is box1
  assert isinstance(value_of(m1.kernel), jax.Ref)
  assert box3.r is box1.r
  assert isinstance(new3.r, jax.Ref) and new3.r[...].tolist() == [3.0, 3.0]
  assert cap3 is not captured and cap3.kernel is not captured.kernel
  assert isinstance(value_of(cap3.kernel), jax.Ref)
  np.testing.assert_array_equal(cap3.kernel[...], captured.kernel[...])


def test_inner_flatten_without_paths_and_plain_arrays():
  m1, plain = ref_linear(), Linear(1, 1, rngs=nnx.Rngs(0))
  with nnx.update_context('t'):
    with nnx.split_context('t') as ctx:
      graphdef, flat = ctx.flatten((m1, plain))
    with nnx.merge_context('t', True) as ctx:
      m2, plain2 = ctx.merge(graphdef, flat)
    with nnx.split_context('t') as ctx:
      _, leaves = ctx.flatten((m2, plain2), with_paths=False)
  assert [type(x).__name__ for x in leaves] == [
    'NoUpdate',
    'NoUpdate',
    'ArrayImpl',
    'ArrayImpl',
  ]


def test_to_tree_and_from_tree_in_an_update_context():
  m1 = ref_linear()
  with nnx.update_context('t'):
    (m2,) = nnx.from_tree(
      nnx.to_tree((m1,), ctxtag='t'), ctxtag='t', is_inner=True
    )
    made = ref_linear(1)
    out = nnx.to_tree((m2, made), ctxtag='t', prefix=0)
    assert isinstance(value_of(out[0].states[0]['kernel']), graphlib.NoUpdate)
    assert isinstance(
      value_of(out[1].states[0]['kernel']), graphlib.ArrayRefOutput
    )
    m3, made2 = nnx.from_tree(out, ctxtag='t', is_inner=False, prefix=0)
  assert m3 is m1 and made2 is not made
  assert isinstance(value_of(made2.kernel), jax.Ref)


def test_markers_and_flat_state_are_pytrees():
  assert jax.tree.leaves(graphlib.NoUpdate()) == []
  out = graphlib.ArrayRefOutput(jnp.ones(2))
  assert jax.tree.map(lambda x: x * 2, out).value.tolist() == [2.0, 2.0]
  assert repr(graphlib.ArrayRefOutput(1)) == 'ArrayRefOutput(\n  value=1\n)'
  _, flat = nnx.graphlib.flatten(Linear(1, 2, rngs=nnx.Rngs(0)))
  keyed, _ = jax.tree_util.tree_flatten_with_path(flat)
  assert [p[0] for p, _ in keyed] == [
    jax.tree_util.FlattenedIndexKey(0),
    jax.tree_util.FlattenedIndexKey(1),
  ]
  doubled = jax.tree.map(lambda x: x * 2, flat)
  assert isinstance(doubled, nnx.graph.FlatState)
  assert doubled.paths == flat.paths


@pytest.mark.parametrize(
  'jit',
  [
    nnx.compat.jit,
    nnx.jit,
    # in_shardings: the general (not the fast) path
    lambda f: nnx.compat.jit(f, in_shardings=(None,)),
  ],
)
def test_jit_returns_modules_with_refs_made_inside(jit):
  m1 = ref_linear()
  made = []

  @jit
  def f(m):
    made.append(ref_linear(1))
    return m, made[-1], Box(jax.new_ref(jnp.ones(2)))

  for _ in range(2):  # the second call reuses the compiled function
    same, new, box = f(m1)
    assert same is m1
    assert new is not made[0]
    assert isinstance(new.kernel, nnx.Param)
    assert isinstance(value_of(new.kernel), jax.Ref)
    assert isinstance(new.kernel[...], jax.Array)
    assert isinstance(box.r, jax.Ref) and box.r[...].tolist() == [1.0, 1.0]
  np.testing.assert_allclose(
    new.kernel[...], Linear(1, 2, rngs=nnx.Rngs(1)).kernel[...]
  )


def test_jit_refs_made_inside_need_a_graph_argument():
  # without a graph node or Ref among the arguments JAX refuses them
  f = nnx.compat.jit(lambda x: ref_linear())
  with pytest.raises(ValueError, match='mutable array reference'):
    f(jnp.ones(1))
  g = nnx.jit(lambda m: ref_linear(), graph=True, graph_updates=False)
  with pytest.raises(ValueError, match='mutable array reference'):
    g(ref_linear())
