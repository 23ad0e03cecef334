"""nnx.data / nnx.static markers belong on a Pytree attribute itself: one
found inside the value (``nnx.static(nnx.data(x))``, a list holding
``nnx.data(x)``, ...) is Flax 0.12.8's 'Found unexpected tags' ValueError;
and the texts of the other attribute-status errors."""

import collections
import dataclasses

import jax
import jax.numpy as jnp
import pytest
from flax import nnx


class Foo(nnx.Pytree):
  def __init__(self, value):
    self.a = value


class M(nnx.Module):
  def __init__(self, value):
    self.a = value


def _tags_message(cls, name, tags, value_type):
  return (
    f"Found unexpected tags {tags} on attribute '{cls.__name__}.{name}'. "
    'Values from nnx.data(...) and\nnnx.static(...) should be assigned to '
    'nnx.Pytree attributes directly, they should not be inside other '
    f"structures. Got value of type '{value_type}' on Pytree of type "
    f"'{cls}'."
  )


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class S:
  x: object


Pair = collections.namedtuple('Pair', 'x y')


@pytest.mark.parametrize(
  'cls, value, tags, value_type',
  [
    (Foo, nnx.static(nnx.data(jnp.ones(1))), {'data'}, dataclasses.Field),
    (Foo, nnx.data(nnx.static(jnp.ones(1))), {'static'}, dataclasses.Field),
    (Foo, nnx.data(nnx.data(1)), {'data'}, dataclasses.Field),
    (M, nnx.static(nnx.data(3)), {'data'}, dataclasses.Field),
    (Foo, [nnx.data(1)], {'data'}, list),
    (Foo, {'k': nnx.static(1)}, {'static'}, dict),
    (Foo, nnx.static([nnx.data(1)]), {'data'}, list),
    (Foo, S(nnx.data(1)), {'data'}, S),
    (Foo, Pair(nnx.data(1), 2), {'data'}, Pair),
  ],
)
def test_nested_markers_are_refused(cls, value, tags, value_type):
  with pytest.raises(ValueError) as info:
    cls(value)
  assert str(info.value) == _tags_message(cls, 'a', tags, value_type)


def test_both_tags():
  with pytest.raises(ValueError, match=r"tags \{'\w+', '\w+'\} on attribute"):
    Foo((1, [nnx.data(2), nnx.static(3)]))


def test_later_assignment_and_dataclass_fields():
  f = Foo(1)
  with pytest.raises(ValueError, match=r"unexpected tags \{'data'\}"):
    f.b = nnx.static(nnx.data(1))
  with pytest.raises(ValueError, match=r"attribute 'Foo.a'"):
    f.a = [nnx.data(1)]

  @nnx.dataclass
  class D(nnx.Pytree):
    a: int = nnx.data()

  assert D(nnx.static(3)).a == 3
  with pytest.raises(ValueError, match=r"attribute 'D.a'"):
    D(nnx.static(nnx.data(3)))
  with pytest.raises(ValueError, match=r"attribute 'Dict.a'"):
    nnx.Dict({'a': nnx.data(nnx.static(2))})


def test_allowed_places():
  nnx.List([nnx.data(1), nnx.static(2)])
  Foo(nnx.List([nnx.data(1)]))
  Foo(nnx.Param(nnx.data(1)))  # a graph node is not looked into

  class Obj(nnx.Pytree, pytree=False):
    def __init__(self, value):
      self.a = value

  assert isinstance(Obj(nnx.static(nnx.data(3))).a, dataclasses.Field)
  assert isinstance(Obj([nnx.data(1)]).a, list)


def test_status_error_texts():
  with pytest.raises(ValueError) as info:
    Foo(nnx.static(jnp.ones(1)))
  assert str(info.value) == (
    "Found data in value of type '<class 'jaxlib._jax.ArrayImpl'>' annotated "
    "with nnx.static(...) when setting attribute 'a' of Pytree type "
    f"'{Foo}'."
  )
  f = Foo(1)
  with pytest.raises(ValueError) as info:
    f.a = jnp.ones(1)
  assert str(info.value) == (
    "Cannot assign data value of type '<class 'jaxlib._jax.ArrayImpl'>' to "
    f"static attribute 'a' of Pytree type '{Foo}'. To override the status "
    'explicitly wrap the value with nnx.data on assignment:\n\n'
    '  _.a = nnx.data(...)\n\n'
  )
  with pytest.raises(ValueError) as info:
    M([jnp.ones(1)])
  assert str(info.value) == (
    f"Found data on value of type '<class 'list'>' assigned to static "
    f"attribute 'a' of Pytree type '{M}'. Static attributes should not "
    'contain data values. Consider one of the following options:\n\n'
    '1. If the attribute is meant to be static, remove the data values of '
    'type(s):\n\n  ArrayImpl\n\n'
    '2. If the attribute is meant to be data, wrap the value with nnx.data  '
    'on assignment:\n\n  _.a = nnx.data(...)\n\n'
    '3. Alternatively, annotate the class attribute with nnx.data:\n\n'
    '  class M(Module):\n    a: list = nnx.data()\n\n'
    '4. If the container is a list or dict, try using nnx.List(...) or '
    'nnx.Dict(...) instead.\n\n'
    '5. Disable pytree for this class:\n\n'
    '  class M(Module, pytree=False):\n\n'
  )
  f = Foo([])
  f.a.append(jnp.ones(1))
  with pytest.raises(ValueError) as info:
    nnx.check_pytree(f)
  assert str(info.value).startswith(
    "Found unexpected data on value of type <class 'list'> in static "
    f"attribute 'a' of Pytree type '{Foo}'. This is an error starting from "
    'Flax version 0.12.0.\nConsider one of the following options:'
  )
