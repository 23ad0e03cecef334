"""Prefixes on graph nodes, as JAX takes them.

Every NNX transform takes prefixes of its arguments or outputs (``in_axes``,
``out_axes``, ``in_specs``, ``in_shardings``, ``argnums``, ...). A prefix
may hold NNX objects that stand for graph nodes:

* the results of :func:`nnx.prefix` in graph mode (a ``TreeState``: a
  GraphDef with a State mapping each Variable path to its prefix), with
  ``graph=True, graph_updates=False`` only;
* :class:`StateAxes`, :class:`StateSharding` and :class:`DiffState` (graph
  mode with graph updates only).

In tree mode a prefix for a graph node has the node's own shape (as
``nnx.prefix(..., graph=False)`` makes it): JAX takes it as it is.
:func:`check` validates a prefix when the transform is created;
:func:`to_jax` turns ``TreeState`` entries into the prefix of the
``NodeStates`` the graph node crosses as, so the result is a prefix JAX
accepts.
"""

from flax.nnx.transforms.engine import common
from flax.nnx import graphlib
from flax.nnx.transforms.engine.types import StateAxes
from flax.nnx._common import graph_updates_default, resolve_graph
from flax.nnx.transforms.engine.types import DiffState, StateSharding
import functools

import jax

from flax.nnx import extract
from flax.nnx.pytreelib import Pytree
from flax.nnx.variablelib import Variable
from jax.sharding import PartitionSpec

_TreeState = extract.TreeState


def _is_tree_state(x) -> bool:
  return isinstance(x, _TreeState)


def _is_prefix_leaf(x) -> bool:
  return x is None or isinstance(x, _TreeState)


def _nnx_prefix_types():

  return (StateAxes, StateSharding, DiffState)


def check(prefix, *, name: str, what: str, graph: bool, updates: bool):
  """Validates the prefix ``prefix`` given as ``what`` to ``nnx.<name>``
  when the transform is created: Variables are no prefixes; in graph mode
  neither are graph nodes (tree mode takes node-shaped prefixes, e.g.
  ``nnx.prefix(..., graph=False)``); without graph updates (``updates``
  False) neither are StateAxes, StateSharding or DiffState; results of
  ``nnx.prefix`` in graph mode (TreeState) are prefixes only with
  ``graph=True`` and no graph updates."""
  special = _nnx_prefix_types()

  def is_leaf(x):
    return isinstance(x, (Pytree, Variable, _TreeState) + special)

  leaves = jax.tree_util.tree_flatten_with_path(prefix, is_leaf=is_leaf)[0]
  for path, leaf in leaves:
    where = jax.tree_util.keystr(path)
    kind = type(leaf).__name__
    if isinstance(leaf, _TreeState) and (updates or not graph):
      raise ValueError(
        f'Found `TreeState` object at path {where} in `{what}` for '
        f'nnx.{name}. `TreeState` objects are only allowed as prefixes when '
        '`graph=True` and `graph_updates=False`: pass those to the '
        f'transform (nnx.{name}(..., graph=True, graph_updates=False)), or '
        'in tree mode use the node-shaped prefix of '
        'nnx.prefix(..., graph=False).'
      )
    if isinstance(leaf, Variable):
      raise ValueError(
        f'Found Variable of type {kind} at path {where} in `{what}` for '
        f'nnx.{name}. Variables prefixes are not supported: give the '
        'prefix of the whole Variable (its axis, sharding, ...) instead.'
      )
    if graph and isinstance(leaf, Pytree):
      raise ValueError(
        f'Found graph node of type {kind} at path {where} in `{what}` for '
        f'nnx.{name}. Graph nodes are not allowed as prefixes when '
        f'graph=True: remove it, use tree mode (nnx.{name}(..., '
        'graph=False)), or build the prefix with nnx.prefix(..., '
        'graph=True).'
      )
    if not updates and isinstance(leaf, special):
      raise ValueError(
        f'`{what}` cannot contain `{kind}` objects when `graph=False` or '
        f'`graph_updates=False` (found one at path {where} for nnx.{name}). '
        f'Remove it, use graph mode with graph updates (nnx.{name}(..., '
        f'graph=True, graph_updates=True) or nnx.compat.{name}), or build '
        'a prefix tree for the graph node with nnx.prefix.'
      )


