"""``nnx.scan``: ``jax.lax.scan`` over functions taking graph nodes.

The arguments are flattened to leaves, each with its role from
``in_axes``: carried (``nnx.Carry``), scanned over an axis (an int) or
broadcast (None). ``jax.lax.scan`` runs a :class:`ScanFn` (graph mode with
graph updates) or a :class:`SimpleScanFn` (graph nodes as pytrees) whose
carry is ``(PytreeDeque(carry leaves), Broadcasted(broadcast leaves))``
and whose scanned inputs are the scanned leaves moved to axis 0. Each step
rebuilds the arguments, calls the function, checks the carry, and returns
the new carry and, per step, the outputs and the scanned inputs' new
values, which are written back into the arguments afterwards. In pytree
mode the broadcast Variables' updates travel in ``Broadcasted`` to the
next step and back to the arguments; graph mode drops them.
"""

from flax.nnx.transforms.engine.varflow import (
  arg_index_of_positions as _arg_index_of_positions,
)
import collections
import dataclasses
import functools
import typing as tp

import jax

from flax import struct
from flax.core.frozen_dict import FrozenDict
from flax.nnx._common import MISSING
from flax.nnx.transforms.engine import (
  _axis_metadata,
  _fns,
  _prefix,
  common,
  treemode,
)
from flax.nnx.transforms import _scan_checks as _checks
from flax.nnx.transforms.jit import tracecache
from flax.nnx.transforms.engine import varflow
from flax.nnx.transforms.engine._axes import (
  _axes_leaf,
  _broadcast,
  _is_ns,
  _move,
)
from flax.nnx.transforms.engine._axes import _predicates_for, _state_axes_prefix
from flax.nnx.transforms.engine._axes import int_axis, root_in_axes
from flax.nnx.transforms.engine.types import Carry
from flax.nnx.variablelib import Variable, store_raw_value

_is_variable = Variable.__instancecheck__


class Broadcasted(struct.PyTreeNode):
  """Inputs broadcast to every step of a scan (``in_axes`` None), carried
  through the loop unchanged.

  >>> from flax.nnx.transforms.iteration import Broadcasted
  >>> import jax
  >>> jax.tree.leaves(Broadcasted([1, 2]))
  [1, 2]
  """

  data: tp.Any


class PytreeDeque(collections.deque):
  """A ``collections.deque`` that is a pytree (its items are the children;
  ``maxlen`` is not kept through ``jax.tree.map``).

  >>> from flax.nnx.transforms.iteration import PytreeDeque
  >>> import jax
  >>> jax.tree.map(lambda x: x * 2, PytreeDeque([1, 2]))
  PytreeDeque([2, 4])
  """


jax.tree_util.register_pytree_with_keys(
  PytreeDeque,
  lambda d: (
    tuple((jax.tree_util.SequenceKey(i), x) for i, x in enumerate(d)),
    (),
  ),
  lambda _, children: PytreeDeque(children),
  flatten_func=lambda d: (tuple(d), ()),
)


class _Plan:
  """What every step of one scan call shares: the flattened arguments,
  each leaf's role, and (graph mode) the graph structure."""

  __slots__ = (
    'treedef',
    'axes',
    'static',
    'masks',
    'ngroups',
    'carry_roots',
    'node_flags',
    'n_leaves',
    'root_axes',
    'root_entries',
  )


