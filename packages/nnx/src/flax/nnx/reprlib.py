"""Text reprs of Variables, States and Modules (2-space nested style).

Objects describe themselves with ``__nnx_repr__``, a generator that first
yields an :class:`Object` (the header: type name, brackets, comment) and then
one :class:`Attr` per entry; :func:`get_repr` renders it:

>>> from flax.nnx import reprlib
>>> class Point(reprlib.Representable):
...   def __nnx_repr__(self):
...     yield reprlib.Object(type='Point')
...     yield reprlib.Attr('x', 1)
...     yield reprlib.Attr('y', 2)
>>> print(Point())
Point(
  x=1,
  y=2
)
"""

import dataclasses
import os
import sys
import threading
import typing as tp

import flax
import jax
import numpy as np

flax_config = flax.config

INDENT = '  '


# What a repr colours, in field order; each entry holds an ANSI code.
_COLORED = (
  'TYPE ATTRIBUTE SEP PAREN COMMENT INT STRING FLOAT BOOL NONE END'.split()
)
Color = tp.NamedTuple('Color', [(part, str) for part in _COLORED])
Color.__doc__ = (
  'ANSI escape codes used to colour reprs (all empty without a tty).'
)
Color.__module__ = __name__

NO_COLOR = Color(*([''] * len(_COLORED)))


def supports_color() -> bool:
  """Whether stdout is a terminal that shows ANSI colours."""
  if os.environ.get('NO_COLOR'):
    return False
  try:
    return bool(sys.stdout.isatty())
  except Exception:
    return False


# 24-bit foreground colours of the colourful reprs.
_PALETTE = {
  'TYPE': (79, 201, 177),
  'ATTRIBUTE': (156, 220, 254),
  'SEP': (212, 212, 212),
  'PAREN': (255, 213, 3),
  'COMMENT': (105, 105, 105),
  'INT': (182, 207, 169),
  'STRING': (207, 144, 120),
  'FLOAT': (182, 207, 169),
  'BOOL': (86, 156, 214),
  'NONE': (86, 156, 214),
}
COLOR = (
  Color(
    **{k: '\x1b[38;2;{};{};{}m'.format(*rgb) for k, rgb in _PALETTE.items()},
    END='\x1b[0m',
  )
  if supports_color()
  else NO_COLOR
)


@dataclasses.dataclass
class ReprContext(threading.local):
  """Per-thread state of the repr being built: the colours in use and the
  nesting depth."""

  current_color: Color = NO_COLOR
  depth: int = 0


REPR_CONTEXT = ReprContext()


def colorized(x, /) -> str:
  """The repr of ``x`` with the colours of :data:`COLOR`."""
  context = REPR_CONTEXT
  previous, context.current_color = context.current_color, COLOR
  try:
    return repr(x)
  finally:
    context.current_color = previous


@dataclasses.dataclass
class Object:
  """The header of a repr: ``{type}{start}`` ... ``{end}``."""

  type: str | type
  start: str = '('
  end: str = ')'
  kv_sep: str = '='
  indent: str = dataclasses.field(default=INDENT)
  empty_repr: str = ''
  comment: str = ''
  same_line: bool = False

  @property
  def elem_indent(self):
    return self.indent

  @property
  def elem_sep(self):
    """Separator of the entries: a newline unless ``same_line``."""
    return ', ' if self.same_line else ',\n'


@dataclasses.dataclass
class Attr:
  """One entry of a repr: ``{key}{kv_sep}{start}{value}{end}``.

  ``use_raw_value``/``use_raw_key`` print the value/key with ``str``
  instead of ``repr``.
  """

  key: str
  value: tp.Any
  start: str = dataclasses.field(default='')
  end: str = ''
  use_raw_value: bool = False
  use_raw_key: bool = False


class Representable:
  """Base of objects whose repr comes from an ``__nnx_repr__`` generator."""

  __slots__ = ()

  def __repr__(self) -> str:
    return get_repr(self)

  def _repr_pretty_(self, p, cycle):
    # IPython's pretty printer shows the same text.
    p.text(repr(self))

  def __nnx_repr__(self) -> tp.Iterator[Object | Attr]:
    name = type(self).__name__
    raise NotImplementedError(
      f'{name} must define __nnx_repr__ to be Representable.'
    )