def check_all(name: str, graph, graph_updates, **prefixes) -> None:
  """:func:`check` for each ``what=prefix`` of a transform created with
  these ``graph`` / ``graph_updates`` options (None: the defaults)."""

  g = resolve_graph(graph)
  if graph_updates is None:
    graph_updates = graph_updates_default()
  updates = g and bool(graph_updates)
  for what, prefix in prefixes.items():
    check(prefix, name=name, what=what, graph=g, updates=updates)


def has_tree_states(prefix) -> bool:
  """Whether ``prefix`` holds results of :func:`nnx.prefix`."""
  return any(
    map(
      _is_tree_state, jax.tree_util.tree_leaves(prefix, is_leaf=_is_prefix_leaf)
    )
  )


def to_jax(prefix, *, graph: bool):
  """``prefix`` with each :func:`nnx.prefix` result replaced by the prefix
  of the ``NodeStates`` its graph node crosses as (``graph``: nodes cross
  as graphs, ``graph=True, graph_updates=False``). Other entries, and
  every prefix in tree mode (node-shaped already), are left as they
  are."""
  if not graph or not has_tree_states(prefix):
    return prefix

  def conv(x):
    if not _is_tree_state(x):
      return x
    return extract.NodeStates(
      _graphdef=x.graphdef, states=(x.state,), metadata=None
    )

  return jax.tree.map(conv, prefix, is_leaf=_is_prefix_leaf)


def variable_prefixes(prefix, pure_tree) -> list:
  """The prefix of each Variable of ``pure_tree`` (what crosses the JAX
  transform), in pytree order: ``prefix`` (as :func:`to_jax` returns it)
  broadcast over ``pure_tree`` with Variables as leaves."""
  out: list = []

  def is_variable(x):
    return isinstance(x, Variable)

  def visit(p, sub):
    leaves = jax.tree_util.tree_leaves(sub, is_leaf=is_variable)
    out.extend([p] * sum(map(is_variable, leaves)))

  jax.tree.map(visit, prefix, pure_tree, is_leaf=lambda x: x is None)
  return out


def _is_entry(x) -> bool:

  return x is None or isinstance(
    x, (_TreeState, PartitionSpec) + _nnx_prefix_types()
  )


def has_node_entries(prefix) -> bool:
  """Whether ``prefix`` holds entries that stand for graph nodes
  (:func:`nnx.prefix` results, StateAxes, StateSharding)."""
  kinds = (_TreeState,) + _nnx_prefix_types()
  return any(
    isinstance(x, kinds)
    for x in jax.tree_util.tree_leaves(prefix, is_leaf=_is_entry)
  )


def entry_of(entry):
  """``(path, variable) -> prefix`` of the Variables of a graph node the
  prefix entry ``entry`` covers."""

  if isinstance(entry, _TreeState):
    paths, values = entry.state._flat_items()
    table = {
      tuple(p): (v.get_value() if isinstance(v, Variable) else v)
      for p, v in zip(paths, values)
    }
    return lambda path, var: table.get(tuple(path))
  if isinstance(entry, StateAxes):
    return entry.map_prefix
  return lambda path, var: entry


