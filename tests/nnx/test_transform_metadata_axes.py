"""The partition axis name in ``out_sharding`` through nnx.scan / nnx.vmap
with ``transform_metadata``, nnx.transform_metadata and nnx.spmd: removed
inside (it must be the name at the mapped axis), inserted once into the
outputs, the inputs returned as themselves."""

import jax
import jax.numpy as jnp
import pytest
from flax import nnx

LAYERS = {nnx.PARTITION_NAME: 'layers'}
MISMATCH = "Expected to remove 'layers' at index 0 from \\('din', 'dout'\\)"


def _param(names=('layers', 'din', 'dout'), shape=(3, 4, 5)):
  return nnx.Param(jnp.ones(shape), out_sharding=names, eager_sharding=False)


class M(nnx.Module):
  def __init__(self):
    self.w = _param()


def test_scan_returning_its_scanned_variable():
  inside = []

  def body(c, v):
    inside.append(v.out_sharding)
    return c, v

  v = _param()
  f = nnx.scan(
    body,
    in_axes=(nnx.Carry, 0),
    out_axes=(nnx.Carry, 0),
    transform_metadata=LAYERS,
  )
  _, out = f(jnp.zeros(()), v)
  assert inside == [('din', 'dout')]
  assert out is v
  assert v.out_sharding == ('layers', 'din', 'dout')


def test_scan_returning_its_scanned_module():
  inside = []

  def body(c, m):
    inside.append(m.w.out_sharding)
    return c, m

  m = M()
  f = nnx.scan(
    body,
    in_axes=(nnx.Carry, 0),
    out_axes=(nnx.Carry, 0),
    transform_metadata=LAYERS,
  )
  _, out = f(jnp.zeros(()), m)
  assert inside == [('din', 'dout')]
  assert out is m and out.w.out_sharding == ('layers', 'din', 'dout')
  assert out.w.shape == (3, 4, 5)


def test_scan_returning_a_new_variable_gets_the_name_once():
  def body(c, v):
    return c, nnx.Param(
      v[...] * 2, out_sharding=('a', 'b'), eager_sharding=False
    )

  f = nnx.scan(
    body,
    in_axes=(nnx.Carry, 0),
    out_axes=(nnx.Carry, 0),
    transform_metadata=LAYERS,
  )
  _, out = f(jnp.zeros(()), _param())
  assert out.out_sharding == ('layers', 'a', 'b')
  assert out.shape == (3, 4, 5)


def test_stack_built_with_vmap_then_scanned_and_returned():
  class Block(nnx.Module):
    def __init__(self, rngs):
      self.w = nnx.Param(
        jax.random.normal(rngs.params(), (2, 3)),
        out_sharding=('din', 'dout'),
        eager_sharding=False,
      )

  made, seen = [], []

  @nnx.split_rngs(splits=4)
  @nnx.vmap(in_axes=0, out_axes=0, transform_metadata=LAYERS)
  def make(rngs):
    b = Block(rngs)
    made.append(b.w.out_sharding)
    return b

  b = make(nnx.Rngs(0))
  assert made == [('din', 'dout')]
  assert b.w.out_sharding == ('layers', 'din', 'dout')

  @nnx.scan(
    in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0), transform_metadata=LAYERS
  )
  def fwd(x, blk):
    seen.append(blk.w.out_sharding)
    return x @ blk.w[...][:, :2], blk

  _, b2 = fwd(jnp.ones(2), b)
  assert seen == [('din', 'dout')]
  assert b2 is b and b.w.out_sharding == ('layers', 'din', 'dout')


def test_vmap_returning_its_input_on_another_axis():
  inside = []

  def body(m):
    inside.append(m.w.out_sharding)
    return m

  m = M()
  m.w = _param(('din', 'layers', 'dout'))
  out = nnx.vmap(body, in_axes=1, out_axes=1, transform_metadata=LAYERS)(m)
  assert inside == [('din', 'dout')]
  assert out is m and m.w.out_sharding == ('din', 'layers', 'dout')


