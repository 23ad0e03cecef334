"""``nn.tabulate``: a table of a Module's calls and variables.

The Module is run under ``jax.eval_shape`` (no FLOPs, no memory), every
Module method call is recorded, and the table is rendered with ``rich``
(imported only when a table is made).
"""

import dataclasses
import io
from collections.abc import Mapping
from typing import Any, Optional

import jax
import numpy as np

from flax.core.flops import lowered_flops, self_cotangent
from flax.core.frozen_dict import FrozenDict
from flax.core.frozen_dict import unfreeze as unfreeze  # noqa: F401
from flax.core import scope as core_scope
from flax.core.scope import DenyList
from flax.core.scope import LazyRng as LazyRng  # noqa: F401
from flax.linen import _functional
from flax.linen import _summary_values
from flax.linen import module as module_lib

# The representations of a Row's leaves, under the names Flax 0.12.8 gives
# them in this module.
from flax.linen._summary_values import (  # noqa: F401
  _ArrayRepresentation as _ArrayRepresentation,
  _ObjectRepresentation as _ObjectRepresentation,
  _PartitionedArrayRepresentation as _PartitionedArrayRepresentation,
  _ValueRepresentation as _ValueRepresentation,
)


@dataclasses.dataclass
class Row:
  """One row of a summary table: a Module method call and its variables.

  Attributes:
    path: the Module's path.
    module_copy: an unbound copy of the Module.
    method: the method's name.
    inputs: the call's inputs.
    outputs: the call's outputs.
    module_variables: the Module's own variables (``{collection: {...}}``).
    counted_variables: the variables counted for this row (its own, or its
      subtree's when submodules are not shown).
    flops: the call's FLOPs (``-1`` when not computed).
    vjp_flops: the FLOPs of its forward and backward pass.
  """

  path: tuple
  module_copy: Any
  method: str
  inputs: Any
  outputs: Any
  module_variables: dict
  counted_variables: dict
  flops: int
  vjp_flops: int

  def size_and_bytes(self, collections) -> dict:
    """``{collection: (element count, bytes)}`` of the counted variables."""
    out = {}
    for col in collections:
      leaves = jax.tree_util.tree_leaves(self.counted_variables.get(col, {}))
      out[col] = _size_and_bytes(leaves)
    return out


class Table(list):
  """A list of :class:`Row` with the Module and the collections shown.

  >>> from flax.linen import summary
  >>> table = summary.Table(None, ['params'], [])
  >>> table.collections, len(table)
  (['params'], 0)
  """

  def __init__(self, module, collections, rows):
    super().__init__(rows)
    self.module = module
    self.collections = collections


@dataclasses.dataclass
class _Call:
  """One recorded Module method call."""

  path: tuple
  module: Any
  method: str
  inputs: Any = None
  outputs: Any = None
  submodules: frozenset = frozenset()
  # Children with a row of their own (a call recorded under them).
  row_children: frozenset = frozenset()
  # A later call of a Module already shown (``show_repeated``): its row
  # shows no variables.
  repeated: bool = False


def _abstract(tree):
  def leaf(x):
    if _has_shape(x):
      return jax.ShapeDtypeStruct(np.shape(x), x.dtype)
    return x

  return jax.tree_util.tree_map(leaf, tree)


