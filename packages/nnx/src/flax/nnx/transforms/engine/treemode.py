"""The pytree modes' side of the NNX transforms (``graph=False``, or
``graph_updates=False``): the Variables of an argument tree, the values
(and metadata) that come back and are written into them, and the checks of
the arguments these modes refuse.
"""

from flax.nnx.transforms.engine.types import DiffState, StateAxes, StateSharding
import typing as tp

import jax

from flax.nnx.variablelib import _HIJAX_CLASSES
from flax.nnx.flattenlib import _Meta
from flax.nnx.transforms.engine import varflow
from flax.nnx.variablelib import Variable, store_raw_value, store_raw_values

_is_variable = Variable.__instancecheck__


def same_variables(given, result):
  """``result`` (a carry that crossed a loop as a pytree, its Variables'
  values written back into ``given``'s) with ``given``'s Variables in their
  places: a loop carry keeps its Variable objects (the containers holding
  them are new, as pytrees are)."""
  is_node = _is_variable
  leaves, treedef = jax.tree_util.tree_flatten(given, is_leaf=is_node)
  if not any(map(is_node, leaves)):
    return result
  try:
    out = treedef.flatten_up_to(result)
  except (ValueError, TypeError):
    return result
  return treedef.unflatten(
    [x if is_node(x) else y for x, y in zip(leaves, out)]
  )


class WithMetadata:
  """A Variable's value leaving a pytree-mode transform with the
  Variable's metadata (static: the pytree auxiliary data), when metadata
  may have changed inside."""

  __slots__ = ('value', 'meta')

  def __init__(self, value, meta):
    self.value = value
    self.meta = meta


jax.tree_util.register_pytree_node(
  WithMetadata,
  lambda w: ((w.value,), w.meta),
  lambda meta, children: WithMetadata(children[0], meta),
)


def with_metadata(var) -> 'WithMetadata | tp.Any':
  """``var``'s raw value with its metadata (the raw value alone for a
  hijax Variable, whose metadata travels with it)."""
  if type(var) in _HIJAX_CLASSES or not _is_variable(var):
    return var._raw_value
  meta = var._var_metadata
  return WithMetadata(var._raw_value, _Meta(meta) if meta else None)


def store_values(variables, values):
  """Writes ``values`` into ``variables`` (one each, in order) as they come
  out of a transform: the tree-mode write-back of every NNX transform. A
  :class:`WithMetadata` value also gives its Variable the metadata it
  carries, where it differs."""
  if not any(type(v) is WithMetadata for v in values):
    store_raw_values(variables, values)
    return
  for var, v in zip(variables, values):
    if type(v) is not WithMetadata:
      store_raw_value(var, v)
      continue
    store_raw_value(var, v.value)
    items = v.meta.items if v.meta is not None else {}
    # in key order, as a graphdef lists them
    varflow.give_metadata(var, {k: items[k] for k in sorted(items)})


_WHERE = {'arguments': '.args', 'operands': '.operands', 'carry': '.carry'}


def tree_variables(tree, where='call', name='nnx transform'):
  """Variables of a pytree (tree mode); one reachable twice is the
  Duplicate error of ``name``. ``where`` says what ``tree`` is, for the
  paths: ``'call'`` an ``(args, kwargs)`` pair (``.args[i]`` /
  ``.kwargs[k]``), else a label (``'arguments'``: a tuple of positional
  arguments, ``.args[i]``; ``'operands'``, ``'carry'``, ...)."""
  paths_leaves, _ = jax.tree_util.tree_flatten_with_path(
    tree, is_leaf=lambda x: isinstance(x, Variable)
  )
  pair = where == 'call'
  label = _WHERE.get(where, '.' + where.replace(' ', '_'))
  seen = {}
  out = []
  for path, leaf in paths_leaves:
    if isinstance(leaf, Variable):
      if pair:
        here = varflow._arg_path(path)
      else:
        here = label + jax.tree_util.keystr(path)
      if id(leaf) in seen:
        raise ValueError(
          varflow.duplicate_message(leaf, [seen[id(leaf)], here], name)
        )
      seen[id(leaf)] = here
      out.append(leaf)
  return out


def check_tree_mode_args(*prefixes, name):

  for prefix in prefixes:
    for leaf in jax.tree_util.tree_leaves(
      prefix,
      is_leaf=lambda x: isinstance(x, (DiffState, StateAxes, StateSharding)),
    ):
      if isinstance(leaf, (DiffState, StateAxes, StateSharding)):
        raise ValueError(
          f'{type(leaf).__name__} is not supported by {name} in tree mode '
          '(graph=False) or with graph_updates=False; use graph=True, or '
          'pass plain axes/argnums.'
        )
