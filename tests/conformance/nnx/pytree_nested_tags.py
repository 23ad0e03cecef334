"""nnx.data / nnx.static inside an attribute's value (nnx.static(nnx.data(x)),
a list of nnx.data(...), a dataclass field) is a ValueError; the texts of
the attribute-status errors."""

import jax.numpy as jnp
import report
from flax import nnx


class Foo(nnx.Pytree):
  def __init__(self, value):
    self.a = value


class M(nnx.Module):
  def __init__(self, value):
    self.a = value


@nnx.dataclass
class D(nnx.Pytree):
  a: int = nnx.data()


cases = [
  ('static(data)', lambda: Foo(nnx.static(nnx.data(jnp.ones(1))))),
  ('data(static)', lambda: Foo(nnx.data(nnx.static(jnp.ones(1))))),
  ('module static(data)', lambda: M(nnx.static(nnx.data(3)))),
  ('list of data', lambda: Foo([nnx.data(1)])),
  ('dict of static', lambda: Foo({'k': nnx.static(1)})),
  ('static(list of data)', lambda: Foo(nnx.static([nnx.data(1)]))),
  ('dataclass field', lambda: D(nnx.static(nnx.data(3)))),
  ('nnx.Dict', lambda: nnx.Dict({'a': nnx.data(nnx.static(2))})),
  ('static array', lambda: Foo(nnx.static(jnp.ones(1)))),
  ('array to static', lambda: setattr(Foo(1), 'a', jnp.ones(1))),
  ('list of arrays', lambda: M([jnp.ones(1)])),
]
for label, fn in cases:
  with report.raises(label):
    fn()
  try:
    fn()
  except ValueError as e:
    report.text(f'{label} message', str(e))

report.value('dataclass static value', D(nnx.static(3)).a)
report.value('nnx.List', len(nnx.List([nnx.data(1), nnx.static(2)])))


class Obj(nnx.Pytree, pytree=False):
  def __init__(self, value):
    self.a = value


report.value('pytree=False', type(Obj(nnx.static(nnx.data(3))).a).__name__)