def map_variables(tree, prefix, fn):
  """Applies ``fn(value, prefix_value)`` to the leaves of ``tree`` (arrays,
  and the values of the Variables of its graph nodes) wherever ``prefix``
  gives them a value that is not None; graph nodes are updated in place,
  the new tree is returned."""

  def is_node(x):
    return isinstance(x, (Pytree, Variable))

  leaves, treedef = jax.tree_util.tree_flatten(tree, is_leaf=is_node)
  entries = extract.broadcast_prefix(
    prefix, tree, prefix_is_leaf=_is_entry, tree_is_leaf=is_node
  )
  out = []
  for leaf, entry in zip(leaves, entries):
    if entry is not None and is_node(leaf):
      lookup = entry_of(entry)
      for path, var in graphlib.iter_graph(leaf):
        if isinstance(var, Variable):
          value = lookup(tuple(path), var)
          if value is not None:
            var.set_value(fn(var.get_value(), value))
    elif entry is not None:
      leaf = fn(leaf, entry)
    out.append(leaf)
  return treedef.unflatten(out)


def _constrain(x, sharding):
  """``x`` constrained to ``sharding`` inside a trace (resharded where the
  mesh axes are explicit)."""
  try:
    return jax.lax.with_sharding_constraint(x, sharding)
  except ValueError:
    return jax.sharding.reshard(x, sharding)


def with_out_shardings(fun, out_shardings):
  """``fun`` with its outputs constrained to the shardings of the prefix
  ``out_shardings``, graph node entries included (the Variables of an
  output graph node get the sharding their entry gives their path)."""

  @functools.wraps(fun)
  def sharded(*args, **kwargs):
    return map_variables(fun(*args, **kwargs), out_shardings, _constrain)

  return sharded


def graph_prefix(prefix, tree, ga):
  """``prefix`` (a prefix of ``tree``, which holds graph nodes) as a
  prefix of ``ga.pure()``: each graph node's entry becomes a NodeStates
  holding the prefix of each of its slots (:func:`entry_of`)."""

  def is_node(x):
    return isinstance(x, (Pytree, Variable))

  entries = extract.broadcast_prefix(
    prefix, tree, prefix_is_leaf=_is_entry, tree_is_leaf=is_node
  )
  leaves = list(entries)
  for k, (pos, root) in enumerate(zip(ga.positions, ga.roots)):
    if pos >= len(leaves):  # a keyword argument: not covered
      break
    lookup = entry_of(entries[pos])
    values = [
      lookup(tuple(path), slot) for path, slot in zip(root.paths, root.slots)
    ]
    groups = (
      (values,)
      if root.mask is None
      else common._group(values, root.mask, root.ngroups)
    )
    leaves[pos] = common.NodeStates(groups, k)
  return jax.tree_util.tree_structure(tree, is_leaf=is_node).unflatten(leaves)


def check_aliasing(tree, prefix, *, arg_paths: bool = False) -> None:
  """Raises the 'Inconsistent aliasing' ValueError if a Variable of the
  graph nodes of ``tree`` is reached under two different prefixes of
  ``prefix`` (graph mode: shared objects stay shared, so they need one
  prefix). Only graph nodes with different prefix entries are walked.

  An :func:`nnx.prefix` entry made with filters or a function gives each
  Variable of its node the prefix of its path in the node (a node reached
  again has an empty state there). ``arg_paths``: the error names each
  Variable by the path of its node in ``tree`` too (``0/<argument>/...``,
  the transforms without graph updates)."""

  def is_node(x):
    return isinstance(x, (Pytree, Variable))

  leaves_with_paths = jax.tree_util.tree_flatten_with_path(
    tree, is_leaf=is_node
  )[0]
  leaves = [leaf for _, leaf in leaves_with_paths]
  if sum(map(is_node, leaves)) < 2:
    return
  entries = extract.broadcast_prefix(
    prefix, tree, prefix_is_leaf=_is_entry, tree_is_leaf=is_node
  )
  nodes = [
    (x, e, tuple(extract._key(k) for k in keypath))
    for (keypath, x), e in zip(leaves_with_paths, entries)
    if is_node(x)
  ]
  first = nodes[0][1]
  if all(e is first or _same(e, first) for _, e, _ in nodes[1:]):
    return
  seen: dict = {}
  for node, entry, node_path in nodes:
    lookup = _aliasing_entry_of(entry)
    base = (0, *node_path) if arg_paths else ()
    for path, var in graphlib.iter_graph(node):
      if isinstance(var, Variable):
        seen.setdefault(id(var), []).append(
          (base + tuple(path), lookup(tuple(path), var), var)
        )
  lines = []
  for found in seen.values():
    values = [p for _, p, _ in found]
    if any(not _same(p, values[0]) for p in values[1:]):
      lines.append(f'Node: {type(found[0][2]).__name__}')
      for path, p, _ in found:
        where = '/'.join(map(str, path)) if path else '<root>'
        lines.append(f'  {where}: {p!r}')
  if lines:
    raise ValueError(
      'Inconsistent aliasing detected. The following nodes have different '
      'prefixes:\n' + '\n'.join(lines) + '\nA Variable reachable from '
      'several arguments must get the same prefix (axis, sharding, ...) '
      'everywhere.'
    )