class _ScanStep:
  """The step logic shared by :class:`ScanFn` and :class:`SimpleScanFn`."""

  plan: _Plan
  lifts_graph: tp.ClassVar[bool]
  # graph nodes of the inputs whose structure a step changed (set while
  # tracing; scanned nodes only); pytree modes: the input Variables (by
  # position) whose value structure a step changed
  changed: tp.ClassVar[tp.Any] = None
  # graph mode: the structure of the stacked outputs (input graph nodes
  # returned stay references to them) and the axis of each of its leaves
  y_static: tp.ClassVar[tp.Any] = None
  # graph mode: the carried graph nodes whose structure changed (not their
  # state); their values stay in the carry
  kept: tp.ClassVar[frozenset] = frozenset()
  y_axes: tp.ClassVar[tuple] = ()
  grown_vars: tp.ClassVar[tuple] = ()
  # pytree modes: (position, metadata) of the scanned input Variables whose
  # metadata a step changed
  metadata_out: tp.ClassVar[tuple] = ()
  grown_axes: tp.ClassVar[dict] = {}

  def _step(self, full_carry, scan_in, carry_arg, in_axes, out_axes, metadata):
    plan = self.plan
    carry, broadcasted = full_carry
    leaves = _interleave(plan.axes, carry, scan_in, broadcasted.data)
    pure = plan.treedef.unflatten(leaves)
    g = self.lifts_graph
    if g:
      ig = common.InnerGraph(plan.static, plan.masks, (pure, {}))
      args = ig.args[0]
      entered = _checks.entered_values(pure, plan)
      carry_states = {
        k: _checks.state_signature(ig.roots[k]) for k in plan.carry_roots
      }
    else:
      args = self.fresh(pure)
      # the arguments as they entered (Variables as leaves): a Variable
      # the step adds to them is not an update
      entered, entered_tree = jax.tree_util.tree_flatten(
        args, is_leaf=_is_variable
      )
    if not g:
      # the value structure of each input Variable: one that changes
      # (values recorded by Module.sow under nnx.capture) is stacked over
      # the steps like an output
      before = [
        (v, v._raw_value, jax.tree_util.tree_structure(v._raw_value))
        for v in entered
        if _is_variable(v)
      ]
      metadata_in = [dict(v._var_metadata) for v, _, _ in before]
    if not g and carry_arg is not None:
      carry_vars = self.variables((args[carry_arg],), 'carry')
      carry_in = _checks.carry_metadata(self.pure(args[carry_arg]))
    meta = _axis_metadata.enabled(metadata)
    if meta:
      mapped = self._mapped(args, in_axes)
      _axis_metadata.remove(mapped, metadata)
    out = self.f(*args)
    if meta:
      _axis_metadata.insert(mapped, metadata)
    c_out, y_out = _split_out(out, out_axes)
    common.check_created_here(
      jax.tree_util.tree_leaves(y_out, is_leaf=_is_variable),
      None if g else 'nnx.scan',
    )
    if g:
      if carry_arg is not None:
        _checks.check_carry_refs(args[carry_arg], c_out)
      changed, values = ig.updates()
      graph_changed = changed
      changed = _checks.value_changes(
        changed, values, entered, ig.nodes, plan, lambda k: _update_slots(ig, k)
      )
      # carried nodes whose structure changed but not their state
      kept = self.kept = _checks.kept_carry(changed, carry_states, ig.roots)
      changed = _checks.broadcast_changes(changed, values, entered, plan)
      self.changed = changed
      grown = []
      if changed is not None:
        _checks.structure_changed(changed, plan, kept)
        # scanned nodes that gained or lost attributes: their new values
        # are stacked like outputs; the old slots keep the input values.
        # Under a StateAxes each new leaf takes its filter's axis.
        self.changed = changed
        self.grown_axes = {
          k: [
            plan.root_entries[k].map_prefix(tuple(p), slot)
            for p, slot in zip(*_update_slots(ig, k))
          ]
          for k, node in enumerate(changed)
          if node is not None and plan.root_axes[k] is None and k not in kept
        }
        grown = [
          v
          for k, (v, node) in enumerate(zip(values, changed))
          if node is not None and k not in kept
        ]
        values = [
          vals
          if node is None or k in kept
          else _carried_values(vals, entered[k])
          if plan.root_axes[k] is None
          and (graph_changed is None or graph_changed[k] is None)
          else None
          for k, (vals, node) in enumerate(zip(values, changed))
        ]
      new_leaves = _updated_leaves(pure, values, plan)
      c_plain = iter(
        x
        for x in jax.tree_util.tree_leaves(c_out, is_leaf=common.is_node_leaf)
        if not common.is_node_leaf(x)
      )
      new_carry = [
        leaf if is_node else next(c_plain)
        for leaf, ax, is_node in zip(new_leaves, plan.axes, plan.node_flags)
        if ax is Carry
      ]
    else:
      grown, grown_vars = [], []
      for j, (v, raw, treedef) in enumerate(before):
        if jax.tree_util.tree_structure(v._raw_value) != treedef:
          if int_axis(self.update_axes[j]) is None:
            # carried and broadcast Variables travel in the scan carry
            raise TypeError(_checks.CARRY_STRUCTURE)
          grown.append(v._raw_value)
          grown_vars.append(j)
          store_raw_value(v, raw)  # the step's input structure goes on
      self.grown_vars = tuple(grown_vars)
      self.metadata_out = _checks.metadata_changes(
        before, metadata_in, self.update_axes, self.graph
      )
      if carry_arg is not None:
        _checks.check_carry_metadata(
          carry_in, _checks.carry_metadata(self.pure(c_out))
        )
        _checks.check_variable_identity(
          carry_vars, self.variables((c_out,), 'carry output')
        )
      # stacked outputs are new values: an input Variable among them is
      # the Duplicate error (the carry may return its Variables)
      varflow.check_no_aliases(
        varflow.args_paths((args, {})), y_out, 'nnx.scan'
      )
      new_leaves = jax.tree_util.tree_leaves(
        self.pure(entered_tree.unflatten(entered))
      )
      new_carry = jax.tree_util.tree_leaves(self.pure(c_out))
    scanned_updates = [
      leaf
      for leaf, ax in zip(new_leaves, plan.axes)
      if isinstance(ax, int) and ax is not Carry
    ]
    if not g:
      # pytree mode: broadcast Variables carry their updates to the next
      # step and back to the arguments (graph mode drops them)
      broadcasted = Broadcasted(
        [leaf for leaf, ax in zip(new_leaves, plan.axes) if ax is None]
      )
    if g:
      self.y_axes = _out_leaf_axes(y_out, out_axes)
      self.y_static, y_out = ig.flatten_out(y_out, check_trace=False)
    return (PytreeDeque(new_carry), broadcasted), (
      y_out,
      scanned_updates,
      grown,
    )


