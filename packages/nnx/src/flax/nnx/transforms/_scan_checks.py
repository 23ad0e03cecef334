"""The checks of :func:`nnx.scan` (the ``in_axes`` / ``out_axes`` when it
is created, and the carry and the inputs' structure after each step).

A step may not change the structure of its carry: in graph mode a carried
graph node that gains or loses an attribute, or whose Variables change
value structure (values sown under ``nnx.capture``), is the carry
TypeError, while a scanned node's new values are stacked over the steps;
in the pytree modes each graph node of the carry output must have the
carry input's pytree metadata and Variables.
"""

from flax.nnx import graphlib
import jax

from flax.nnx import extract
from flax.nnx.transforms.engine import common
from flax.nnx.transforms.engine._axes import _is_ns
from flax.nnx.transforms.engine.types import Carry, StateAxes
from flax.nnx.variablelib import Variable

_is_variable = Variable.__instancecheck__


def check_axes(in_axes, out_axes):
  """Validates the ``in_axes`` / ``out_axes`` of :func:`scan` when it is
  created: at most one ``nnx.Carry`` on each side, at the top level only,
  on both sides or neither, and no broadcast (None) outputs."""

  def carries(axes, name):
    if axes is Carry:
      return [name]
    if not isinstance(axes, tuple):
      return []
    found = [f'{name}[{i}]' for i, a in enumerate(axes) if a is Carry]
    if len(found) > 1:
      raise ValueError(
        f'Found multiple Carry definitions at {found[0]} and {found[1]}: '
        'nnx.scan takes one carry (make it a tuple to carry several values).'
      )
    return found

  in_carry = carries(in_axes, 'in_axes')
  out_carry = carries(out_axes, 'out_axes')
  for axes in (in_axes, out_axes):
    if isinstance(axes, tuple):
      for a in axes:
        if a is not Carry and Carry in jax.tree_util.tree_leaves(
          a, is_leaf=lambda x: x is Carry or x is None
        ):
          raise ValueError(
            'Carry must at the top-level, it cannot be nested. Found '
            f'axes={axes!r}: mark a whole argument or output as the carry.'
          )

  # a None anywhere in out_axes (prefix trees of graph nodes included), or
  # a StateAxes entry that broadcasts (None) or carries a substate
  for path, a in jax.tree_util.tree_flatten_with_path(
    out_axes, is_leaf=lambda x: x is None or isinstance(x, StateAxes)
  )[0]:
    where = f'out_axes{jax.tree_util.keystr(path)}'
    if a is None:
      raise ValueError(
        f'Cannot broadcast output state. Got out_axes=None at: {where}; '
        'scan stacks its outputs (give an int axis, or return the value '
        'through the carry).'
      )
    if isinstance(a, StateAxes):
      _check_out_state_axes(a, where)
  if bool(in_carry) != bool(out_carry):
    raise ValueError(
      'If one of in_axes or out_axes has Carry, the other must also have '
      f'Carry. Got in_axes={in_axes!r} and out_axes={out_axes!r}.'
    )


def _check_out_state_axes(axes: StateAxes, where: str) -> None:
  """An output StateAxes of scan stacks every substate: an entry that
  broadcasts (None) or carries (``nnx.Carry``) one is refused (the first
  such entry is named)."""
  for filt, axis in zip(axes.filters, axes.axes):
    if axis is None:
      raise ValueError(
        f'Cannot broadcast output state. Got StateAxes({{{filt}: None}}) '
        f'at: {where}; scan stacks its outputs (give the substate an int '
        'axis, or return it through the carry).'
      )
    if axis is Carry:
      raise ValueError(
        f'Cannot carry output state. Got StateAxes({{{filt}: Carry}}) at: '
        f'{where}; an output StateAxes stacks its substates (carry the '
        'graph node whole in the carry output instead).'
      )


def check_carry_refs(c_in, c_out):
  """The carry output of a scan step must have the carry input's pytree
  structure and hold the same graph nodes at the same places."""
  leaves, treedef = jax.tree_util.tree_flatten_with_path(
    c_in, is_leaf=common.is_node_leaf
  )
  try:
    outs = treedef.flatten_up_to(c_out)
  except (ValueError, TypeError) as e:
    raise ValueError(
      'nnx.scan: pytree structure error: the carry output does not have '
      f'the structure of the carry input ({e}).'
    ) from None
  for (path, x), y in zip(leaves, outs):
    if x is y:
      continue
    if (
      common.is_node_leaf(x)
      or common.is_node_leaf(y)
      or not jax.tree_util.treedef_is_leaf(jax.tree_util.tree_structure(y))
    ):
      raise ValueError(
        'nnx.scan: Carry references must be the same between iterations: '
        f'the carry input at carry{jax.tree_util.keystr(path)} is '
        f'{type(x).__name__} (id={id(x)}) but the carry output there is '
        f'{type(y).__name__} (id={id(y)}). Return the carried graph nodes '
        'themselves, in the same places.'
      )


