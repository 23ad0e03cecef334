"""Writing into a graph: :func:`update` puts the values of States into a
node's Variables (adding what the node lacks), :func:`pop` takes the
Variables matching filters out of it.

>>> from flax import nnx
>>> import jax.numpy as jnp
>>> class M(nnx.Module):
...   def __init__(self):
...     self.w = nnx.Param(jnp.zeros(1))
...     self.s = nnx.BatchStat(jnp.zeros(1))
>>> m = M()
>>> stats = nnx.pop(m, nnx.BatchStat)
>>> list(stats.keys()), hasattr(m, 's')
(['s'], False)
"""

import operator

import jax

from flax.nnx._common import META_EPOCH
from flax.nnx._variable_tree import REF_TYPE, is_array_ref
from flax.nnx.graphcore import _states_from_view, flat_view
from flax.nnx.graphnodes import del_child, get_child, set_child
from flax.nnx.statelib import State, node_state
from flax.nnx.variablelib import Variable, store_raw_value, store_raw_values

# (after variablelib, which loads it at its end)
from flax.nnx._hijax_graph import HIJAX_CLASSES, is_hijax, write_hijax

_is_variable = Variable.__instancecheck__
_raw = operator.attrgetter('_raw_value')
_meta = operator.attrgetter('_var_metadata')
_TRACER = jax.core.Tracer


def update(node, state, /, *states) -> None:
  """Writes the values of the states into the Variables of ``node``.

  >>> from flax import nnx
  >>> import jax, jax.numpy as jnp
  >>> class M(nnx.Module):
  ...   def __init__(self):
  ...     self.w = nnx.Param(jnp.zeros(2))
  >>> m = M()
  >>> nnx.update(m, jax.tree.map(lambda x: x + 1, nnx.state(m)))
  >>> m.w[...].tolist()
  [1.0, 1.0]
  """
  view = flat_view(node)
  for s in (state, *states):
    if isinstance(s, Variable) and view.paths == [()]:
      # a Variable's state is a Variable
      _write(view.leaves[0], s)
      continue
    raw = s
    if not isinstance(s, State):
      s = State(s)
    paths, leaves = s._flat_items()
    if len(leaves) == len(view.leaves) and (
      paths is view.paths or paths == view.paths
    ):
      # the same paths in the same order (a state of this node, possibly
      # mapped over): position by position
      _write_aligned(view, leaves)
      continue
    index = view.path_index
    if index is None:
      index = view.path_index = dict(zip(view.paths, view.leaves))
    for path, leaf in zip(paths, leaves):
      target = index.get(path)
      if target is None:
        _set_path(node, path, leaf, raw)
        view = flat_view(node)
        index = view.path_index = dict(zip(view.paths, view.leaves))
      else:
        _write(target, leaf)


def _write_aligned(view, leaves):
  """``_write`` of each leaf into the slot of ``view`` at its position, in
  C-level passes when the slots are Variables and the leaves all raw
  values, or all Variables with the slots' metadata."""
  targets = view.leaves
  if view.all_variables:
    if not any(map(_is_variable, leaves)) and not _holds_refs(targets):
      store_raw_values(targets, leaves)
      return
    if all(map(_is_variable, leaves)) and all(
      map(operator.eq, map(_meta, leaves), map(_meta, targets))
    ):
      store_raw_values(targets, map(_raw, leaves))
      return
  for target, leaf in zip(targets, leaves):
    _write(target, leaf)


def _holds_refs(targets) -> bool:
  """Whether a Variable of ``targets`` keeps its value in a ``jax.Ref`` (or
  a tracer of one); one C-level pass over the value types otherwise."""
  types = set(map(type, map(_raw, targets)))
  if REF_TYPE in types:
    return True
  return any(issubclass(t, _TRACER) for t in types) and any(
    map(is_array_ref, map(_raw, targets))
  )


def _write(target, leaf):
  if isinstance(target, Variable):
    if isinstance(target, _TRACER) or type(target) in HIJAX_CLASSES:
      # a hijax Variable (or a traced one): written through its primitives
      write_hijax(target, leaf)
    elif isinstance(leaf, Variable):
      meta = leaf._var_metadata
      if meta and meta != target._var_metadata:
        META_EPOCH.value += 1
        target._var_metadata.update(meta)
      store_raw_value(target, leaf._raw_value)
    elif is_array_ref(target._raw_value) and not is_array_ref(leaf):
      target._raw_value[...] = leaf  # a plain value goes into the Ref
    else:
      store_raw_value(target, leaf)
  else:
    target._raw_value = leaf._raw_value if isinstance(leaf, Variable) else leaf


def _set_path(node, path, leaf, state):
  """Sets ``leaf`` at ``path`` of ``node`` (a copy of a Variable). Where
  ``path`` leaves the graph at an inner key, the subtree of ``state`` there
  (the mapping the user gave, not a copy) becomes the new child, as in
  Flax 0.12.8."""
  obj = node
  for depth, key in enumerate(path[:-1]):
    try:
      obj = get_child(obj, key)
    except (AttributeError, KeyError, IndexError):
      subtree = state
      for k in path[: depth + 1]:
        subtree = subtree[k]
      set_child(obj, key, subtree)
      return
  set_child(obj, path[-1], leaf.copy() if isinstance(leaf, Variable) else leaf)


def pop(node, *filters):
  """Removes the Variables matching ``filters`` from ``node`` and returns
  them as State(s)."""
  if not filters:
    raise ValueError('pop expects at least one filter.')
  view = flat_view(node)
  states = _states_from_view(view, filters, copy=False)
  if not view.all_variables:
    # hijax Variables (and traced ones) are left in place
    states = [_without_hijax(s) for s in states]
  for s in states:
    for path in s._flat_items()[0]:
      obj = node
      for key in path[:-1]:
        obj = get_child(obj, key)
      del_child(obj, path[-1])
  return states[0] if len(states) == 1 else tuple(states)


def _without_hijax(state):
  paths, leaves = state._flat_items()
  keep = [(p, v) for p, v in zip(paths, leaves) if not is_hijax(v)]
  if len(keep) == len(paths):
    return state
  return node_state([p for p, _ in keep], [v for _, v in keep])


def graph_pop(node, filters: tuple) -> tuple:
  """Removes the Variables matching each filter from ``node``; one State
  per filter."""
  out = pop(node, *filters)
  return out if isinstance(out, tuple) else (out,)
