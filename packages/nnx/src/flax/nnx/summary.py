"""``nnx.tabulate``: a table of the calls, inputs, outputs and Variables of
an NNX object, printed with ``rich`` as Flax 0.12.8 prints it.

>>> import jax.numpy as jnp
>>> from flax import nnx
>>> class Scale(nnx.Module):
...   def __init__(self):
...     self.w = nnx.Param(jnp.ones((3,)))
...   def __call__(self, x):
...     return x * self.w[...][None, :]
>>> table = nnx.tabulate(Scale(), jnp.ones((2, 3)),
...                      console_kwargs={'force_terminal': False})
>>> print(table.splitlines()[4])
│      │ Scale │ float32[2,3] │ float32[2,3] │ w: float32[3] │
"""

from __future__ import annotations
from flax.nnx._summary_yaml import NoneDumper

import dataclasses
import types
import typing as tp

import jax
import numpy as np

from flax import typing
from flax.nnx import graphlib
from flax.nnx import rnglib
from flax.nnx import _summary_calls
from flax.nnx._summary_calls import CallInfo as CallInfo
from flax.nnx.pytreelib import Pytree
from flax.nnx.variablelib import Variable
from flax.nnx.visualization import display as display
import io

__all__ = [
  'ArrayRepr',
  'CallInfo',
  'ObjectInfo',
  'SimpleObjectRepr',
  'SizeBytes',
  'display',
  'filter_rng_streams',
  'tabulate',
]


@dataclasses.dataclass(repr=False)
class SizeBytes(typing.SizeBytes):
  """Number of elements and bytes of a group of Variables.

  Its repr is rich markup: ``3 [dim](12 B)[/dim]``.
  """

  def __add__(self, other: typing.SizeBytes) -> SizeBytes:
    return SizeBytes(self.size + other.size, self.bytes + other.bytes)

  def __repr__(self) -> str:
    return f'{self.size:,} [dim]({_bytes_repr(self.bytes)})[/dim]'


@dataclasses.dataclass(repr=False)
class ArrayRepr:
  """The shape and dtype of an array, printed as ``float32[2,3]``."""

  shape: tuple[int, ...]
  dtype: tp.Any

  @classmethod
  def from_array(cls, x) -> ArrayRepr:
    """The ``ArrayRepr`` of anything with a shape and a dtype."""
    return cls(tuple(np.shape(x)), jax.numpy.result_type(x))

  def __str__(self) -> str:
    shape = ','.join(map(str, self.shape))
    return f'[dim]{_dtype_name(self.dtype)}[/dim][{shape}]'


class SimpleObjectRepr:
  """Shows an object by its class name only, e.g. ``Linear(...)``."""

  def __init__(self, obj: tp.Any):
    self.type = type(obj)

  def __str__(self) -> str:
    return f'{self.type.__name__}(...)'

  def __repr__(self) -> str:
    return str(self)


class ObjectInfo(tp.NamedTuple):
  """The Variables of one graph node, grouped by Variable type.

  Attributes:
    path: the path of the node in the graph.
    stats: per Variable type, the size of the node's whole subtree.
    variable_groups: per Variable type, the node's own Variables by path.
  """

  path: tuple[typing.Key, ...]
  stats: dict[type[Variable], SizeBytes]
  variable_groups: dict[type[Variable], dict[typing.Key, Variable]]


def filter_rng_streams(row: CallInfo):
  """The default ``row_filter``: hides calls of ``RngStream`` objects."""
  return not issubclass(row.type, rnglib.RngStream)


def _dtype_name(dtype) -> str:
  return str(dtype)


def _bytes_repr(num_bytes: int) -> str:
  for scale, unit in ((1e9, 'GB'), (1e6, 'MB'), (1e3, 'KB')):
    if num_bytes > scale:
      return f'{num_bytes / scale:,.1f} {unit}'
  return f'{num_bytes:,} B'


def _group(var_type: type) -> type:
  # RNG keys and counts are shown together in one ``RngState`` column.
  if issubclass(var_type, rnglib.RngState):
    return rnglib.RngState
  return var_type


def _size_of(value) -> SizeBytes:
  shape = np.shape(value) if not hasattr(value, 'shape') else value.shape
  size = int(np.prod(shape, dtype=np.int64))
  dtype = getattr(value, 'dtype', None)
  if dtype is None:
    return SizeBytes(0, 0)
  return SizeBytes(size, size * dtype.itemsize)