def _indent(text: str, indent: str) -> str:
  return text.replace('\n', '\n' + indent)


def get_repr(obj: Representable) -> str:
  """Renders the ``__nnx_repr__`` of ``obj``."""
  if not isinstance(obj, Representable):
    raise TypeError(f'Object {obj!r} is not Representable.')
  parts = obj.__nnx_repr__()
  header = next(parts)
  color = REPR_CONTEXT.current_color
  if not isinstance(header, Object):
    raise TypeError(
      f'__nnx_repr__ of {type(obj).__name__} must yield an Object first, '
      f'got {type(header).__name__}.'
    )
  name = header.type if isinstance(header.type, str) else header.type.__name__
  comment = f'{color.COMMENT}{header.comment}{color.END}'
  head = f'{color.TYPE}{name}{color.END}{color.PAREN}{header.start}{color.END}'
  if header.comment:
    head += comment
  entries = []
  REPR_CONTEXT.depth += 1
  try:
    for attr in parts:
      if not isinstance(attr, Attr):
        raise TypeError(
          f'__nnx_repr__ of {type(obj).__name__} must yield Attr entries, '
          f'got {type(attr).__name__}.'
        )
      key = attr.key if attr.use_raw_key else repr(attr.key)
      if header.kv_sep == '=' and not attr.use_raw_key:
        key = str(attr.key)
      value = attr.value if attr.use_raw_value else repr(attr.value)
      entries.append(
        f'{color.ATTRIBUTE}{key}{color.END}{color.SEP}{header.kv_sep}'
        f'{color.END}{attr.start}{value}{attr.end}'
      )
  finally:
    REPR_CONTEXT.depth -= 1
  end = f'{color.PAREN}{header.end}{color.END}'
  if not entries:
    return head + (header.empty_repr or '') + end
  if header.same_line:
    return head + ', '.join(entries) + end
  ind = header.indent
  body = ',\n'.join(ind + _indent(e, ind) for e in entries)
  return f'{head}\n{body}\n{end}'


@dataclasses.dataclass(repr=False)
class PrettyMapping(Representable):
  """Repr of a mapping as ``{\\n  'key': value,\\n}``."""

  mapping: tp.Mapping

  def __nnx_repr__(self):
    yield Object(type='', start='{', end='}', kv_sep=': ')
    for key, value in self.mapping.items():
      yield Attr(repr(key), value, use_raw_key=True)


@dataclasses.dataclass(repr=False)
class PrettySequence(Representable):
  """Repr of a sequence as ``[\\n  item,\\n]``."""

  sequence: tp.Sequence

  def __nnx_repr__(self):
    yield Object(type='', start='[', end=']', kv_sep='')
    for value in self.sequence:
      yield Attr('', value, use_raw_key=True)


class MappingReprMixin(Representable):
  """Repr of a mapping-like object as ``Name({...})``."""

  __slots__ = ()

  def __nnx_repr__(self):
    yield Object(type=type(self), empty_repr='{}', kv_sep='')
    yield Attr('', PrettyMapping(dict(self.items())), use_raw_key=True)

  def __repr__(self):
    return _container_repr(self, '{', '}', _mapping_entries(self))

  def _repr_pretty_(self, p, cycle):
    p.text(repr(self))


class SequenceReprMixin(Representable):
  """Repr of a sequence-like object as ``Name([...])``."""

  __slots__ = ()

  def __nnx_repr__(self):
    yield Object(type=type(self), empty_repr='[]', kv_sep='')
    yield Attr('', PrettySequence(list(self)), use_raw_key=True)

  def __repr__(self):
    return _container_repr(
      self, '[', ']', [repr(_display(v, False)) for v in self]
    )


def _mapping_entries(obj):
  return [f'{k!r}: {_display(v, False)!r}' for k, v in obj.items()]


def _container_repr(obj, start, end, entries):
  name = type(obj).__name__
  if not entries:
    return f'{name}({start}{end})'
  body = ',\n'.join(INDENT + _indent(e, INDENT) for e in entries)
  return f'{name}({start}\n{body}\n{end})'


# -- sizes ----------------------------------------------------------------------