def _record_calls(module, rngs, mutable, args, kwargs):
  """Runs ``module.init`` abstractly; returns ``(calls, variables)``."""
  calls = []

  def interceptor(next_fun, call_args, call_kwargs, context):
    if context.method_name == 'setup':
      # ``setup`` has no row: its Module's rows are its method calls.
      return next_fun(*call_args, **call_kwargs)
    mdl = context.module
    # The record keeps an unbound copy: the bound Module's scope holds the
    # traced variables, which must not outlive the trace.
    record = _Call(
      tuple(mdl.scope.path), mdl.clone(parent=None), context.method_name
    )
    record.inputs = _abstract((call_args, call_kwargs))
    calls.append(record)
    out = next_fun(*call_args, **call_kwargs)
    record.outputs = _abstract(out)
    # Children: submodules, and any other child scope (e.g. of a
    # compact_name_scope method), reserved without a collection.
    record.submodules = frozenset(
      k
      for k, v in mdl._state.children.items()
      if isinstance(v, module_lib.Module)
    ) | frozenset(
      k for k, cols in mdl.scope.reservations.items() if None in cols
    )
    return out

  leaves, treedef = jax.tree_util.tree_flatten((rngs, args, kwargs))
  dynamic = [_is_array(x) for x in leaves]

  def init_fn(*arrays):
    it = iter(arrays)
    full = [next(it) if d else x for x, d in zip(leaves, dynamic)]
    rngs, args, kwargs = jax.tree_util.tree_unflatten(treedef, full)
    with _functional.intercept_methods(interceptor):
      return module.init(rngs, *args, mutable=mutable, **kwargs)

  variables = jax.eval_shape(
    init_fn, *[x for x, d in zip(leaves, dynamic) if d]
  )
  return calls, variables


def _is_array(x) -> bool:
  """Whether input ``x`` is traced (shown as ``dtype[shape]``, its dtype
  canonicalized by JAX): arrays, NumPy scalars and complex numbers, but not
  Python bools, ints and floats (``np.float64`` is a ``float``: shown as
  its value)."""
  if isinstance(x, complex):
    return True
  return isinstance(
    x, (jax.Array, np.ndarray, np.generic, jax.ShapeDtypeStruct)
  ) and not isinstance(x, (bool, int, float))


def _unique_calls(calls, show_repeated):
  """The calls to show: the first method call of each Module (of each
  path), or all calls with ``show_repeated``. Each call's ``submodules`` become
  those its Module has by the end, so that a row's own variables leave out
  submodules created by later calls (another method) too."""
  children = {}
  for call in calls:
    children[call.path] = children.get(call.path, frozenset()) | call.submodules
  # A row shows the variables of its subtree but those of children that
  # have rows (a child whose call was not recorded, e.g. served from a
  # ``nn.jit`` cache, shows in its parent's row).
  with_rows = {}
  for call in calls:
    for n in range(len(call.path)):
      prefix = call.path[:n]
      with_rows[prefix] = with_rows.get(prefix, frozenset()) | {call.path[n]}
  for call in calls:
    call.submodules = children[call.path]
    call.row_children = with_rows.get(call.path, frozenset())
  seen = set()
  out = []
  for call in calls:
    # A function lifted over the Module (``nn.remat(fn)(module, x)``: not
    # a method of its class) has a row with ``show_repeated`` only, and
    # no variables; the Module's next call is then a repeated one.
    lifted_fn = not hasattr(type(call.module), call.method)
    call.repeated = lifted_fn or call.path in seen
    if show_repeated or not call.repeated:
      seen.add(call.path)
      out.append(call)
  return out


# -- FLOPs ----------------------------------------------------------------------


def _call_flops(call, variables, rngs, mutable, forward, backward):
  """Returns ``(flops, vjp_flops)`` of one recorded call (-1: not asked).

  The call is replayed alone: its Module (unbound) is applied to the
  variables under its path and to its recorded inputs. ``vjp_flops`` is
  the cost of the forward pass plus the backward pass with respect to
  the variables and the inputs.
  """
  if not forward and not backward:
    return -1, -1
  module = call.module.clone(parent=None)
  outside = _outside_paths(call.module, call.path)
  if outside:
    # Modules of its fields bound elsewhere in the tree (the Module a
    # ``WeightNorm`` wraps): the replay takes their variables too.
    sub_vars = _pruned(variables, (call.path, *outside))
    module = _Replayed(call.module, call.path)
  else:
    sub_vars = {}
    for col, tree in variables.items():
      sub = _subtree(tree, call.path)
      if sub:
        sub_vars[col] = sub
  leaves, treedef = jax.tree_util.tree_flatten(call.inputs)
  positions = [
    i for i, x in enumerate(leaves) if isinstance(x, jax.ShapeDtypeStruct)
  ]
  dynamic = [leaves[i] for i in positions]

  def apply(sub_vars, dynamic, mutable):
    full = list(leaves)
    for i, x in zip(positions, dynamic):
      full[i] = x
    args, kwargs = jax.tree_util.tree_unflatten(treedef, full)
    return module.apply(
      sub_vars, *args, rngs=rngs, method=call.method, mutable=mutable, **kwargs
    )

  def run(sub_vars, dynamic):
    out = apply(sub_vars, dynamic, mutable)
    return out if mutable is False else out[0]

  def run_vjp(sub_vars, dynamic):
    # The pullback of the output together with every collection (as
    # ``mutable=True`` returns them), each its own cotangent.
    y, bwd = jax.vjp(lambda v, d: apply(v, d, True), sub_vars, dynamic)
    return bwd(jax.tree_util.tree_map(self_cotangent, y))

  flops = lowered_flops(run, sub_vars, dynamic) if forward else -1
  vjp_flops = lowered_flops(run_vjp, sub_vars, dynamic) if backward else -1
  return flops, vjp_flops