def object_infos(root) -> dict[int, ObjectInfo]:
  """An :class:`ObjectInfo` per graph node of ``root``, keyed by ``id``."""
  node_paths: dict[int, tuple] = {}
  variables: list[tuple[tuple, Variable]] = []
  for path, value in graphlib.iter_graph(root):
    if isinstance(value, Pytree):
      node_paths.setdefault(id(value), path)
    elif isinstance(value, Variable):
      variables.append((path, value))
  by_path = {path: i for i, path in node_paths.items()}
  infos = {i: ObjectInfo(path, {}, {}) for i, path in node_paths.items()}
  for path, var in variables:
    group = _group(type(var))
    size = _size_of(var.get_raw_value())
    owner = None
    for n in range(len(path) - 1, -1, -1):
      node_id = by_path.get(path[:n])
      if node_id is None:
        continue
      info = infos[node_id]
      info.stats[group] = info.stats.get(group, SizeBytes(0, 0)) + size
      if owner is None:
        owner = node_id
        key = '/'.join(map(str, path[n:]))
        info.variable_groups.setdefault(group, {})[key] = var
  return infos


# Metadata every Variable has; a Variable with other metadata is shown as
# a block of its metadata and value.
_STANDARD_METADATA = frozenset({'hijax', 'ref', 'eager_sharding'})


class _Markup:
  """Stands for a piece of ready-made markup inside a shown structure."""

  def __init__(self, text: str):
    self.text = text

  def __repr__(self) -> str:
    return self.text


def _variable_markup(var: Variable) -> str:
  """The value of ``var`` (``float32[2,3]``), or a block of its value and
  metadata when it has metadata of its own (the parts of the metadata
  without leaves left out; arrays and other objects shown by their
  repr)."""
  value = _summary_calls.array_markup(var.get_raw_value())
  metadata = {
    k: v for k, v in var.get_metadata().items() if k not in _STANDARD_METADATA
  }
  if not metadata:
    return value
  block = _summary_calls.structure_markup(
    {**metadata, 'value': _Markup(value)}, arrays=repr
  )
  return '\n' + '\n'.join('  ' + line for line in block.split('\n'))


def _size_markup(stat: SizeBytes, bold: bool = True) -> str:
  # The totals row and the caption are bold as a whole.
  size = f'{stat.size:,} '
  if bold:
    return (
      f'[bold]{size}[/bold][bold dim]({_bytes_repr(stat.bytes)})[/bold dim]'
    )
  return f'{size}[dim]({_bytes_repr(stat.bytes)})[/dim]'


def _own_line(key, var) -> str:
  markup = _variable_markup(var)
  return f'{key}:{markup}' if markup.startswith('\n') else f'{key}: {markup}'


def _cell(info: ObjectInfo, group: type) -> str:
  stat = info.stats.get(group)
  if stat is None:
    return ''
  own = info.variable_groups.get(group)
  if not own:
    return _size_markup(stat)
  lines = [_own_line(k, own[k]) for k in sorted(own)]
  return '\n'.join([*lines, '', _size_markup(stat)])


