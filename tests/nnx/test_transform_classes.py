"""Public classes of flax.nnx.transforms.iteration / .transforms (reprs,
pytree behaviour and calls settled against Flax 0.12.8), and the transforms
handing them to JAX."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import nnx
from flax.nnx.transforms import iteration as it
from flax.nnx.transforms import transforms as tr


class M(nnx.Module):
  def __init__(self):
    self.w = nnx.Param(jnp.ones(2))
    self.c = nnx.BatchStat(jnp.zeros(()))

  def __call__(self, x):
    return self.w * x

  def double(self, x):
    return 2 * self.w * x


def test_broadcasted():
  b = it.Broadcasted(jnp.ones(2))
  assert repr(b) == 'Broadcasted(data=Array([1., 1.], dtype=float32))'
  assert (
    str(jax.tree.structure(b)) == 'PyTreeDef(CustomNode(Broadcasted[()], [*]))'
  )
  paths, _ = jax.tree_util.tree_flatten_with_path(it.Broadcasted(5))
  assert paths == [((jax.tree_util.GetAttrKey('data'),), 5)]
  assert b.replace(data=3).data == 3
  with pytest.raises(dataclasses.FrozenInstanceError):
    b.data = 3


def test_pytree_deque():
  d = it.PytreeDeque([1, 2])
  assert repr(d) == 'PytreeDeque([1, 2])'
  doubled = jax.tree.map(lambda x: x * 2, d)
  assert type(doubled) is it.PytreeDeque and list(doubled) == [2, 4]
  assert (
    str(jax.tree.structure(d))
    == 'PyTreeDef(CustomNode(PytreeDeque[()], [*, *]))'
  )
  paths, _ = jax.tree_util.tree_flatten_with_path(d)
  assert [p for p, _ in paths] == [
    (jax.tree_util.SequenceKey(0),),
    (jax.tree_util.SequenceKey(1),),
  ]
  bounded = it.PytreeDeque([1, 2, 3], 2)
  assert list(bounded) == [2, 3] and bounded.maxlen == 2
  assert jax.tree.map(lambda x: x, bounded).maxlen is None


def test_labeled():
  assert it.labeled is tr.labeled
  t = it.labeled(a=1, b=2)
  assert (t.a, t[1], t._fields) == (1, 2, ('a', 'b'))
  assert repr(it.labeled(b=2, a=1)) == 'LabeledTuple(b=2, a=1)'
  assert jax.tree.leaves(t) == [1, 2]
  with pytest.raises(TypeError):
    it.labeled(1)


def test_value_metadata():
  v = tr.ValueMetadata(nnx.Param, jnp.ones(2), {'x': 1})
  assert jax.tree.leaves(v)[0].shape == (2,)
  assert str(jax.tree.structure(v)) == (
    "PyTreeDef(CustomNode(ValueMetadata[(<class 'flax.nnx.variablelib."
    "Param'>, (('x', 1),))], [*]))"
  )
  out = jax.tree.map(lambda x: x + 1, v)
  np.testing.assert_array_equal(out.value, [2.0, 2.0])
  assert out.var_type is nnx.Param and out.metadata == {'x': 1}
  assert tr.ValueMetadata(nnx.Param, 1, {}) == tr.ValueMetadata(
    nnx.Param, 1, {}
  )
  with pytest.raises(TypeError, match='unhashable'):
    hash(tr.ValueMetadata(nnx.Param, 1, {}))
  with pytest.raises(dataclasses.FrozenInstanceError):
    v.value = 3


def test_delayed_accessor_and_callable_proxy():
  acc = tr.DelayedAccessor().foo[0].bar
  assert repr(acc) == (
    "DelayedAccessor(actions=(GetAttr(name='foo'), GetItem(key=0), "
    "GetAttr(name='bar')))"
  )
  assert tr.DelayedAccessor()['k']({'k': 5}) == 5
  proxy = tr.CallableProxy(lambda a, *args, **kw: (a, args, kw))
  a, args, kw = proxy.x[1](3, z=4)
  assert a == tr.DelayedAccessor().x[1] and args == (3,) and kw == {'z': 4}


def test_lifted_module():
  class Bad(tr.LiftedModule):
    pass

  with pytest.raises(TypeError, match='abstract'):
    Bad()

  seen = []

  class Wrap(tr.LiftedModule):
    def __init__(self, m):
      self.m = m

    @property
    def _submodule(self):
      return self.m

    def _call(self, accessor, *args, **kwargs):
      seen.append(accessor)
      return accessor(self.m)(*args, **kwargs)

  w = Wrap(M())
  np.testing.assert_array_equal(w(1.0), [1.0, 1.0])
  np.testing.assert_array_equal(w.call.double(x=3.0), [6.0, 6.0])
  assert seen == [tr.DelayedAccessor(), tr.DelayedAccessor().double]
  assert isinstance(w, nnx.Module)
  assert jax.tree.leaves(nnx.state(w, nnx.Param))[0].shape == (2,)


# -- the callables the transforms run ----------------------------------------------


def test_simple_fns_return_outputs_and_updates():
  f = lambda *a, **k: (a, k)  # noqa: E731
  assert tr.SimpleCondFn(f, False)(1, 2) == (((1, 2), {}), [])
  assert tr.SimpleCheckifyFn(f, False)(1, 2) == (((1, 2), {}), [])
  assert tr.SimpleEvalShapeFn(f, False)(1, z=2) == ((1,), {'z': 2})
  assert tr.SimpleMakeJaxprFn(f, False)(1, z=2) == ((1,), {'z': 2})
  # output, then the Variable values leaving mapped and unmapped
  assert it.SimpleVmapFn(f, False, 0, 0, (0,))(1, 2) == (((1, 2), {}), [], [])
  assert it.SimpleWhileLoopCondFn(lambda v: v > 0, False)(3)
  assert it.SimpleWhileLoopBodyFn(lambda v: v - 1, False)(3) == 2
  assert it.SimpleForiLoopBodyFn(lambda i, v: v + i, False)(2, 3) == 5
  assert it.WhileLoopCondFn(lambda v: v > 0)(3)
  m = M()
  out, values = tr.SimpleCondFn(lambda m: m.w[...].sum(), True)(m)
  assert float(out) == 2.0 and len(values) == 2


def test_graph_fns_need_the_transform():
  with pytest.raises(ValueError, match='graph_args'):
    tr.CheckifyFn(lambda x: x)(1)
  with pytest.raises(ValueError, match='graph_args'):
    it.VmapFn(lambda x: x, {}, 0, 0)(1)


def test_simple_loop_body_keeps_the_carry_structure():
  # a carry that changes outside graph nodes is left to JAX's loop
  assert it.SimpleWhileLoopBodyFn(lambda v: (v, v), False)(1) == (1, 1)
  with pytest.raises(TypeError, match='carry output must have the same'):
    nnx.while_loop(lambda c: False, lambda c: (c, c), 1, graph=False)


def test_shared_variables_in_pytree_modes():
  class Shared(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.ones(2))
      self.v = self.w

  # graph=True, graph_updates=False: shared references cross as shared
  assert nnx.cond(True, lambda m: 1, lambda m: 2, Shared(), graph_updates=False)
  with pytest.raises(
    ValueError, match=r'Duplicate Param(.|\n)*\.operands\[0\]\.v'
  ):
    nnx.cond(True, lambda m: 1, lambda m: 2, Shared(), graph=False)


@pytest.mark.parametrize('graph_updates', [True, False])
def test_transforms_run_these_callables(monkeypatch, graph_updates):
  seen = []

  def spy(name, fn, pos=0):
    def wrapped(*args, **kwargs):
      seen.append((name, type(args[pos]).__name__))
      return fn(*args, **kwargs)

    return wrapped

  monkeypatch.setattr(jax, 'vmap', spy('vmap', jax.vmap))
  monkeypatch.setattr(jax.lax, 'scan', spy('scan', jax.lax.scan))
  monkeypatch.setattr(
    jax.lax, 'fori_loop', spy('fori_loop', jax.lax.fori_loop, 2)
  )
  m = M()
  kw = dict(graph_updates=graph_updates)
  nnx.vmap(lambda m, x: m(x), in_axes=(None, 0), **kw)(m, jnp.ones(3))
  nnx.scan(lambda m, x: (m, m(x)), in_axes=(nnx.Carry, 0), **kw)(m, jnp.ones(3))
  nnx.fori_loop(0, 2, lambda i, m: m, m, **kw)
  prefix = '' if graph_updates else 'Simple'
  assert seen == [
    ('vmap', f'{prefix}VmapFn'),
    ('scan', f'{prefix}ScanFn'),
    ('fori_loop', f'{prefix}ForiLoopBodyFn'),
  ]


def test_carry_is_reported_from_the_iteration_module():
  import pickle

  from flax.nnx.transforms import iteration

  assert (
    repr(iteration.Carry) == "<class 'flax.nnx.transforms.iteration.Carry'>"
  )
  assert pickle.loads(pickle.dumps(iteration.Carry)) is iteration.Carry
