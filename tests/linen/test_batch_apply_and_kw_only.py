"""nn.BatchApply and flax.linen.kw_only_dataclasses."""

import dataclasses
import inspect

import jax
import jax.numpy as jnp
import pytest

from flax import linen as nn
from flax.linen import batch_apply as ba
from flax.linen import kw_only_dataclasses as kd


def shapes(tree):
  return jax.tree_util.tree_map(jnp.shape, tree)


def test_batch_apply():
  assert nn.BatchApply is ba.BatchApply
  b = nn.BatchApply(lambda x: x.sum(-1))
  assert b(jnp.ones((2, 3, 4))).shape == (2, 3)
  assert sorted(vars(b)) == ['_f', 'num_dims'] and b.num_dims == 2
  out = nn.BatchApply(lambda x, y: (x * y, x))(
    jnp.ones((2, 3, 4)), jnp.ones((2, 3, 4))
  )
  assert shapes(out) == ((2, 3, 4), (2, 3, 4))
  assert nn.BatchApply(lambda x, y: x + y)(jnp.ones((2, 3, 4)), 1.0).shape == (
    2,
    3,
    4,
  )
  kw = nn.BatchApply(lambda x, y: x)(jnp.ones((2, 3, 4)), y=jnp.ones((2, 3, 5)))
  assert kw.shape == (2, 3, 4)
  # Only the first mergeable input fixes the leading shape.
  odd = nn.BatchApply(lambda x, y: x)(jnp.ones((2, 3, 4)), jnp.ones((3, 3, 4)))
  assert odd.shape == (2, 3, 4)
  with pytest.raises(ValueError) as info:
    nn.BatchApply(lambda x: x, num_dims=3)(jnp.ones((2, 3)))
  assert str(info.value) == (
    'BatchApply requires at least one input with ndim >= 3.'
  )
  with pytest.raises(ValueError, match='ndim >= 2'):
    nn.BatchApply(lambda x: x)(1.0)
  with pytest.raises(TypeError, match='cannot reshape'):
    nn.BatchApply(lambda x: x.sum(), num_dims=1)(jnp.ones((5, 2)))


def test_batch_apply_helpers():
  assert ba.ndim_at_least(jnp.ones((2, 3)), 2)
  assert not ba.ndim_at_least(1.0, 1)
  x = jnp.ones((2, 3, 4))
  assert ba.arbitrary_mergeable_leaf(3, [x], {}) is x
  assert ba.merge_leading_dims(x, 2).shape == (6, 4)
  assert ba.merge_leading_dims(1.0, 2) == 1.0
  assert ba.split_leading_dim(jnp.ones((6, 4)), (2, 3)).shape == (2, 3, 4)


def test_kw_only_fields_move_to_the_end():
  @kd.dataclass
  class A:
    a: int
    b: int = kd.field(kw_only=True, default=3)
    c: int = 2

  assert str(inspect.signature(A)) == '(a: int, c: int = 2, b: int = 3) -> None'
  assert repr(A(1)).endswith('.A(a=1, c=2, b=3)')
  assert [(f.name, f.kw_only) for f in dataclasses.fields(A)] == [
    ('a', False),
    ('c', False),
    ('b', False),
  ]

  @kd.dataclass
  class B(A):
    d: int = 5
    _: kd.KW_ONLY
    e: int = 6

  assert str(inspect.signature(B)) == (
    '(a: int, c: int = 2, d: int = 5, b: int = 3, e: int = 6) -> None'
  )
  assert repr(B(1, 2, 3)).endswith('.B(a=1, c=2, d=3, b=3, e=6)')


def test_kw_only_dataclass_options():
  @kd.dataclass(frozen=True)
  class C:
    x: int

  assert repr(C(1)).endswith('.C(x=1)') and hash(C(1)) == hash(C(1))
  f = kd.field(kw_only=True, default=1, metadata={'m': 1})
  assert isinstance(f, dataclasses.Field) and f.default == 1
  assert dict(f.metadata) == {'m': 1, kd.KW_ONLY: True}
  assert f.kw_only is dataclasses.MISSING
  assert repr(kd.KW_ONLY) == 'KW_ONLY' and kd.KW_ONLY is not dataclasses.KW_ONLY

  @kd.dataclass(extra_fields=(('z', int, dataclasses.field(default=9)),))
  class D:
    a: int

  assert str(inspect.signature(D)) == '(a: int, z: int = 9) -> None'
  assert repr(D(1)).endswith('.D(a=1, z=9)')


def test_kw_only_fields_need_a_default():
  with pytest.raises(ValueError, match='Keyword-only fields with no default'):
    kd.field(kw_only=True)
  with pytest.raises(ValueError, match='Keyword-only fields with no default'):

    @kd.dataclass
    class AfterMarker:
      x: int
      _: kd.KW_ONLY
      d: int
      e: int = 3

  @kd.dataclass
  class Base:
    a: int = 1
    b: int = kd.field(default=2, kw_only=True)

  # A subclass may redeclare a base field without a default.
  @kd.dataclass
  class Sub(Base):
    a: int
    c: int = 3

  assert (
    str(inspect.signature(Sub))
    == '(a: int = 1, c: int = 3, b: int = 2) -> None'
  )
  assert repr(Sub(5)).endswith('Sub(a=5, c=3, b=2)')
  with pytest.raises(TypeError, match="non-default argument 'c' follows"):

    @kd.dataclass
    class Sub2(Base):
      c: int


def test_linen_paths():
  assert nn.batch_apply is ba and nn.kw_only_dataclasses is kd


def test_redeclared_kw_only_field_stays_kw_only():
  @kd.dataclass
  class Base:
    x: int = kd.field(default=1, kw_only=True)
    w: int = kd.field(default=5, kw_only=True)

  # Redeclared in a subclass without kw_only, `x` keeps its place among the
  # inherited keyword-only fields; without a value it keeps the base default.
  @kd.dataclass
  class Sub(Base):
    size: float
    y: int = kd.field(default=3, kw_only=True)
    x: int = 2

  @kd.dataclass
  class Plain(Base):
    s: int
    x: int

  assert str(inspect.signature(Sub)) == (
    '(size: float, x: int = 2, w: int = 5, y: int = 3) -> None'
  )
  assert str(inspect.signature(Plain)) == (
    '(s: int, x: int = 1, w: int = 5) -> None'
  )
  assert dict(dataclasses.fields(Sub)[1].metadata) == {}

  # Further down, the redeclared field still moves behind new fields.
  @kd.dataclass
  class Leaf(Sub):
    name: str

  assert str(inspect.signature(Leaf)) == (
    '(size: float, name: str, x: int = 2, w: int = 5, y: int = 3) -> None'
  )
  assert dataclasses.asdict(Leaf(4, 'n')) == dict(
    size=4, name='n', x=2, w=5, y=3
  )


def test_kw_only_false_records_nothing():
  assert dict(kd.field(default=4, kw_only=False).metadata) == {}
  assert dict(kd.field(default=4, kw_only=1).metadata) == {kd.KW_ONLY: True}
  with pytest.raises(ValueError, match='Keyword-only fields with no default'):
    kd.field(kw_only=1)