_StepFn = tp.Callable[..., tp.Any]
# Where the carry is: a position, 'all' (the whole argument list) or None.
_CarryAt = tp.Union[int, None, tp.Literal['all']]
_OptIndex = tp.Optional[int]


@dataclasses.dataclass(eq=False)
class ScanFn(_ScanStep):
  """The step function ``jax.lax.scan`` runs for :func:`scan` in graph
  mode with graph updates.

  ``input_carry_argnum`` / ``output_carry_argnum`` locate the carry among
  the arguments / outputs (``'all'`` when the whole of ``in_axes`` /
  ``out_axes`` is ``nnx.Carry``, None without a carry).
  """

  f: _StepFn
  input_carry_argnum: _CarryAt
  output_carry_argnum: _CarryAt
  in_axes: tp.Any
  out_axes: tp.Any
  transform_metadata: tp.Mapping[str, tp.Any]
  plan: tp.Any = dataclasses.field(default=None, kw_only=True, repr=False)

  lifts_graph: tp.ClassVar[bool] = True

  def _mapped(self, args, in_axes):
    in_axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    return _axis_metadata.mapped_variables(args, in_axes)

  def __call__(self, carry, scan_in: tuple[tp.Any, ...]):
    carry_arg = self.input_carry_argnum
    if carry_arg == 'all':
      carry_arg = 0
    return self._step(
      carry,
      scan_in,
      carry_arg,
      self.in_axes,
      self.out_axes,
      self.transform_metadata,
    )


