"""Text reprs of Modules, Variables and containers (Flax 0.12.8's)."""

import re

import jax
import jax.numpy as jnp
import numpy as np

from flax import nnx
from flax.nnx import reprlib


def _mask(text):
  return re.sub(r' at 0x[0-9a-f]+', ' at 0x…', text)


def test_variable_repr_shows_values():
  assert repr(nnx.Param(jnp.ones(3), foo=1)) == (
    'Param( # 3 (12 B)\n  value=Array([1., 1., 1.], dtype=float32),\n  foo=1\n)'
  )
  assert repr(nnx.Param(1.0)) == 'Param(\n  value=1.0\n)'
  assert repr(nnx.Param('abc')) == "Param(\n  value='abc'\n)"
  assert repr(nnx.Param(jnp.float32)) == 'Param(\n  value=float32\n)'
  assert repr(nnx.Intermediate((jnp.ones(2), jnp.ones(3)))) == (
    'Intermediate( # 5 (20 B)\n'
    '  value=(Array([1., 1.], dtype=float32), Array([1., 1., 1.], '
    'dtype=float32))\n'
    ')'
  )


def test_variable_repr_sizes():
  assert repr(nnx.Param(jnp.ones((100, 100)))).startswith(
    'Param( # 10,000 (40.0 KB)\n'
  )
  assert repr(nnx.Param(jnp.ones((1000, 1000)))).startswith(
    'Param( # 1,000,000 (4.0 MB)\n'
  )
  assert repr(nnx.Param(jnp.ones((300,)))).startswith('Param( # 300 (1.2 KB)\n')


def test_variable_repr_multiline_value_is_indented():
  v = nnx.Param(jnp.arange(6.0).reshape(2, 3))
  assert repr(v) == (
    'Param( # 6 (24 B)\n'
    '  value=Array([[0., 1., 2.],\n'
    '         [3., 4., 5.]], dtype=float32)\n'
    ')'
  )


class _M(nnx.Module):
  def __init__(self):
    self.z = 1
    self.a = nnx.Param(jnp.ones(2))
    self.f = jnp.float32
    self.lst = [1, 2]
    self.arr = jnp.zeros(3)
    self.np = np.zeros(2)
    self.one = jnp.zeros(1)
    self.e = jnp.zeros((0,))
    self.s = 'hi'
    self.d = {'x': 1}
    self.none = None
    self.dt = jnp.dtype('float32')
    self.bs = nnx.BatchStat(jnp.zeros(1))
    self._priv = 3


def test_module_repr_order_arrays_and_counts():
  assert repr(_M()) == (
    '_M( # Param: 2 (8 B), BatchStat: 1 (4 B), Total: 3 (12 B)\n'
    '  z=1,\n'
    '  a=Param( # 2 (8 B)\n'
    "    value=Array(shape=(2,), dtype=dtype('float32'))\n"
    '  ),\n'
    '  f=float32,\n'
    '  lst=[1, 2],\n'
    "  arr=Array(shape=(3,), dtype=dtype('float32')),\n"
    "  np=Array(shape=(2,), dtype=dtype('float64')),\n"
    '  one=Array([0.], dtype=float32),\n'
    '  e=Array([], shape=(0,), dtype=float32),\n'
    "  s='hi',\n"
    "  d={'x': 1},\n"
    '  none=None,\n'
    "  dt=dtype('float32'),\n"
    '  bs=BatchStat( # 1 (4 B)\n'
    '    value=Array([0.], dtype=float32)\n'
    '  )\n'
    ')'
  )


def test_module_repr_counts_follow_sorted_paths():
  class M(nnx.Module):
    def __init__(self):
      self.b = nnx.Param(jnp.ones(2))
      self.a = nnx.Cache(jnp.ones(2))

  assert repr(M()).splitlines()[0] == (
    'M( # Cache: 2 (8 B), Param: 2 (8 B), Total: 4 (16 B)'
  )


def test_empty_shared_and_cyclic_modules():
  class E(nnx.Module):
    pass

  assert repr(E()) == 'E()'

  class Leaf(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.zeros(1))

  class H(nnx.Module):
    def __init__(self):
      self.a = Leaf()
      self.b = self.a

  assert repr(H()) == (
    'H( # Param: 1 (4 B)\n'
    '  a=Leaf( # Param: 1 (4 B)\n'
    '    w=Param( # 1 (4 B)\n'
    '      value=Array([0.], dtype=float32)\n'
    '    )\n'
    '  ),\n'
    '  b=Leaf(...)\n'
    ')'
  )

  class G(nnx.Module):
    def __init__(self):
      self.ref = None

  g = G()
  g.ref = nnx.data(g)
  assert repr(g) == 'G(\n  ref=G(...)\n)'


def test_container_reprs():
  assert repr(nnx.List([1])) == 'List([\n  1\n])'
  assert repr(nnx.List()) == 'List([])'
  assert repr(nnx.Dict()) == 'Dict({})'
  assert repr(nnx.Dict(a=nnx.List([1]))) == (
    "Dict({\n  'a': List([\n    1\n  ])\n})"
  )
  assert repr(nnx.List([jnp.ones(2), jnp.float32])) == (
    'List([\n  Array([1., 1.], dtype=float32),\n  float32\n])'
  )

  class M(nnx.Module):
    def __init__(self):
      self.l = nnx.List([jnp.ones(2)])

  # containers keep full array values inside a Module repr
  assert repr(M()) == (
    'M(\n  l=List([\n    Array([1., 1.], dtype=float32)\n  ])\n)'
  )