def _is_tree_node(x):
  return common.is_node_leaf(x) or isinstance(
    x, (extract.NodeStates, extract.TreeState)
  )


def carry_metadata(carry):
  """Pytree modes: the structure outside the graph nodes of a carry, and
  each graph node's path, pytree structure and structure with its
  Variables as leaves (read before the step runs: the step may change the
  nodes)."""
  nodes, outer = jax.tree_util.tree_flatten_with_path(
    carry, is_leaf=_is_tree_node
  )
  return outer, [
    (
      p,
      jax.tree_util.tree_structure(x),
      jax.tree_util.tree_structure(x, is_leaf=common._is_variable),
    )
    for p, x in nodes
  ]


def check_carry_metadata(c_in, c_out, name='nnx.scan', variables_to_jax=False):
  """Pytree modes: each graph node of the carry output must have the
  pytree metadata of the carry input's (same attributes, same static
  values); ``c_in`` / ``c_out`` from :func:`carry_metadata`. A carry that
  differs outside its graph nodes is left to ``jax.lax.scan`` (its
  TypeError), and so is, with ``variables_to_jax`` (tree mode), a node
  whose only change is the metadata of its Variables."""
  (outer_in, nodes_in), (outer_out, nodes_out) = c_in, c_out
  if outer_in != outer_out:
    return
  for (path, x, x_nodes), (_, y, y_nodes) in zip(nodes_in, nodes_out):
    if x != y:
      if variables_to_jax and x_nodes == y_nodes:
        return
      raise ValueError(
        f'{name}: pytree structure error: different pytree metadata at '
        f'key path carry{jax.tree_util.keystr(path)}: the graph node '
        'returned there does not have the attributes (or static '
        'values) of the one it received. Create the attributes before the '
        'call and keep them the same in every step.'
      )


def check_variable_identity(carry_vars, out_vars):
  """Pytree mode: the carry output must hold the carry input's Variables
  themselves, in the same places (no new or rearranged Variables)."""
  if len(out_vars) != len(carry_vars) or any(
    a is not b for a, b in zip(carry_vars, out_vars)
  ):
    raise ValueError(
      'nnx.scan: scan Variable identity must be preserved across '
      f'iterations: the carry input holds {len(carry_vars)} Variables, the '
      f'carry output {len(out_vars)}, not the same objects in the same '
      'places. Return the carried Variables (and the graph nodes holding '
      'them) themselves, and create attributes before the call.'
    )


def state_signature(node):
  """The paths of the Variables of a graph node, with their types, metadata
  and value structures: what a carried node must keep across a step."""

  pairs = [
    (tuple(p), v) for p, v in graphlib.iter_graph(node) if _is_variable(v)
  ]
  return (
    tuple(p for p, _ in pairs),
    jax.tree_util.tree_structure([v for _, v in pairs]),
  )


def kept_carry(changed, carry_states, roots) -> frozenset:
  """Graph mode: the carried graph nodes (by root) whose structure changed
  in a step while their state did not (a static attribute set or added, a
  Variable replaced by one of the same type and metadata): their values
  stay in the carry and they take their new structure after the loop.
  ``carry_states``: the :func:`state_signature` of each carried root
  before the step."""
  if changed is None:
    return frozenset()
  kept = []
  for k, before in carry_states.items():
    if changed[k] is None:
      continue
    try:
      same = state_signature(roots[k]) == before
    except Exception:  # noqa: BLE001 - incomparable metadata differs
      same = False
    if same:
      kept.append(k)
  return frozenset(kept)


def structure_changed(changed, plan, kept=frozenset()):
  """Checks the graph nodes of the inputs whose structure changed inside
  a scan step: only nodes scanned over an int axis may (their new leaves
  are stacked on that axis); a carried node is a TypeError (as for
  ``jax.lax.scan``), a broadcast one a ValueError."""
  for k, node in enumerate(changed):
    if node is None or k in kept:
      continue
    if k in plan.carry_roots:
      raise TypeError(CARRY_STRUCTURE)
    if plan.root_axes[k] is None and not isinstance(
      plan.root_entries[k], StateAxes
    ):
      raise ValueError(
        'The graph structure of an input changed inside nnx.scan (an '
        'attribute was added or removed) but the input is not scanned '
        '(in_axes None or a StateAxes with different axes): only graph '
        'nodes scanned over an int axis can change structure. Create the '
        'attributes before the call.'
      )