def _bound_path(module) -> Optional[tuple]:
  return None if module.scope is None else tuple(module.scope.path)


def _is_under(path, prefix) -> bool:
  return path[: len(prefix)] == prefix


def _field_modules(module):
  """The Modules held in ``module``'s fields (inside containers too)."""
  found = []
  for name in module_lib._config_field_names(type(module)):
    module_lib._module_tree.map_modules(found.append, getattr(module, name))
  return found


def _outside_paths(module, path) -> tuple:
  """The paths of the bound Modules in the fields of ``module`` (at
  ``path``) and of its field Modules that lie outside ``path``."""
  paths = {}

  def visit(mdl):
    for sub in _field_modules(mdl):
      sub_path = _bound_path(sub)
      if sub_path is not None and not _is_under(sub_path, path):
        paths.setdefault(sub_path, None)
      visit(sub)

  visit(module)
  return tuple(
    p for p in paths if not any(_is_under(p, q) and p != q for q in paths)
  )


def _pruned(variables, paths) -> dict:
  """``variables`` with only the subtrees at ``paths``, where they are."""
  out = {}
  for col, tree in variables.items():
    for path in paths:
      sub = _subtree(tree, path)
      if not sub:
        continue
      node = out.setdefault(col, {})
      for name in path[:-1]:
        node = node.setdefault(name, {})
      if path:
        node[path[-1]] = sub
      else:
        node.update(sub)
  return out


class _Replayed:
  """Stands for a recorded Module in a FLOPs replay of its call.

  ``apply`` binds a clone of the Module at its own path under the root of
  the given variables, with the Modules of its fields that were bound
  outside that path bound at their own paths, so they find (and are
  differentiated with respect to) their variables.
  """

  def __init__(self, module, path):
    self.module = module
    self.path = path

  def apply(self, variables, *args, rngs=None, method, mutable, **kwargs):
    fn = module_lib._resolve_method(self.module, method)

    def scope_fn(root, *args, **kwargs):
      bound = _rebound(self.module, self.path, root, {})
      return fn(bound, *args, **kwargs)

    return core_scope.apply(scope_fn, mutable=mutable)(
      variables, *args, rngs=rngs, **kwargs
    )


def _scope_at(root, path):
  scope = root
  for name in path:
    scope = scope.push(name, reuse=True)
  return scope


def _rebound(module, path, root, cache):
  """A clone of ``module`` (recorded at ``path``) for a replay under
  ``root``: bound at ``path`` when ``root`` is given, else unbound (to be
  adopted again by its parent). Its field Modules bound outside ``path``
  are bound at their own paths; the others are cloned unbound."""

  def field(sub):
    if sub._id not in cache:
      sub_path = _bound_path(sub)
      if sub_path is not None and not _is_under(sub_path, path):
        cache[sub._id] = _rebound(sub, sub_path, root, cache)
      else:
        cache[sub._id] = _rebound(sub, sub_path or path, None, cache)
    return cache[sub._id]

  attrs = {
    name: module_lib._module_tree.map_modules(field, getattr(module, name))
    for name in module_lib._config_field_names(type(module))
  }
  parent = None if root is None else _scope_at(root, path)
  return module.clone(parent=parent, **attrs)


