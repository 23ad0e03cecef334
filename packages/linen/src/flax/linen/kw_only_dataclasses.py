"""Dataclasses with keyword-only fields moved to the end, and Linen's
dataclass transform.

:func:`dataclass` and :func:`field` are Flax's: a field marked
``field(kw_only=True)``, or declared after a ``_: KW_ONLY`` annotation, is
moved after all other fields (also in subclasses), so it may have a default
while later fields have none:

>>> import inspect
>>> from flax.linen import kw_only_dataclasses as kd
>>> @kd.dataclass
... class A:
...   a: int
...   b: int = kd.field(kw_only=True, default=3)
...   c: int = 2
>>> inspect.signature(A)
<Signature (a: int, c: int = 2, b: int = 3) -> None>

Every ``nn.Module`` subclass becomes a dataclass (:func:`module_dataclass`)
whose last two fields are
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
import functools

# Fields that every Module carries last.
TRAILING_FIELDS = ('parent', 'name')


class _KwOnlyType:
  """Type of :data:`KW_ONLY`."""

  def __repr__(self):
    return 'KW_ONLY'


# Annotate a pseudo-field with it (``_: KW_ONLY``) to make the fields after
# it keyword-only; also the metadata key that marks such fields.
KW_ONLY = _KwOnlyType()


def field(*, metadata=None, kw_only=dataclasses.MISSING, **kwargs):
  """``dataclasses.field`` with ``kw_only`` recorded in the metadata.

  ``kw_only=True`` moves the field after all others (see :func:`dataclass`).

  >>> from flax.linen import kw_only_dataclasses as kd
  >>> kd.field(kw_only=True, default=1).metadata[kd.KW_ONLY]
  True
  """
  kw_only = kw_only is not dataclasses.MISSING and bool(kw_only)
  if kw_only and not {'default', 'default_factory'} & set(kwargs):
    raise ValueError(_NO_DEFAULT)
  if kw_only:
    metadata = {**(metadata or {}), KW_ONLY: True}
  return dataclasses.field(metadata=metadata, **kwargs)


# Keyword-only fields go behind all others, where a required one could not
# follow the fields with defaults.
_NO_DEFAULT = 'Keyword-only fields with no default are not supported.'


def _is_kw_only(f) -> bool:
  return isinstance(f, dataclasses.Field) and bool(
    f.metadata.get(KW_ONLY, False)
  )


def _as_kw_only_field(value) -> dataclasses.Field:
  if isinstance(value, dataclasses.Field):
    if (
      value.default is dataclasses.MISSING
      and value.default_factory is dataclasses.MISSING
    ):
      raise ValueError(_NO_DEFAULT)
    metadata = {**value.metadata, KW_ONLY: True}
    value.metadata = type(value.metadata)(metadata)
    return value
  if value is dataclasses.MISSING:
    return field(kw_only=True)
  return field(kw_only=True, default=value)


def dataclass(cls=None, extra_fields=None, **kwargs):
  """``dataclasses.dataclass`` that moves keyword-only fields to the end.

  Fields made with ``field(kw_only=True)``, those after a ``_: KW_ONLY``
  annotation, and such fields inherited from dataclass bases come after
  the other fields. ``extra_fields`` (``(name, type, Field)`` tuples) are
  appended last.

  Args:
    cls: the class; without it, returns a decorator.
    extra_fields: fields to add after all others.
    **kwargs: passed to ``dataclasses.dataclass``.
  """
  if cls is None:
    return functools.partial(dataclass, extra_fields=extra_fields, **kwargs)
  own = dict(cls.__dict__.get('__annotations__', {}))
  bases = [
    b.__dict__['__dataclass_fields__']
    for b in reversed(cls.__mro__[1:])
    if b.__dict__.get('__dataclass_fields__')
  ]
  # A field that some base made keyword-only stays so in every subclass,
  # even where a subclass redeclares it; it keeps its place among the
  # inherited keyword-only fields.
  inherited = {}
  for fields in bases:
    for name, f in fields.items():
      if _is_kw_only(f):
        inherited.setdefault(name, None)
  for fields in bases:
    for name in inherited:
      if name in fields:
        f = fields[name]
        inherited[name] = (name, f.type, _copy_field(f))
  positional, moved = {}, []
  after_marker = False
  for name, tp in own.items():
    if tp is KW_ONLY:
      after_marker = True
      if name in cls.__dict__:
        delattr(cls, name)
      continue
    value = cls.__dict__.get(name, dataclasses.MISSING)
    if name in inherited:
      inherited[name] = (name, tp, _redeclared(value, inherited[name][2]))
    elif after_marker or _is_kw_only(value):
      moved.append((name, tp, _as_kw_only_field(value)))
    else:
      positional[name] = tp
  # Keyword-only fields of the bases move behind this class's fields too.
  hidden = []
  for base in cls.__mro__[1:]:
    fields = base.__dict__.get('__dataclass_fields__')
    if fields and inherited.keys() & fields.keys():
      hidden.append((base, fields))
      type.__setattr__(
        base,
        '__dataclass_fields__',
        {k: f for k, f in fields.items() if k not in inherited},
      )
  trailing = list(inherited.values()) + moved + list(extra_fields or ())
  annotations = dict(positional)
  for name, tp, f in trailing:
    annotations[name] = tp
    setattr(cls, name, f)
  cls.__annotations__ = annotations
  try:
    return dataclasses.dataclass(cls, **kwargs)
  finally:
    for base, fields in hidden:
      type.__setattr__(base, '__dataclass_fields__', fields)


def _redeclared(value, base: dataclasses.Field) -> dataclasses.Field:
  """The field a subclass redeclares over a base's keyword-only field."""
  if isinstance(value, dataclasses.Field):
    return value
  if value is not dataclasses.MISSING:
    return dataclasses.field(default=value)
  return dataclasses.field(
    default=base.default, default_factory=base.default_factory
  )


def _copy_field(f: dataclasses.Field) -> dataclasses.Field:
  return dataclasses.field(
    default=f.default,
    default_factory=f.default_factory,
    init=f.init,
    repr=f.repr,
    hash=f.hash,
    compare=f.compare,
    metadata=dict(f.metadata),
  )


def module_dataclass(cls, trailing, *, kw_only=False, unsafe_hash=True):
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