def size_repr(size: int, nbytes: int) -> str:
  """``'6 (24 B)'`` style summary of a number of elements and bytes."""
  return f'{size:,} ({bytes_repr(nbytes)})'


def bytes_repr(nbytes: int) -> str:
  if nbytes < 1000:
    return f'{nbytes} B'
  for unit in ('KB', 'MB', 'GB', 'TB'):
    nbytes /= 1000
    if nbytes < 1000 or unit == 'TB':
      return f'{nbytes:.1f} {unit}'
  raise AssertionError  # pragma: no cover


def _leaf_stats(leaf):
  n = 1
  for d in leaf.shape:
    n *= d
  try:
    itemsize = leaf.dtype.itemsize
  except Exception:  # extended dtypes (PRNG keys)
    itemsize = 8
  return n, n * itemsize


def _array_stats(value) -> tuple[int, int] | None:

  size = nbytes = 0
  found = False
  for leaf in jax.tree_util.tree_leaves(value):
    if hasattr(leaf, 'shape') and hasattr(leaf, 'dtype'):
      found = True
      n, b = _leaf_stats(leaf)
      size += n
      nbytes += b
  return (size, nbytes) if found else None


# -- arrays inside objects ------------------------------------------------------


@dataclasses.dataclass(repr=False)
class ArrayRepr(Representable):
  """Short form of an array inside an object repr:
  ``Array(shape=(2, 3), dtype=dtype('float32'))``."""

  shape: tp.Tuple[int, ...]
  dtype: tp.Any

  @classmethod
  def from_array(cls, array):
    return cls(tuple(array.shape), array.dtype)

  def __nnx_repr__(self):
    yield Object(type='Array', same_line=True)
    yield Attr('shape', self.shape)
    yield Attr('dtype', self.dtype)

  def __repr__(self):
    return f'Array(shape={tuple(self.shape)}, dtype={self.dtype!r})'


@dataclasses.dataclass(repr=False)
class MutableArrayRepr(ArrayRepr):
  """Short form of a mutable array (``jax.Ref``) inside an object repr."""

  def __repr__(self):
    return f'MutableArray(shape={tuple(self.shape)}, dtype={self.dtype!r})'


@dataclasses.dataclass(repr=False)
class VariableRepr(Representable):
  """Renders like a Variable of ``var_type`` holding ``value`` with
  ``metadata``."""

  var_type: type
  value: tp.Any
  metadata: dict

  def __repr__(self):
    var = self.var_type.from_metadata(self.value, self.metadata)
    return variable_repr(var, 0)


class _Name:
  """Shows a class by its name (``float32``, ``Param``)."""

  __slots__ = ('name',)

  def __init__(self, name):
    self.name = name

  def __repr__(self):
    return self.name


def _display(value, short: bool = True):
  """``value`` as shown inside reprs: classes by name and, with ``short``,
  arrays of more than one element as :class:`ArrayRepr` (Variables are
  entered, Pytrees and other :class:`Representable` objects kept)."""

  if isinstance(value, type):
    return _Name(value.__name__)
  if isinstance(value, Representable) or isinstance(value, _SIMPLE):
    return value

  def show(x):
    if isinstance(x, type):
      return _Name(x.__name__)
    if short and isinstance(x, (jax.Array, np.ndarray)) and x.size > 1:
      return ArrayRepr.from_array(x)
    return x

  try:
    value = jax.tree.map(
      show, value, is_leaf=lambda x: isinstance(x, (Representable, type))
    )
  except Exception:
    return value
  return _plain_containers(value)


def _plain_containers(x):
  """``x`` with tuple subclasses (named tuples) shown as tuples and dict
  subclasses (``OrderedDict``, ...) as dicts, in their own order."""
  t = type(x)
  if t is list:
    return [_plain_containers(v) for v in x]
  if isinstance(x, tuple):
    return tuple(_plain_containers(v) for v in x)
  if isinstance(x, dict):
    return {k: _plain_containers(v) for k, v in x.items()}
  return x


_SIMPLE = (str, int, float, bool, type(None), bytes)


# -- Variables, mappings, Pytrees ------------------------------------------------


def value_repr(value, level: int) -> str:
  """Repr of an arbitrary leaf value nested at ``level``: Variables and
  States through their ``_repr_at_level`` method, the rest by ``repr``."""
  nested = _nested_repr(value)
  if nested is not None:
    return nested(value, level)
  return _indent(repr(value), INDENT * level)