# -- formatting -----------------------------------------------------------------


def _bytes_repr(num_bytes: int) -> str:
  if num_bytes > 1e9:
    return f'{num_bytes / 1e9:,.1f} GB'
  if num_bytes > 1e6:
    return f'{num_bytes / 1e6:,.1f} MB'
  if num_bytes > 1e3:
    return f'{num_bytes / 1e3:,.1f} KB'
  return f'{num_bytes:,} B'


def _size_and_bytes(leaves) -> tuple:
  count = 0
  nbytes = 0
  for x in leaves:
    if hasattr(x, 'shape') and hasattr(x, 'dtype'):
      size = int(np.prod(x.shape, dtype=np.int64))
      count += size
      nbytes += size * np.dtype(x.dtype).itemsize
  return count, nbytes


def _size_repr(leaves, bold: bool = True) -> str:
  """``'[bold]6 [dim](24 B)[/dim][/bold]'`` markup; ``''`` without leaves."""
  if not leaves:
    return ''
  count, nbytes = _size_and_bytes(leaves)
  text = f'{count:,} [dim]({_bytes_repr(nbytes)})[/dim]'
  return f'[bold]{text}[/bold]' if bold else text


_has_shape = _summary_values.is_array_like


def _call_inputs(inputs):
  """A call's inputs as a Row holds them: the only positional argument,
  the positional arguments (a tuple), the keyword arguments (a dict), or
  the positional arguments followed by the dict of keyword ones."""
  args, kwargs = inputs
  if not kwargs:
    return args[0] if len(args) == 1 else tuple(args)
  if not args:
    return dict(kwargs)
  return (*args, dict(kwargs))


def _inputs_repr(inputs) -> str:
  return _summary_values.cell_text(_call_inputs(inputs))


def _structure_repr(x) -> str:
  """The text of an output value; ``''`` for an empty one."""
  return _summary_values.cell_text(x)


def _flatten(tree, prefix=()):
  """Flattens nested dicts into ``{path_tuple: leaf}``."""
  out = {}
  for k, v in tree.items():
    if isinstance(v, (dict, FrozenDict)):
      out.update(_flatten(v, prefix + (k,)))
    else:
      out[prefix + (k,)] = v
  return out


def _has_path(tree, path) -> bool:
  for name in path:
    if not isinstance(tree, (dict, FrozenDict)) or name not in tree:
      return False
    tree = tree[name]
  return True


def _subtree(tree, path):
  for name in path:
    if not isinstance(tree, (dict, FrozenDict)) or name not in tree:
      return {}
    tree = tree[name]
  return tree if isinstance(tree, (dict, FrozenDict)) else {}


def _without_empty_dicts(tree):
  """``tree`` without its nested dicts that hold no variable."""
  out = {}
  for k, v in tree.items():
    if isinstance(v, (dict, FrozenDict)):
      if _flatten(v):
        out[k] = _without_empty_dicts(v)
    else:
      out[k] = v
  return out


def _collection_cell(variables, col, call, whole_subtree) -> str:
  tree = _subtree(variables.get(col, {}), call.path)
  if whole_subtree and call.submodules:
    # A row cut off by ``depth`` with submodules: only its total size.
    return _size_repr(jax.tree_util.tree_leaves(tree))
  own = {k: v for k, v in tree.items() if k not in call.row_children}
  if not _flatten(own):
    return ''
  text = _summary_values.cell_text(_without_empty_dicts(own))
  return f'{text}\n\n{_size_repr(jax.tree_util.tree_leaves(own))}'


