"""Text reprs of Variables, States and Modules (2-space nested style)."""

import typing as tp

INDENT = '  '


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


def _array_stats(value) -> tuple[int, int] | None:
  import jax

  leaves = jax.tree_util.tree_leaves(value)
  size = nbytes = 0
  found = False
  for leaf in leaves:
    if hasattr(leaf, 'shape') and hasattr(leaf, 'dtype'):
      found = True
      n = 1
      for d in leaf.shape:
        n *= d
      size += n
      try:
        nbytes += n * leaf.dtype.itemsize
      except Exception:  # extended dtypes (keys)
        nbytes += n * 8
  return (size, nbytes) if found else None


def _indent_lines(text: str, indent: str) -> str:
  return text.replace('\n', '\n' + indent)


def value_repr(value, level: int) -> str:
  """Repr of an arbitrary leaf value nested at ``level``."""
  from flax.nnx import statelib, variablelib

  if isinstance(value, variablelib.Variable):
    return variable_repr(value, level)
  if isinstance(value, statelib.State):
    return mapping_repr(value._mapping, level)
  return _indent_lines(repr(value), INDENT * level)


def variable_repr(var, level: int) -> str:
  pad = INDENT * (level + 1)
  end = INDENT * level
  name = type(var).__name__
  stats = _array_stats(var.raw_value)
  header = f'{name}('
  if stats is not None:
    header += f' # {size_repr(*stats)}'
  fields = [('value', var.raw_value)]
  for key, val in var._var_metadata.items():
    if key.endswith('_hooks') and not val:
      continue
    fields.append((key, val))
  lines = [f'{pad}{key}={value_repr(val, level + 1)}' for key, val in fields]
  return header + '\n' + ',\n'.join(lines) + '\n' + end + ')'


def mapping_repr(mapping: tp.Mapping, level: int) -> str:
  if not mapping:
    return '{}'
  pad = INDENT * (level + 1)
  end = INDENT * level
  lines = []
  for key, val in mapping.items():
    if isinstance(val, tp.Mapping) and not _is_var(val):
      text = mapping_repr(_as_mapping(val), level + 1)
    else:
      text = value_repr(val, level + 1)
    lines.append(f'{pad}{key!r}: {text}')
  return '{\n' + ',\n'.join(lines) + '\n' + end + '}'


def _is_var(x):
  from flax.nnx import variablelib

  return isinstance(x, variablelib.Variable)


def _as_mapping(x):
  from flax.nnx import statelib

  if isinstance(x, statelib.State):
    return x._mapping
  return x


def object_repr(obj, level: int = 0, seen=None) -> str:
  """Repr of a Pytree / Module: its attributes, nested."""
  from flax.nnx import pytreelib, variablelib

  if seen is None:
    seen = set()
  name = type(obj).__name__
  if id(obj) in seen:
    return f'{name}(...)'
  seen = seen | {id(obj)}
  pad = INDENT * (level + 1)
  end = INDENT * level
  counts: dict = {}
  for _, var in _iter_variables(obj):
    stats = _array_stats(var.raw_value)
    if stats is None:
      continue
    tname = type(var).__name__
    size, nbytes = counts.get(tname, (0, 0))
    counts[tname] = (size + stats[0], nbytes + stats[1])
  header = f'{name}('
  if counts:
    header += ' # ' + ', '.join(
      f'{t}: {size_repr(*c)}' for t, c in counts.items()
    )
  items = list(pytreelib.object_attributes(obj))
  if not items:
    return f'{name}()'
  lines = []
  for key, val in items:
    if isinstance(val, pytreelib.Pytree):
      text = object_repr(val, level + 1, seen)
    elif isinstance(val, variablelib.Variable):
      text = variable_repr(val, level + 1)
    elif isinstance(val, (list, tuple)) and any(
      isinstance(v, pytreelib.Pytree) for v in val
    ):
      open_, close = ('[', ']') if isinstance(val, list) else ('(', ')')
      inner = [
        INDENT * (level + 2)
        + (
          object_repr(v, level + 2, seen)
          if isinstance(v, pytreelib.Pytree)
          else value_repr(v, level + 2)
        )
        for v in val
      ]
      text = open_ + '\n' + ',\n'.join(inner) + '\n' + pad + close
    else:
      text = value_repr(val, level + 1)
    lines.append(f'{pad}{key}={text}')
  return header + '\n' + ',\n'.join(lines) + '\n' + end + ')'


def _iter_variables(obj):
  from flax.nnx import graphlib, variablelib

  for path, value in graphlib.iter_graph(obj):
    if isinstance(value, variablelib.Variable):
      yield path, value