@dataclasses.dataclass(eq=False)
class SimpleScanFn(_ScanStep, _fns.SimpleFn):
  """The step function ``jax.lax.scan`` runs for :func:`scan` when graph
  nodes travel as pytrees (``graph=False`` or ``graph_updates=False``).

  ``carry_idx`` / ``carry_out_idx`` locate the carry among the arguments /
  outputs, ``out_is_tuple`` says whether ``out_axes`` is a tuple, and
  ``update_axes`` gives the scanned axis of each argument Variable (the
  axis its new values are written back on).
  """

  f: _StepFn
  graph: bool
  in_axes: tp.Any
  out_axes: tp.Any
  out_is_tuple: bool
  carry_idx: _OptIndex
  carry_out_idx: _OptIndex
  update_axes: tuple[tp.Any, ...]
  plan: tp.Any = dataclasses.field(default=None, kw_only=True, repr=False)
  transform_metadata: tp.Mapping[str, tp.Any] = dataclasses.field(
    default=FrozenDict({}), kw_only=True
  )

  lifts_graph: tp.ClassVar[bool] = False
  name: tp.ClassVar[str] = 'scan'

  def _mapped(self, args, in_axes):
    return [
      (v, ax)
      for v, ax in zip(self.variables(args, 'arguments'), self.update_axes)
      if isinstance(ax, int) and not isinstance(ax, bool)
    ]

  def __call__(self, full_carry, args):
    return self._step(
      full_carry,
      args,
      self.carry_idx,
      self.in_axes,
      self.out_axes,
      self.transform_metadata,
    )


def _split_out(out, out_axes):
  """``(carry output, stacked outputs)`` of one step."""
  if out_axes is Carry:
    return out, None
  if isinstance(out_axes, tuple):
    c_idx = out_axes.index(Carry) if Carry in out_axes else None
    if c_idx is None:
      return None, out
    outs = out if isinstance(out, tuple) else (out,)
    rest = tuple(o for i, o in enumerate(outs) if i != c_idx)
    return outs[c_idx], rest[0] if len(rest) == 1 else rest
  return None, out


def _move_out(y, axis):
  """A stacked output moved from axis 0 to ``axis``: an int, or a prefix
  of ``y`` (its graph nodes' entries node-shaped prefixes in tree mode, or
  ``nnx.prefix`` results without graph updates)."""
  if isinstance(axis, int):
    return jax.tree.map(lambda v: _move(v, 0, axis), y)
  if _prefix.has_tree_states(axis):
    return _prefix.map_variables(y, axis, lambda v, a: _move(v, 0, a))
  return jax.tree.map(
    lambda a, sub: jax.tree.map(lambda v: _move(v, 0, a), sub), axis, y
  )


def _update_slots(ig, k):
  """``(paths, slots)`` of the leaves of root ``k`` of the InnerGraph
  ``ig`` after the function (its updates may have skipped them: no graph
  structure changed, only value structures)."""
  if ig.update_slots is not None:
    return ig.update_slots[k]
  index = ig.indexes[k]
  f = common._Flattener(
    assigned={id(o): i for i, o in index.items()}, start=len(index)
  )
  f.visit(ig.roots[k], ())
  return f.paths, f.leaves


def _out_leaf_axes(y_out, out_axes) -> list:
  """Graph mode: the stacking axis of each leaf of a step's stacked
  outputs ``y_out`` (graph nodes as leaves)."""
  if isinstance(out_axes, tuple):
    axes = [a for a in out_axes if a is not Carry]
  else:
    axes = [out_axes]
  outs = y_out if len(axes) > 1 else (y_out,)
  is_node = common.node_leaf_predicate()
  return [
    a
    for o, a in zip(outs, axes)
    for _ in jax.tree_util.tree_leaves(o, is_leaf=is_node)
  ]