def tabulate(
  obj,
  *input_args,
  depth: int | None = None,
  method: str = '__call__',
  row_filter: tp.Callable[[CallInfo], bool] = filter_rng_streams,
  table_kwargs: tp.Mapping[str, tp.Any] = types.MappingProxyType({}),
  column_kwargs: tp.Mapping[str, tp.Any] = types.MappingProxyType({}),
  console_kwargs: tp.Mapping[str, tp.Any] = types.MappingProxyType({}),
  compute_flops: bool = False,
  compute_vjp_flops: bool = False,
  **input_kwargs,
) -> str:
  """Returns a table of the method calls made by ``obj.method(...)``.

  ``obj`` is called (abstractly, under ``jax.eval_shape``, on a copy: its
  state does not change) with ``input_args`` and ``input_kwargs``. Every
  call of a method of an object of its graph becomes a row with the
  object's path (plus the method name when it is not ``__call__``), type,
  inputs and outputs, followed by a column per Variable type listing the
  object's own Variables and the size of all Variables under it. The last
  row holds the totals, and the caption the total over every type.

  >>> import jax, jax.numpy as jnp
  >>> from flax import nnx
  >>> class Linear(nnx.Module):
  ...   def __init__(self, din, dout, rngs):
  ...     self.kernel = nnx.Param(jax.random.normal(rngs.params(), (din, dout)))
  ...     self.bias = nnx.Param(jnp.zeros((dout,)))
  ...   def __call__(self, x):
  ...     return x @ self.kernel + self.bias[None]
  >>> model = Linear(2, 3, rngs=nnx.Rngs(0))
  >>> table = nnx.tabulate(model, jnp.ones((1, 2)),
  ...                      console_kwargs={'force_terminal': False})
  >>> for line in table.splitlines():
  ...   print(line.rstrip())
                              Linear Summary
  ┏━━━━━━┳━━━━━━━━┳━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━┓
  ┃ path ┃ type   ┃ inputs       ┃ outputs      ┃ Param                ┃
  ┡━━━━━━╇━━━━━━━━╇━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━┩
  │      │ Linear │ float32[1,2] │ float32[1,3] │ bias: float32[3]     │
  │      │        │              │              │ kernel: float32[2,3] │
  │      │        │              │              │                      │
  │      │        │              │              │ 9 (36 B)             │
  ├──────┼────────┼──────────────┼──────────────┼──────────────────────┤
  │      │        │              │        Total │ 9 (36 B)             │
  └──────┴────────┴──────────────┴──────────────┴──────────────────────┘
  <BLANKLINE>
                        Total Parameters: 9 (36 B)

  Args:
    obj: the NNX object (Module or Pytree) to call.
    *input_args: positional arguments of the call.
    depth: leave out rows deeper than this: the depth of a row is the
      length of its path, a method's name included (the root's
      ``__call__`` has depth 0, its ``encode`` method depth 1).
    method: the name of the method of ``obj`` to call.
    row_filter: keeps the rows for which it returns True (by default,
      calls of RNG streams are hidden).
    table_kwargs: more options of ``rich.table.Table`` (not ``title``,
      ``show_header``, ``show_lines`` or ``show_footer``: a TypeError;
      the caption and its style are always the grand total's).
    column_kwargs: options of every ``Table.add_column``.
    console_kwargs: options of ``rich.console.Console`` (e.g. ``width``).
    compute_flops: add a ``flops`` column (XLA's estimate of each call).
    compute_vjp_flops: add a ``vjp_flops`` column (forward and backward).
    **input_kwargs: keyword arguments of the call.

  Returns:
    The rendered table.
  """
  calls, infos, groups = _summary_calls.record(
    obj,
    method,
    input_args,
    input_kwargs,
    compute_flops,
    compute_vjp_flops,
    object_infos,
  )
  # One row per object and inputs: the call that returned first (a method
  # called inside another of the same object wins), in call order.
  rows, seen = [], set()
  for call in calls:  # in the order they returned
    key = (call.object_id, call.inputs_repr)
    if key not in seen and row_filter(call):
      seen.add(key)
      rows.append(call)
  rows.sort(key=lambda c: c.call_order)
  if depth is not None:
    # The depth of a row is the length of its path, method name included.
    rows = [c for c in rows if len(c.path) <= depth]
  return _render(
    type(obj).__name__,
    rows,
    infos,
    groups,
    compute_flops,
    compute_vjp_flops,
    table_kwargs,
    column_kwargs,
    console_kwargs,
  )


def _render(
  title,
  rows,
  infos,
  groups,
  compute_flops,
  compute_vjp_flops,
  table_kwargs,
  column_kwargs,
  console_kwargs,
) -> str:

  import rich.console
  import rich.table
  import rich.text

  totals = groups  # {group: SizeBytes}, sorted by group name
  grand = SizeBytes(0, 0)
  for stat in totals.values():
    grand = grand + stat
  # ``table_kwargs`` may not repeat the options set here (a TypeError);
  # the caption (the grand total) and its style always win.
  table = rich.table.Table(
    title=f'{title} Summary',
    show_header=True,
    show_lines=True,
    show_footer=False,
    **table_kwargs,
  )
  table.caption = f'\nTotal Parameters: {_size_markup(grand, bold=False)}'
  table.caption_style = 'bold'
  columns = ['path', 'type', 'inputs', 'outputs']
  if compute_flops:
    columns.append('flops')
  if compute_vjp_flops:
    columns.append('vjp_flops')
  for name in columns:
    table.add_column(name, **column_kwargs)
  for group in totals:
    table.add_column(group.__name__, **column_kwargs)
  for call in rows:
    info = infos[call.object_id]
    path = call.path
    row = [
      '/'.join(map(str, path)),
      call.type.__name__,
      call.inputs_repr,
      _summary_calls.structure_markup(call.outputs),
    ]
    if compute_flops:
      row.append(str(call.flops))
    if compute_vjp_flops:
      row.append(str(call.vjp_flops))
    row += [_cell(info, group) for group in totals]
    table.add_row(*row)
  blanks = [''] * (len(columns) - 1)
  table.add_row(
    *blanks,
    rich.text.Text('Total', justify='right'),
    *[_size_markup(stat, bold=False) for stat in totals.values()],
    style='bold',
  )
  kwargs = {'force_terminal': True, 'force_jupyter': False}
  kwargs.update(console_kwargs)
  console = rich.console.Console(file=io.StringIO(), **kwargs)
  console.print(table)
  return console.file.getvalue()


def __getattr__(name):
  if name == 'NoneDumper':
    return NoneDumper
  raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
