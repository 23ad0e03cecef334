"""Dataclass transform used by Linen Modules.

Every ``nn.Module`` subclass becomes a dataclass whose last two fields are
``parent`` and ``name``, whatever its base classes declare. A subclass may
ask for keyword-only fields with ``class M(nn.Module, kw_only=True)``; as
with standard dataclasses this choice is not inherited: a child class's
own fields are positional again while the fields it inherits stay
keyword-only.

>>> import dataclasses
>>> from flax import linen as nn
>>> class M(nn.Module):
...   a: int
>>> [f.name for f in dataclasses.fields(M)]
['a', 'parent', 'name']
"""

import dataclasses

# Fields that every Module carries last.
TRAILING_FIELDS = ('parent', 'name')


def dataclass(cls, trailing, *, kw_only=False, unsafe_hash=True):
  """Turns ``cls`` into a dataclass with ``trailing`` fields at the end.

  Args:
    cls: the class to transform in place.
    trailing: ``[(name, type, dataclasses.Field), ...]`` to append after
      every other field (taking them out of the base classes' order).
    kw_only: make the class's own fields keyword-only.
    unsafe_hash: passed to ``dataclasses.dataclass``.

  Returns:
    ``cls``.
  """
  names = {name for name, _, _ in trailing}
  hidden = []
  for base in cls.__mro__[1:]:
    fields = base.__dict__.get('__dataclass_fields__')
    if fields and names & set(fields):
      hidden.append((base, fields))
      type.__setattr__(
        base,
        '__dataclass_fields__',
        {k: v for k, v in fields.items() if k not in names},
      )
  own = cls.__dict__.get('__annotations__', {})
  annotations = {k: v for k, v in own.items() if k not in names}
  for name, tp, field in trailing:
    annotations[name] = tp
    setattr(cls, name, field)
  cls.__annotations__ = annotations
  try:
    dataclasses.dataclass(
      cls, unsafe_hash=unsafe_hash, repr=False, kw_only=kw_only
    )
  finally:
    for base, fields in hidden:
      type.__setattr__(base, '__dataclass_fields__', fields)
  return cls