def test_dataclass_repr():
  @nnx.dataclass
  class DC(nnx.Pytree):
    a: int
    b: jax.Array

  assert repr(DC(1, jnp.ones(1))) == (
    'DC(\n  a=1,\n  b=Array([1.], dtype=float32)\n)'
  )


def test_rngs_counted_as_rng_state():
  class M(nnx.Module):
    def __init__(self):
      self.r = nnx.Rngs(0)

  assert repr(M()).splitlines()[0] == 'M( # RngState: 2 (12 B)'


def test_representable_protocol():
  class Point(reprlib.Representable):
    def __nnx_repr__(self):
      yield reprlib.Object(type='Point', comment=' # 2D')
      yield reprlib.Attr('x', 1)
      yield reprlib.Attr('y', 'a')

  assert repr(Point()) == "Point( # 2D\n  x=1,\n  y='a'\n)"
  assert reprlib.get_repr(reprlib.PrettyMapping({'a': 1})) == "{\n  'a': 1\n}"
  assert reprlib.get_repr(reprlib.PrettySequence([1, 2])) == '[\n  1,\n  2\n]'
  assert repr(reprlib.ArrayRepr((2, 3), jnp.dtype('int32'))) == (
    "Array(shape=(2, 3), dtype=dtype('int32'))"
  )
  assert reprlib.NO_COLOR.TYPE == ''


def test_rngs_repr():
  assert repr(nnx.Rngs(0)) == (
    'Rngs( # RngState: 2 (12 B)\n'
    '  default=RngStream( # RngState: 2 (12 B)\n'
    "    tag='default',\n"
    '    key=RngKey( # 1 (8 B)\n'
    '      value=Array((), dtype=key<fry>) overlaying:\n'
    '      [0 0],\n'
    "      tag='default'\n"
    '    ),\n'
    '    count=RngCount( # 1 (4 B)\n'
    '      value=Array(0, dtype=uint32),\n'
    "      tag='default'\n"
    '    )\n'
    '  )\n'
    ')'
  )
  assert list(nnx.Rngs(0, dropout=1)) == ['dropout', 'default']


def test_path_contains_repr_shows_exact():
  assert repr(nnx.PathContains('a')) == "PathContains('a', exact=True)"
  assert (
    repr(nnx.PathContains(1, exact=False)) == 'PathContains(1, exact=False)'
  )


def test_attribute_containers_show_as_plain_containers():
  # Named tuples print as tuples, dict subclasses as dicts in their own
  # order (plain dicts sorted), a State as State({...}): as Flax 0.12.8.
  import collections

  nt = collections.namedtuple('NT', 'a b')

  class Foo(nnx.Module):
    def __init__(self):
      self.a = [nt(1, 2), {'k': nt(3, 4)}]
      self.c = collections.OrderedDict(z=1, a=2)
      self.d = {'z': 1, 'a': 2}
      self.e = nt(nt(1, 2), [3])
      self.fd = nnx.data(nnx.State({'b': 1, 'a': jnp.ones(2)}))

  assert repr(Foo()) == (
    'Foo(\n'
    "  a=[(1, 2), {'k': (3, 4)}],\n"
    "  c={'z': 1, 'a': 2},\n"
    "  d={'a': 2, 'z': 1},\n"
    '  e=((1, 2), [3]),\n'
    '  fd=State({\n'
    "    'a': Array(shape=(2,), dtype=dtype('float32')),\n"
    "    'b': 1\n"
    '  })\n'
    ')'
  )


def test_treescope_renderings():
  # As Flax 0.12.8 renders them with treescope (notebook display).
  import treescope

  class Linear(nnx.Module):
    def __init__(self):
      self.kernel = nnx.Param(jnp.arange(6.0).reshape(2, 3))
      self.bias = nnx.Param(jnp.zeros((3,)))
      self.in_features = 2

  m = Linear()
  text = treescope.render_to_text(m)
  assert text.startswith(
    'Linear( # Param: 9 (36 B)\n  kernel=Param( # 6 (24 B)\n'
  )
  assert (
    '  bias=Param(value=<jax.Array([0., 0., 0.], dtype=float32)>),\n' in text
  )
  assert text.endswith('  in_features=2,\n)')
  assert treescope.render_to_text(nnx.state(m, nnx.Param)).startswith(
    "State({\n  'bias': Param(value=<jax.Array([0., 0., 0.], dtype=float32)>),"
  )
  assert treescope.render_to_text(nnx.Rngs(0)) == (
    'Rngs( # RngState: 2 (12 B)\n'
    '  default=RngStream( # RngState: 2 (12 B)\n'
    "    tag='default',\n"
    "    key=RngKey(value=<jax.Array key<fry>()>, tag='default'),\n"
    "    count=RngCount(value=<jax.Array(0, dtype=uint32)>, tag='default'),\n"
    '  ),\n'
    ')'
  )
  assert treescope.render_to_text(nnx.List([1, nnx.Param(jnp.ones(1))])) == (
    'List(0=1, 1=Param(value=<jax.Array([1.], dtype=float32)>))'
  )
  assert treescope.render_to_text(nnx.Dict(a=1)) == 'Dict(a=1)'


def test_hijax_rng_variables_total_under_rngstate():
  # A hijax Variable's type is HijaxVariable whatever it stands for: the
  # Variable totals of a repr group it by the type it stands for.
  with nnx.var_defaults(hijax=True):
    rngs = nnx.Rngs(0)
  assert repr(rngs).splitlines()[0] == 'Rngs( # RngState: 2 (12 B)'