def _aliasing_entry_of(entry):
  """As :func:`entry_of`, for the aliasing check: the function of an
  :func:`nnx.prefix` entry, where it has one, gives every Variable of the
  node its prefix."""
  if isinstance(entry, _TreeState) and entry.prefix_fn.value is not None:
    return entry.prefix_fn.value
  return entry_of(entry)


def _same(a, b) -> bool:
  try:
    return bool(a == b)
  except Exception:  # noqa: BLE001 - incomparable prefixes differ
    return a is b


def _argument_variables(args, prefix, graph: bool) -> list:
  """``(Variable, prefix value)`` for the Variables of ``args`` that
  ``prefix`` (the transform's ``in_shardings``) gives a value, each
  once: through graph nodes by path in graph mode, in pytree order in tree
  mode (node-shaped prefixes)."""

  out, seen = [], set()
  if isinstance(prefix, (tuple, list)):
    # the entries cover the leading positional arguments (trailing static
    # ones are not covered)
    args, prefix = tuple(args[: len(prefix)]), tuple(prefix)

  def add(var, value):
    if value is not None and id(var) not in seen:
      seen.add(id(var))
      out.append((var, value))

  if not graph:
    variables = [
      x
      for x in jax.tree_util.tree_leaves(
        args, is_leaf=lambda x: isinstance(x, Variable)
      )
      if isinstance(x, Variable)
    ]
    for var, value in zip(variables, variable_prefixes(prefix, args)):
      add(var, value)
    return out

  def is_node(x):
    return isinstance(x, (Pytree, Variable))

  leaves = jax.tree_util.tree_leaves(args, is_leaf=is_node)
  entries = extract.broadcast_prefix(
    prefix, args, prefix_is_leaf=_is_entry, tree_is_leaf=is_node
  )
  for leaf, entry in zip(leaves, entries):
    if entry is None or not is_node(leaf):
      continue
    lookup = entry_of(entry)
    for path, var in graphlib.iter_graph(leaf):
      if isinstance(var, Variable):
        add(var, lookup(tuple(path), var))
  return out


def with_update_shardings(fun, in_shardings, *, graph: bool, every: bool):
  """``fun`` whose argument Variables leave with the sharding
  ``in_shardings`` gives them, as ``nnx.jit`` hands them back: with graph
  updates (``every``) all Variables of the sharded arguments, those added
  by ``fun`` included; otherwise only those whose value ``fun`` set."""

  @functools.wraps(fun)
  def sharded(*args, **kwargs):
    before = None
    if not every:
      before = {
        id(v): v.get_raw_value()
        for v, _ in _argument_variables(args, in_shardings, graph)
      }
    out = fun(*args, **kwargs)
    for var, sharding in _argument_variables(args, in_shardings, graph):
      value = var.get_raw_value()
      if before is None or before.get(id(var)) is not value:
        var.set_raw_value(_constrain(value, sharding))
    return out

  return sharded