def _render(
  module,
  calls,
  variables,
  depth,
  console_kwargs,
  table_kwargs,
  column_kwargs,
  flops=None,
) -> str:
  import rich.console
  import rich.table
  import rich.text

  # Flax 0.12.8 orders the collection columns as a ``set`` iterates (which
  # depends on PYTHONHASHSEED); do the same so the tables agree.
  collections = list(set(variables.keys()))
  grand = []
  for col in collections:
    grand.extend(jax.tree_util.tree_leaves(variables[col]))
  options = {
    'show_header': True,
    'show_lines': True,
    'show_footer': False,
    'title': f'{type(module).__name__} Summary',
    'caption': f'\nTotal Parameters: {_size_repr(grand, bold=False)}',
    'caption_style': 'bold',
  }
  options.update(table_kwargs or {})
  table = rich.table.Table(**options)
  flops = flops or {}
  flop_columns = []
  if any(f >= 0 for f, _ in flops.values()):
    flop_columns.append(0)
  if any(v >= 0 for _, v in flops.values()):
    flop_columns.append(1)
  names = ['path', 'module', 'inputs', 'outputs']
  names += [('flops', 'vjp_flops')[i] for i in flop_columns]
  for name in (*names, *collections):
    table.add_column(name, **(column_kwargs or {}))
  for index, call in enumerate(calls):
    if depth is not None and len(call.path) > depth:
      continue
    cut = depth is not None and len(call.path) == depth
    module_name = type(call.module).__name__
    if call.method != '__call__':
      module_name = f'{module_name} ({call.method})'
    row = [
      '/'.join(str(p) for p in call.path),
      module_name,
      _inputs_repr(call.inputs),
      _structure_repr(call.outputs),
    ]
    row += [str(flops[index][i]) for i in flop_columns]
    for col in collections:
      if call.repeated:
        row.append('')
        continue
      row.append(_collection_cell(variables, col, call, cut))
    table.add_row(*row)
  totals = [
    _size_repr(jax.tree_util.tree_leaves(variables[col])) for col in collections
  ]
  # 'Total' labels the collection totals from the column just before them.
  table.add_row(
    *[''] * (len(names) - 1),
    rich.text.Text('Total', justify='right'),
    *totals,
    style='bold',
  )
  kwargs = {'force_terminal': True, 'force_jupyter': False}
  kwargs.update(console_kwargs or {})
  console = rich.console.Console(file=io.StringIO(), **kwargs)
  console.print(table)
  return '\n' + console.file.getvalue() + '\n'


def _calls_with_flops(
  module,
  rngs,
  mutable,
  args,
  kwargs,
  depth,
  show_repeated,
  compute_flops,
  compute_vjp_flops,
):
  """The calls to show, the variables and ``{index: (flops, vjp_flops)}``
  (None when no FLOPs are asked for)."""
  calls, variables = _record_calls(module, rngs, mutable, args, kwargs)
  calls = _unique_calls(calls, show_repeated)
  flops = None
  if compute_flops or compute_vjp_flops:
    key_rngs = rngs if isinstance(rngs, Mapping) else {'params': rngs}
    flops = {
      index: _call_flops(
        call, variables, key_rngs, mutable, compute_flops, compute_vjp_flops
      )
      if depth is None or len(call.path) <= depth
      else (-1, -1)
      for index, call in enumerate(calls)
    }
  return calls, variables, flops


def _get_module_table(
  module,
  depth: Optional[int],
  show_repeated: bool,
  compute_flops: bool,
  compute_vjp_flops: bool,
):
  """Returns ``fn(rngs, *args, mutable=..., **kwargs) -> Table``.

  The :class:`Table` holds one :class:`Row` per Module call shown (as in
  :func:`tabulate`), with the inputs and outputs (their leaves as
  ``_ArrayRepresentation`` / ``_ObjectRepresentation``), the Module's own
  variables and the counted ones (its whole subtree at the ``depth``
  cut-off), and the FLOPs (``-1`` when not computed).
  """

  def _get_table_fn(*args, **kwargs):
    rngs, *args = args
    mutable = kwargs.pop('mutable', DenyList('intermediates'))
    calls, variables, flops = _calls_with_flops(
      module,
      rngs,
      mutable,
      args,
      kwargs,
      depth,
      show_repeated,
      compute_flops,
      compute_vjp_flops,
    )
    collections = tuple(sorted(variables))
    rows = []
    for index, call in enumerate(calls):
      if depth is not None and len(call.path) > depth:
        continue
      own, counted = {}, {}
      for col in () if call.repeated else collections:
        if not _has_path(variables.get(col, {}), call.path):
          continue
        tree = _subtree(variables.get(col, {}), call.path)
        own[col] = {k: v for k, v in tree.items() if k not in call.row_children}
        cut = depth is not None and len(call.path) == depth
        counted[col] = dict(tree) if cut else own[col]
      flop, vjp_flop = flops[index] if flops else (-1, -1)
      rows.append(
        Row(
          path=call.path,
          module_copy=call.module.clone(parent=None),
          method=call.method,
          inputs=_summary_values.represent_tree(_call_inputs(call.inputs)),
          outputs=_summary_values.represent_tree(call.outputs),
          module_variables=own,
          counted_variables=counted,
          flops=flop,
          vjp_flops=vjp_flop,
        )
      )
    return Table(module, collections, rows)

  return _get_table_fn