def _carried_values(values, entered) -> list:
  """Graph mode: the values a node under a StateAxes passes to the next
  step when only the value structure of some of its Variables changed
  (values sown under ``nnx.capture``, stacked over the steps): its other
  leaves, carried ones included, take their new values."""
  struct = jax.tree_util.tree_structure
  return [v if struct(v) == struct(b) else b for v, b in zip(values, entered)]


def _updated_leaves(pure, values, plan):
  """The leaves of ``pure`` with each graph node's values replaced by its
  values after the step."""
  rebuilt = []
  for x in jax.tree_util.tree_leaves(pure, is_leaf=_is_ns):
    if _is_ns(x) and values[x.key] is None:
      rebuilt.append(x)  # a node whose structure changed: values as given
    elif _is_ns(x):
      mask = plan.masks[x.key]
      vals = values[x.key]
      groups = (
        (vals,)
        if mask is None
        else common._group(vals, mask, plan.ngroups[x.key])
      )
      rebuilt.append(common.NodeStates(groups, x.key))
    else:
      rebuilt.append(x)
  return jax.tree_util.tree_leaves(rebuilt)


@common.options_first(no_methods=True)
def scan(
  f=MISSING,
  *,
  length=None,
  reverse=False,
  unroll=1,
  _split_transpose=False,
  in_axes=(Carry, 0),
  out_axes=(Carry, 0),
  transform_metadata=FrozenDict({}),
  graph=None,
  graph_updates=None,
):
  """Lifted ``jax.lax.scan``: ``in_axes`` / ``out_axes`` mark the carry
  (``nnx.Carry``), scanned axes (ints) and broadcast inputs (None).

  ``transform_metadata`` with a ``partition_name`` (graph mode with graph
  updates; the pytree modes leave metadata alone) removes the scanned
  axis's name from the ``out_sharding`` of the scanned Variables while the
  function runs and inserts it into those of new stacked outputs.

  >>> import jax.numpy as jnp
  >>> from flax import nnx
  >>> def step(c, x):
  ...   return c + x, c * x
  >>> c, ys = nnx.scan(step)(jnp.zeros(()), jnp.arange(3.0))
  >>> float(c), ys.tolist()
  (3.0, [0.0, 0.0, 2.0])
  """

  # eager calls: one compiled scan per input structure (graph updates
  # sort the inputs' attributes, as nnx.jit; pytree modes keep the order)
  step_fns = {}
  caches = {
    True: tracecache.EagerCache(
      lambda *a, **k: run(True, a, k), 'nnx.scan', False
    ),
    False: tracecache.EagerCache(
      lambda *a, **k: run(False, a, k), 'nnx.scan', True
    ),
  }

  _prefix.check_all(
    'scan', graph, graph_updates, in_axes=in_axes, out_axes=out_axes
  )
  _checks.check_axes(in_axes, out_axes)

  # the modes in force now are the function's (as every decorator
  # transform)
  graph_now, updates_now = common.modes_now(graph, graph_updates)
  cache = caches[graph_now and updates_now]

  @functools.wraps(f)
  def wrapper(*args, **kwargs):
    return cache(*args, **kwargs)

  def run(g, args, kwargs):
    if g:  # graph mode scans positional arguments only
      args = varflow.positional_args(f, args, kwargs)
    elif kwargs:
      raise TypeError(
        'nnx.scan without graph updates takes positional arguments only; '
        f'got keyword arguments {sorted(kwargs)}.'
      )
    if in_axes is Carry and len(args) != 1:
      raise ValueError(
        'When in_axes=Carry, the function must take exactly one argument, '
        f'got {len(args)} arguments: the whole input is the carry. Mark '
        'the carry in a tuple of in_axes to scan other arguments.'
      )
    ia = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    oa = out_axes
    if graph_now:
      _prefix.check_aliasing(args, ia)
    c_arg = ia.index(Carry) if Carry in ia else None
    c_out = (
      'all'
      if oa is Carry
      else oa.index(Carry)
      if isinstance(oa, tuple) and Carry in oa
      else None
    )
    if g:
      ga = common.GraphArgs(
        (args, {}), predicates_for=_predicates_for(ia, args)
      )
      pure_args, _ = ga.pure()
      masks = tuple(None if m is None else tuple(m) for m in ga.masks())
      key = (True, ga.static, masks)
    else:
      treemode.check_tree_mode_args(ia, name='nnx.scan')
      probe = _fns.SimpleFn(f, graph_now)
      probe.name = 'scan'
      ia = tuple(_prefix.to_jax(ia, graph=probe.graph))
      variables = probe.variables(args, 'arguments')
      pure_args = probe.pure(args)
      update_axes = tuple(_prefix.variable_prefixes(ia, tuple(pure_args)))
      key = (False, probe.graph, update_axes)
    flat, treedef = jax.tree_util.tree_flatten(pure_args)
    # one step function per structure: jax.lax.scan reuses the trace of
    # the same function for the same input types (under any trace too)
    key += (treedef,)
    fn = step_fns.get(key)
    if fn is None:
      plan = _Plan()
      plan.treedef = treedef
      if g:
        plan.static = ga.static
        plan.masks = masks
        plan.ngroups = tuple(r.ngroups for r in ga.roots)
        plan.carry_roots = _roots_of_arg(args, ga, c_arg)
        plan.root_entries = root_in_axes(ia, args, ga)
        plan.root_axes = [int_axis(a) for a in plan.root_entries]
        prefix = _state_axes_prefix(ia, pure_args, ga)
        fn = ScanFn(
          f,
          'all' if in_axes is Carry else c_arg,
          c_out,
          in_axes,
          oa,
          transform_metadata,
          plan=plan,
        )
      else:
        prefix = ia
        fn = SimpleScanFn(
          f,
          graph_now,
          ia,
          oa,
          isinstance(oa, tuple),
          c_arg,
          None if c_out == 'all' else c_out,
          update_axes,
          plan=plan,
        )
      plan.axes = _broadcast(
        prefix, pure_args, is_leaf=lambda x: _axes_leaf(x) and not _is_ns(x)
      )
      plan.node_flags = _node_flags(pure_args) if g else None
      if len(step_fns) >= 256:
        step_fns.clear()
      step_fns[key] = fn
    plan = fn.plan
    axes = plan.axes
    carry0 = PytreeDeque(x for x, a in zip(flat, axes) if a is Carry)
    broadcast0 = Broadcasted([x for x, a in zip(flat, axes) if a is None])
    xs = [
      _move(x, a, 0)
      for x, a in zip(flat, axes)
      if isinstance(a, int) and a is not Carry
    ]
    (carry, broadcast), (ys, scanned, grown) = jax.lax.scan(
      fn,
      (carry0, broadcast0),
      xs,
      length=length,
      reverse=reverse,
      unroll=unroll,
    )
    # write back: carry leaves and scanned leaves into the inputs
    final_pure = plan.treedef.unflatten(
      _interleave(
        axes, carry, scanned, broadcast.data, lambda x, a: _move(x, 0, a)
      )
    )
    if g:
      values = {}
      for x in jax.tree_util.tree_leaves(final_pure, is_leaf=_is_ns):
        if _is_ns(x):
          mask = ga.roots[x.key].mask
          values[x.key] = (
            list(x.groups[0])
            if mask is None
            else common._ungroup(x.groups, mask)
          )
      changed = fn.changed
      if changed is not None:
        it = iter(grown)
        for k, node in enumerate(changed):
          if node is not None and k not in fn.kept:
            axis = plan.root_axes[k]
            stacked = next(it)
            if axis is not None:
              values[k] = [_move(v, 0, axis) for v in stacked]
            else:  # a StateAxes: the axis of each leaf's filter
              # carried leaves: their value after the last step
              last = 0 if reverse else -1
              values[k] = [
                jax.tree.map(lambda x: x[-1], v)
                if ax is None
                else jax.tree.map(lambda x: x[last], v)
                if ax is Carry
                else jax.tree.map(lambda x, ax=ax: _move(x, 0, ax), v)
                for v, ax in zip(stacked, fn.grown_axes[k])
              ]
      ga.write_back(
        (changed, [values[k] for k in range(len(ga.roots))]), metadata=True
      )
      if _axis_metadata.enabled(transform_metadata):
        _axis_metadata.insert_into_grown(
          ga, changed, args, ia, transform_metadata
        )
      carry_obj = (
        _restore_nodes(final_pure[c_arg], ga) if c_arg is not None else None
      )
    else:
      final = probe.result(final_pure)
      treemode.store_values(variables, probe.values(final, 'arguments'))
      for j, md in fn.metadata_out:
        variables[j].set_metadata(md)
      for j, value in zip(fn.grown_vars, grown):
        axis = int_axis(fn.update_axes[j])
        store_raw_value(
          variables[j], jax.tree.map(lambda x: _move(x, 0, axis), value)
        )
      carry_obj = (
        treemode.same_variables(args[c_arg], final[c_arg])
        if c_arg is not None
        else None
      )
    # the pytree modes leave the sharding metadata alone (as vmap's)
    meta = g and _axis_metadata.enabled(transform_metadata)
    skip = ()
    if g:
      # the output leaves on their axes, then the objects (an input graph
      # node returned is that object, its Variables' axis names in place)
      if any(fn.y_axes):
        ys = [
          jax.tree.map(lambda v, a=a: _move(v, 0, a), x)
          for x, a in zip(ys, fn.y_axes)
        ]
      ys = common.unflatten_out(fn.y_static, ys, ga)
      if meta:
        skip = {id(v) for _, v in _axis_metadata.variables_of(args)}
    if oa is Carry:
      return carry_obj
    if isinstance(oa, tuple):
      outs = []
      ys_t = ys if isinstance(ys, tuple) and len(oa) > 2 else (ys,)
      it_y = iter(ys_t)
      for o in oa:
        outs.append(
          carry_obj
          if o is Carry
          else _stacked_out(next(it_y), o, meta, g, skip)
        )
      return tuple(outs)
    return _stacked_out(ys, oa, meta, g, skip)

  def _stacked_out(y, axis, meta, moved, skip):
    if not moved:
      y = _move_out(y, axis)
    if meta and axis is not None:
      _axis_metadata.insert_into_outputs(y, axis, transform_metadata, skip)
    return y

  return wrapper


