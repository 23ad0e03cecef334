"""Reading the values of rebuilt graph nodes without flattening them again.

After a function ran inside a transform, the engine collects the new leaf
values of its inputs (:meth:`common.InnerGraph.updates`). When no Pytree
attribute was set or deleted and no Variable metadata changed anywhere
since the inputs were rebuilt (the global structure epochs are unchanged),
and the graph holds no mutable container (list, dict, other pytrees) whose
contents could change without an attribute being set, the structure is
the one the inputs came with: each leaf is either a Variable, whose value
is read from the object rebuilt for its index, or an array held by a
plain attribute, which still holds the value it was rebuilt with.

:func:`leaf_plan` lists this per graphdef node, once: the index of each
leaf's Variable, or None for an attribute leaf; None for a node whose
structure the epochs cannot vouch for.
"""

from flax.nnx import rebuildlib
from flax.nnx.variablelib import _HIJAX_CLASSES

_PLANS: dict = {}
_REBUILDS: dict = {}
_MAX_PLANS = 1024


class _NotPlannable(Exception):
  pass


def _walk(node, out: list) -> None:
  kind = node[0]
  if kind == 'v':
    if node[1] in _HIJAX_CLASSES:
      raise _NotPlannable
    out.append(node[2])
  elif kind == 'a':
    if len(node) != 1:  # a raw jax.Ref
      raise _NotPlannable
    out.append(None)
  elif kind in ('r', 's'):
    pass
  elif kind == 'n':
    for _, child in node[3]:
      _walk(child, out)
  elif kind == 'l' and node[1] is tuple:
    for child in node[2]:
      _walk(child, out)
  else:
    raise _NotPlannable


def leaf_plan(node) -> tuple | None:
  """Per leaf of ``node`` (flattening order): its Variable's index, or
  None for an attribute leaf; None if ``node`` is not plannable."""
  hit = _PLANS.get(id(node))
  if hit is not None and hit[0] is node:
    return hit[1]
  out: list = []
  try:
    _walk(node, out)
    plan = tuple(out)
  except _NotPlannable:
    plan = None
  if len(_PLANS) >= _MAX_PLANS:
    _PLANS.clear()
  # the node is kept with its plan, so its id is not reused meanwhile
  _PLANS[id(node)] = (node, plan)
  return plan


def _max_index(node) -> int:
  kind = node[0]
  if kind in ('n', 'g'):
    return max([node[2]] + [_max_index(c) for _, c in node[3]])
  if kind == 'v':
    return node[2]
  if kind in ('r', 'a'):
    return node[1] if len(node) > 1 else -1
  if kind in ('l', 'd', 'p'):
    return max([-1] + [_max_index(c) for c in node[2]])
  return -1


def rebuild_plan(node) -> rebuildlib.Plan:
  """The cached :class:`~flax.nnx.rebuildlib.Plan` that builds fresh
  objects for the Pytree root ``node`` (kind ``'n'``)."""
  hit = _REBUILDS.get(id(node))
  if hit is not None and hit[0] is node:
    return hit[1]
  plan = rebuildlib.Plan(node, _max_index(node) + 1)
  if len(_REBUILDS) >= _MAX_PLANS:
    _REBUILDS.clear()
  _REBUILDS[id(node)] = (node, plan)
  return plan


def read_values(plan, index: dict, in_values) -> list:
  """The leaf values of a rebuilt root by ``plan``: Variables from
  ``index`` (graph index -> rebuilt object), attribute leaves from
  ``in_values`` (what the root was rebuilt with)."""
  return [
    in_values[j] if i is None else index[i]._raw_value
    for j, i in enumerate(plan)
  ]