def test_partition_name_must_be_at_the_mapped_axis():
  v = _param(('din', 'dout'))
  with pytest.raises(ValueError, match=MISMATCH):
    nnx.scan(
      lambda c, v: (c, 0),
      in_axes=(nnx.Carry, 0),
      out_axes=(nnx.Carry, 0),
      transform_metadata=LAYERS,
    )(jnp.zeros(()), v)
  with pytest.raises(ValueError, match=MISMATCH):
    nnx.vmap(lambda v: 0, transform_metadata=LAYERS)(v)
  with pytest.raises(ValueError, match=MISMATCH):
    nnx.transform_metadata(partition='layers')(lambda v: 0)(v)
  with pytest.raises(ValueError, match=MISMATCH):
    nnx.spmd.remove_axis(nnx.State({'w': v}), 0, LAYERS)
  assert v.out_sharding == ('din', 'dout')
  # a Variable without out_sharding has nothing to check
  nnx.vmap(lambda v: 0, transform_metadata=LAYERS)(_param(None))


@pytest.mark.parametrize(
  'kw',
  [dict(graph_updates=False), dict(graph=False)],
  ids=['no_updates', 'tree'],
)
def test_pytree_modes_leave_the_metadata_alone(kw):
  for names in [('layers', 'din', 'dout'), ('din', 'dout')]:
    inside = []

    def body(c, v):
      inside.append(v.out_sharding)
      return c, nnx.Param(v[...], out_sharding=('a', 'b'), eager_sharding=False)

    v = _param(names)
    _, out = nnx.scan(
      body,
      in_axes=(nnx.Carry, 0),
      out_axes=(nnx.Carry, 0),
      transform_metadata=LAYERS,
      **kw,
    )(jnp.zeros(()), v)
    assert inside == [names]
    assert out.out_sharding == ('a', 'b') and v.out_sharding == names


def test_variable_axis_methods_run_hooks_only():
  log = []

  with pytest.warns(UserWarning, match='Variable hooks are deprecated'):

    class Logged(nnx.Param):
      def on_add_axis(self, i, n):
        log.append(('add', i, n))

      def on_remove_axis(self, i, n):
        log.append(('remove', i, n))

    v = Logged(jnp.ones((2, 3)), out_sharding=('a', 'b'), eager_sharding=False)
  v.add_axis(0, 'x')
  v.remove_axis(1, 'b')
  assert v.out_sharding == ('a', 'b')
  assert log == [('add', 0, 'x'), ('remove', 1, 'b')]
  log.clear()
  st = nnx.State({'w': v})
  nnx.spmd.add_axis(st, 0, {nnx.PARTITION_NAME: 'x'})
  assert v.out_sharding == ('x', 'a', 'b')
  nnx.spmd.remove_axis(st, 0, {nnx.PARTITION_NAME: 'x'})
  assert v.out_sharding == ('a', 'b')
  assert log == [('add', 0, 'x'), ('remove', 0, 'x')]


class Grows(nnx.Module):
  def __init__(self):
    self.k = _param(('layers', 'a'), shape=(3, 2))


def _grow(m, x):
  m.new = nnx.Param(x * 2, out_sharding=('b',), eager_sharding=False)
  m.cnt = nnx.BatchStat(jnp.zeros(()), out_sharding=(), eager_sharding=False)


@pytest.mark.parametrize('transform', ['vmap', 'scan'])
@pytest.mark.parametrize('axes', ['int', 'state_axes'])
def test_variables_added_inside_get_the_partition_name(transform, axes):
  ax = 0 if axes == 'int' else nnx.StateAxes({nnx.Param: 0, ...: None})
  m = Grows()
  xs = jnp.ones((3, 2))
  if transform == 'vmap':
    nnx.vmap(_grow, in_axes=(ax, 0), transform_metadata=LAYERS)(m, xs)
  else:
    nnx.scan(
      lambda c, m, x: (_grow(m, x), c)[1],
      in_axes=(nnx.Carry, ax, 0),
      out_axes=nnx.Carry,
      transform_metadata=LAYERS,
    )(0.0, m, xs)
  assert m.new.out_sharding == ('layers', 'b') and m.new.shape == (3, 2)
  # an empty out_sharding gets no name
  assert m.cnt.out_sharding == ()
  assert m.cnt.shape == ((3,) if axes == 'int' else ())
  assert m.k.out_sharding == ('layers', 'a')


def test_empty_out_sharding_gets_no_name():
  v = _param((), shape=())
  assert (
    nnx.spmd.add_axis(nnx.State({'v': v}), 0, LAYERS)['v'].out_sharding == ()
  )
  out = nnx.vmap(
    lambda x: nnx.Param(x, out_sharding=(), eager_sharding=False),
    transform_metadata=LAYERS,
  )(jnp.ones(3))
  assert out.out_sharding == ()