def tabulate(
  module,
  rngs,
  depth: Optional[int] = None,
  show_repeated: bool = False,
  mutable=DenyList('intermediates'),
  console_kwargs=None,
  table_kwargs=None,
  column_kwargs=None,
  compute_flops: bool = False,
  compute_vjp_flops: bool = False,
  **kwargs,
):
  """Returns ``fn(*args, **kwargs) -> str``, a table summarizing ``module``.

  The table has a row per Module call (path, class, inputs, outputs) and a
  column per variable collection listing each Module's variables with
  their count and size; the last row holds the totals. Nothing is
  computed: the Module runs under ``jax.eval_shape``.

  Args:
    module: the Module to summarize.
    rngs: a PRNG key or ``{stream: key}`` for ``init``.
    depth: show only Modules up to this depth; a Module at the cut-off
      depth counts the variables of all its submodules.
    show_repeated: show every call of a Module, not only the first.
    mutable: the collections ``init`` may create.
    console_kwargs: passed to ``rich.console.Console`` (e.g.
      ``{'width': 120}``).
    table_kwargs: passed to ``rich.table.Table``.
    column_kwargs: passed to ``rich.table.Table.add_column``.
    compute_flops: add a ``flops`` column: XLA's estimate of the FLOPs of
      each call (the call alone, with its submodules), from
      ``jax.jit(fn).lower(...).cost_analysis()``. The calls are lowered,
      never run.
    compute_vjp_flops: add a ``vjp_flops`` column: the FLOPs of the
      forward plus the backward pass of each call (gradients with respect
      to its variables and inputs).
    **kwargs: keyword arguments of ``init`` (e.g. ``method``).

  Returns:
    A function of the Module's inputs that returns the table as text.

  >>> import jax, jax.numpy as jnp
  >>> from flax import linen as nn
  >>> class Bias(nn.Module):
  ...   @nn.compact
  ...   def __call__(self, x):
  ...     return x + self.param('b', jax.nn.initializers.zeros, (3,))
  >>> text = nn.tabulate(Bias(), jax.random.key(0))(jnp.ones(3))
  >>> 'Total Parameters: 3' in text
  True
  >>> text = nn.tabulate(Bias(), jax.random.key(0), compute_flops=True)(
  ...     jnp.ones(3))
  >>> '│ 3     │' in text  # three additions
  True
  """
  init_kwargs = kwargs

  def table_fn(*args, **call_kwargs):
    calls, variables, flops = _calls_with_flops(
      module,
      rngs,
      mutable,
      args,
      {**init_kwargs, **call_kwargs},
      depth,
      show_repeated,
      compute_flops,
      compute_vjp_flops,
    )
    return _render(
      module,
      calls,
      variables,
      depth,
      console_kwargs,
      table_kwargs,
      column_kwargs,
      flops,
    )

  return table_fn


def module_paths(
  module,
  rngs,
  *args,
  show_repeated=False,
  mutable=DenyList('intermediates'),
  **kwargs,
) -> dict:
  """Returns ``{path: module}`` for the Modules called when ``module``
  runs (``''`` is the root); the Modules are unbound copies."""
  calls, _ = _record_calls(module, rngs, mutable, args, kwargs)
  calls = _unique_calls(calls, show_repeated)
  out = {}
  for call in calls:
    path = '/'.join(str(p) for p in call.path)
    if path not in out:
      out[path] = call.module.clone(name=call.module.name)
  return out