CARRY_STRUCTURE = (
  'nnx.scan: scan body function carry input and carry output must have '
  'the same pytree structure, but the structure of the carry changed in '
  'the step: a graph node of it gained or lost an attribute, or values '
  'were sown into its Variables (e.g. Module.sow under nnx.capture). '
  'Create the attributes before the call, and sow only in scanned Modules.'
)


def entered_values(pure, plan):
  """Graph mode: the Variable values of each input graph node (by root),
  as a step receives them."""
  out = {}
  for x in jax.tree_util.tree_leaves(pure, is_leaf=_is_ns):
    if _is_ns(x):
      mask = plan.masks[x.key]
      out[x.key] = (
        list(x.groups[0]) if mask is None else common._ungroup(x.groups, mask)
      )
  return out


def value_changes(changed, values, entered, nodes, plan, slots_of):
  """Graph mode: a graph node whose Variables changed value structure in
  a step (values recorded by ``Module.sow`` under ``nnx.capture``) counts
  as changed, like one that gained an attribute: a scanned one has its
  values stacked over the steps, a carried one is the carry TypeError.
  The Variables of a broadcast node (or broadcast by a StateAxes) keep
  their input values, as its other updates are dropped. ``entered``: as
  :func:`entered_values` gives them; ``slots_of(k)``: ``(paths, slots)``
  of root ``k`` after the step."""
  found = list(changed) if changed is not None else [None] * len(values)
  struct = jax.tree_util.tree_structure
  for k, vals in enumerate(values):
    if found[k] is not None:
      continue
    before = entered[k]
    moved = [
      i for i, (v, b) in enumerate(zip(vals, before)) if struct(v) != struct(b)
    ]
    if not moved:
      continue
    entry = plan.root_entries[k]
    if k not in plan.carry_roots and plan.root_axes[k] is None:
      if isinstance(entry, StateAxes):
        paths, slots = slots_of(k)
        keep = [
          i
          for i in moved
          if entry.map_prefix(tuple(paths[i]), slots[i]) is None
        ]
      else:
        keep = moved
      values[k] = vals = list(vals)
      for i in keep:
        vals[i] = before[i]  # the input value goes on
      if len(keep) == len(moved):
        continue
    found[k] = nodes[k]
  return tuple(found) if any(n is not None for n in found) else changed


def broadcast_changes(changed, values, entered, plan):
  """Graph mode: an input broadcast to the steps (``in_axes`` None) whose
  structure changed while keeping its leaves (static attributes,
  Variable metadata) goes on as it entered, its changes dropped as its
  other updates are. ``values`` / ``entered``: per root, the values after
  the step / as it entered."""
  if changed is None:
    return changed
  found = list(changed)
  for k, node in enumerate(changed):
    if (
      node is None
      or k in plan.carry_roots
      or plan.root_axes[k] is not None
      or isinstance(plan.root_entries[k], StateAxes)
      or values[k] is None
      or len(values[k]) != len(entered[k])
    ):
      continue
    found[k] = None
    values[k] = None  # the input values go on
  return tuple(found) if any(n is not None for n in found) else None


def metadata_changes(before, metadata_in, update_axes, graph) -> tuple:
  """Pytree modes: ``(position, metadata)`` of the scanned input
  Variables whose metadata a step changed (they get it after the loop). A
  broadcast or carried Variable whose metadata changed is the carry
  TypeError (they travel in the scan carry); with ``graph=True`` a carried
  one is left to :func:`check_carry_metadata` (its graph changed)."""
  out = []
  for j, ((v, _, _), md) in enumerate(zip(before, metadata_in)):
    try:
      same = v._var_metadata == md
    except Exception:  # noqa: BLE001 - incomparable metadata differs
      same = False
    if same:
      continue
    ax = update_axes[j]
    if (
      isinstance(ax, int)
      and not isinstance(ax, bool)
      or (isinstance(ax, StateAxes) and len(set(ax.axes)) == 1)
    ):
      out.append((j, dict(v._var_metadata)))
      v.set_metadata(md)  # the step's input metadata goes on
    elif not (graph and ax is Carry):
      raise TypeError(CARRY_STRUCTURE)
  return tuple(out)