MODES = {
  'graph': dict(),
  'no_updates': dict(graph_updates=False),
  'tree': dict(graph=False),
}


class Holder(nnx.Module):
  def __init__(self):
    self.a = nnx.Param(jnp.zeros((3, 2)))


def _set_foo(m):
  m.a.set_metadata('foo', 1)


@pytest.mark.parametrize('mode', sorted(MODES))
def test_scan_metadata_set_on_a_scanned_variable_comes_back(mode):
  m = Holder()
  nnx.scan(
    lambda c, m, x: (_set_foo(m), (c, x))[1],
    in_axes=(nnx.Carry, 0, 0),
    **MODES[mode],
  )(0.0, m, jnp.ones(3))
  assert m.a.get_metadata('foo') == 1 and m.a.shape == (3, 2)
  v = nnx.Param(jnp.ones(3))
  nnx.scan(
    lambda c, v: (v.set_metadata('foo', 2), (c, None))[1],
    in_axes=(nnx.Carry, 0),
    **MODES[mode],
  )(0, v)
  assert v.get_metadata('foo') == 2


def test_scan_metadata_set_on_a_broadcast_or_carried_variable():
  def broadcast(kw):
    m = Holder()
    nnx.scan(
      lambda c, m, x: (_set_foo(m), (c, x))[1],
      in_axes=(nnx.Carry, None, 0),
      **kw,
    )(0.0, m, jnp.ones(3))
    return m

  def carried(kw):
    nnx.scan(lambda m, x: (_set_foo(m), (m, x))[1], **kw)(Holder(), jnp.ones(3))

  # graph mode drops a broadcast input's changes
  assert not broadcast(MODES['graph']).a.has_metadata('foo')
  for mode in ('no_updates', 'tree'):
    with pytest.raises(TypeError, match='same pytree structure'):
      broadcast(MODES[mode])
  for mode in ('graph', 'tree'):
    with pytest.raises(TypeError, match='same pytree structure'):
      carried(MODES[mode])
  with pytest.raises(ValueError, match='pytree structure error'):
    carried(MODES['no_updates'])


def _named(**metadata):
  return nnx.Param(jnp.ones((3, 4)), eager_sharding=False, **metadata)


def test_other_transform_metadata_keys_name_tuple_metadata():
  meta = {nnx.PARTITION_NAME: 'layers', 'alias': 'A', 'count': 'C'}
  st = nnx.State(
    {
      'w': _named(out_sharding=('a', 'b'), alias=('x', 'y'), count=2),
      'u': _named(alias=['x', 'y']),
      'e': _named(alias=()),
    }
  )
  nnx.spmd.add_axis(st, 1, meta)
  assert st['w'].out_sharding == ('a', 'layers', 'b')
  assert st['w'].alias == ('x', 'A', 'y')
  # only non-empty tuples are axis names: an int, a list, () stay as they are
  assert st['w'].count == 2 and st['u'].alias == ['x', 'y']
  assert st['e'].alias == ()
  nnx.spmd.remove_axis(st, 1, meta)
  assert st['w'].out_sharding == ('a', 'b') and st['w'].alias == ('x', 'y')


def test_other_transform_metadata_key_must_be_at_the_removed_axis():
  v = _named(out_sharding=('a', 'b'), alias=('x', 'y'))
  with pytest.raises(ValueError, match="remove 'A' at index 0 from"):
    nnx.spmd.remove_axis(
      nnx.State({'v': v}), 0, {nnx.PARTITION_NAME: 'a', 'alias': 'A'}
    )


def test_vmap_and_scan_carry_other_metadata_keys():
  meta = {nnx.PARTITION_NAME: 'layers', 'alias': 'L'}
  seen = []

  class Block(nnx.Module):
    def __init__(self):
      self.w = _named(out_sharding=('din',), alias=('i',))

    @nnx.scan(
      in_axes=(0, nnx.Carry), out_axes=nnx.Carry, transform_metadata=meta
    )
    def __call__(self, x):
      seen.append((self.w.out_sharding, self.w.alias))
      return x

  m = nnx.vmap(Block, in_axes=(), axis_size=2, transform_metadata=meta)()
  assert (m.w.out_sharding, m.w.alias) == (('layers', 'din'), ('L', 'i'))
  m(jnp.ones(()))
  assert seen == [(('din',), ('i',))]
  assert (m.w.out_sharding, m.w.alias) == (('layers', 'din'), ('L', 'i'))