def _roots_of_arg(args, ga, argnum):
  """Indexes (in ``ga.roots``) of the graph nodes found in ``args[argnum]``."""

  if argnum is None:
    return frozenset()
  arg_of = _arg_index_of_positions(args)
  return frozenset(
    k for k, pos in enumerate(ga.positions) if arg_of[pos] == argnum
  )


def _interleave(axes, carry, scanned, broadcast, place=lambda x, a: x):
  """The input leaves of a scan step (or of its result): carry leaves
  from ``carry``, scanned ones from ``scanned`` (through ``place(x,
  axis)``) and broadcast ones (axis None) from ``broadcast``, in input
  order."""
  it_c, it_s, it_b = iter(carry), iter(scanned), iter(broadcast)
  return [
    next(it_c)
    if a is Carry
    else next(it_b)
    if a is None
    else place(next(it_s), a)
    for a in axes
  ]


def _node_flags(pure_args):
  flags = []
  for x in jax.tree_util.tree_leaves(pure_args, is_leaf=_is_ns):
    n = len(jax.tree_util.tree_leaves(x))
    flags.extend([_is_ns(x)] * n)
  return flags


def _restore_nodes(pure, ga):
  def conv(x):
    if _is_ns(x):
      return ga.roots[x.key].obj
    return x

  return jax.tree.map(conv, pure, is_leaf=_is_ns)