def _nested_repr(value):
  """The ``_repr_at_level(value, level, short=False)`` method of a
  Variable or State (None for other values, and for tracers: a traced
  hijax Variable shows as its tracer)."""
  if isinstance(value, jax.core.Tracer):
    return None
  return getattr(type(value), '_repr_at_level', None)


def variable_shown(var) -> tuple[tp.Any, str]:
  """``(value, comment)`` of a Variable as its reprs show it: the value the
  user reads (hooks and overrides applied, a ``jax.Ref`` read out) and
  ``' # size (bytes)'`` for arrays ('' otherwise)."""

  raw = var.get_value()
  if type(raw) is jax.Ref:
    raw = raw[...]
  stats = _array_stats(raw)
  return raw, '' if stats is None else f' # {size_repr(*stats)}'


def variable_repr(var, level: int, short: bool = False) -> str:
  """Repr of a Variable nested at ``level`` (``short``: arrays of more than
  one element shortened)."""
  pad = INDENT * (level + 1)
  end = INDENT * level
  raw, comment = variable_shown(var)
  header = f'{var.var_type.__name__}({comment}'
  fields = [('value', _display(raw, short))]
  for key, val in var._var_metadata.items():
    fields.append((key, val))
  lines = [f'{pad}{key}={value_repr(val, level + 1)}' for key, val in fields]
  return header + '\n' + ',\n'.join(lines) + '\n' + end + ')'


def mapping_repr(mapping: tp.Mapping, level: int) -> str:
  """Repr of a (nested) mapping at ``level``, a States' nested mappings
  shown as plain ``{...}``."""
  if not mapping:
    return '{}'
  pad = INDENT * (level + 1)
  end = INDENT * level
  lines = []
  for key, val in mapping.items():
    if isinstance(val, tp.Mapping):
      text = mapping_repr(val, level + 1)
    else:
      text = value_repr(val, level + 1)
    lines.append(f'{pad}{key!r}: {text}')
  return '{\n' + ',\n'.join(lines) + '\n' + end + '}'


def object_repr(obj, attributes, comment: str, level: int = 0) -> str:
  """Repr of a Pytree / Module from its public ``attributes`` (pairs, in
  insertion order) and its Variable totals ``comment``: nested objects
  indented, arrays of more than one element shortened; an object met a
  second time prints as ``Name(...)``."""
  ctx = _OBJECT_CONTEXT
  top = ctx.seen is None
  if top:
    ctx.seen = set()
  try:
    name = type(obj).__name__
    if id(obj) in ctx.seen:
      return f'{name}(...)'
    ctx.seen.add(id(obj))
    items = list(attributes)
    if not items:
      return f'{name}()'
    pad = INDENT * (level + 1)
    end = INDENT * level
    lines = []
    for key, val in items:
      if isinstance(val, Representable):
        text = (
          f'{type(val).__name__}(...)'
          if id(val) in ctx.seen
          else _indent(repr(val), pad)
        )
      elif _nested_repr(val) is not None and not isinstance(val, tp.Mapping):
        text = _nested_repr(val)(val, level + 1, short=True)  # a Variable
      else:
        text = value_repr(_display(val), level + 1)
      lines.append(f'{pad}{key}={text}')
    return f'{name}({comment}\n' + ',\n'.join(lines) + '\n' + end + ')'
  finally:
    if top:
      ctx.seen = None


class _ObjectContext(threading.local):
  def __init__(self):
    self.seen = None


_OBJECT_CONTEXT = _ObjectContext()


def counts_comment(counts: tp.Mapping[str, tuple[int, int]]) -> str:
  """``' # Param: 9 (36 B), ...'`` from ``{type name: (size, bytes)}``, with
  a total when there are several types ('' if none)."""
  if not counts:
    return ''
  parts = [f'{t}: {size_repr(*c)}' for t, c in counts.items()]
  if len(counts) > 1:
    total = (
      sum(c[0] for c in counts.values()),
      sum(c[1] for c in counts.values()),
    )
    parts.append(f'Total: {size_repr(*total)}')
  return ' # ' + ', '.join(parts)
