"""vmap, pmap, scan and shard_map over graph nodes."""

import functools

import jax
import jax.numpy as jnp

from flax.core.frozen_dict import FrozenDict as FrozenDict
from flax.nnx._common import MISSING, graph_updates_default, resolve_graph
from flax.nnx._common import Missing as Missing
from flax.nnx.module import Module as Module
from flax.nnx.statelib import State as State
from flax.nnx.transforms import _axis_metadata, common
from flax.nnx.transforms.general import fori_loop as fori_loop
from flax.nnx.transforms.general import graph_with_updates
from flax.nnx.transforms.general import while_loop as while_loop
from flax.nnx.transforms.transforms import resolve_kwargs as resolve_kwargs
from flax.nnx.transforms.types import Carry as Carry
from flax.nnx.transforms.types import StateAxes as StateAxes
from flax.nnx.transforms.types import StateSharding

_is_ns = lambda x: isinstance(x, common.NodeStates)  # noqa: E731


def _axes_leaf(x):
  return x is None or isinstance(x, (int, StateAxes)) or x is Carry


def _broadcast(prefix, tree, is_leaf=_axes_leaf):
  """Per-leaf values of ``prefix`` broadcast over ``tree`` (flat list)."""
  out = []

  def visit(p, t):
    n = len(jax.tree_util.tree_leaves(t))
    out.extend([p] * n)
    return None

  jax.tree.map(visit, prefix, tree, is_leaf=is_leaf)
  return out


def _state_axes_prefix(in_axes, pure_args, ga):
  """Replaces StateAxes in ``in_axes`` by NodeStates-shaped prefixes."""

  def conv(ax, arg):
    if isinstance(ax, StateAxes):

      def node(x):
        if _is_ns(x):
          default = None if isinstance(ax, StateSharding) else None
          axes = list(ax.axes) + [default]
          return common.NodeStates(tuple(axes[: len(x.groups)]), x.key)
        return None

      return jax.tree.map(node, arg, is_leaf=_is_ns)
    return ax

  return tuple(conv(ax, arg) for ax, arg in zip(in_axes, pure_args))


def _predicates_for(in_axes, args):
  from flax.nnx.transforms.autodiff import _arg_index_of_positions

  arg_of = _arg_index_of_positions(args)

  def pf(k, pos):
    ax = in_axes[arg_of[pos]] if arg_of[pos] < len(in_axes) else None
    if isinstance(ax, StateAxes):
      return ax.predicates
    return None

  return pf


def _move(x, src, dst):
  if src == dst:
    return x
  return jnp.moveaxis(x, src, dst)


def _fix_out(leaves, axes, size=None):
  out = []
  for x, ax in zip(leaves, axes):
    if ax is None:
      out.append(x[0] if hasattr(x, 'shape') and x.ndim else x)
    else:
      out.append(_move(x, 0, ax))
  return out


def _vmap_call(
  jax_map, f, in_axes, out_axes, args, map_kwargs, transform_metadata
):
  if isinstance(in_axes, (int, type(None), StateAxes)):
    in_axes = (in_axes,) * len(args)
  in_axes = tuple(in_axes)
  ga = common.GraphArgs(
    (args, {}), predicates_for=_predicates_for(in_axes, args)
  )
  pure_args, _ = ga.pure()
  prefix = _state_axes_prefix(in_axes, pure_args, ga)
  cell = {}
  meta = _axis_metadata.enabled(transform_metadata)

  def pure_f(*pure):
    ig = common.InnerGraph(ga.static, ga.masks(), (pure, {}))
    inner_args = ig.args[0]
    if meta:
      mapped = _axis_metadata.mapped_variables(inner_args, in_axes)
      _axis_metadata.remove(mapped, transform_metadata)
    out = f(*inner_args)
    if meta:
      _axis_metadata.insert(mapped, transform_metadata)
    changed, values = ig.updates()
    if changed is not None:
      raise ValueError(
        'The graph structure of an input changed inside nnx.vmap (an '
        'attribute was added or removed); create attributes before the '
        'call.'
      )
    out_static, out_leaves = ig.flatten_out(out)
    cell['static'] = out_static
    cell['out'] = out
    if not isinstance(out_axes, int):
      cell['out_axes'] = _out_axes_per_leaf(out_axes, out)
      cell['out_masks'] = ig.out_masks(
        [_state_axes_predicates(cell['out_axes'][pos]) for pos in out_static[2]]
      )
    return out_leaves, values

  out_leaves, values = jax_map(
    pure_f, in_axes=prefix, out_axes=0, **map_kwargs
  )(*pure_args)
  out_static = cell['static']
  # input updates: move the mapped axis back to where it came from
  in_leaf_axes = _broadcast(
    prefix, pure_args, is_leaf=lambda x: _axes_leaf(x) and not _is_ns(x)
  )
  flat_pure = jax.tree_util.tree_leaves(pure_args)
  assert len(flat_pure) == len(in_leaf_axes)
  # per root, axis for each slot in slot order
  pos_axes = {}
  idx = 0
  for leaf_pos, x in enumerate(
    jax.tree_util.tree_leaves(pure_args, is_leaf=_is_ns)
  ):
    if _is_ns(x):
      n = sum(len(g) for g in x.groups)
      axes = in_leaf_axes[idx : idx + n]
      mask = ga.roots[x.key].mask
      if mask is None:
        pos_axes[x.key] = axes
      else:
        its, start = [], 0
        for g in x.groups:
          its.append(iter(axes[start : start + len(g)]))
          start += len(g)
        pos_axes[x.key] = [next(its[m]) for m in mask]
      idx += n
    else:
      idx += len(jax.tree_util.tree_leaves(x))
  new_values = [_fix_out(vals, pos_axes[k]) for k, vals in enumerate(values)]
  ga.write_back((None, new_values))
  # outputs
  treedef, nodes, positions = out_static
  leaves = list(out_leaves)
  if isinstance(out_axes, int):
    fixed = jax.tree.map(lambda x: _move(x, 0, out_axes), leaves)
  else:
    node_masks = dict(zip(positions, cell['out_masks']))
    fixed = []
    for i, (x, ax) in enumerate(zip(leaves, cell['out_axes'])):
      if isinstance(ax, StateAxes):
        fixed.append(_state_axes_out(x, ax, node_masks[i]))
      else:
        fixed.append(
          jax.tree.map(
            lambda y, ax=ax: y[0] if ax is None else _move(y, 0, ax), x
          )
        )
  out = common.unflatten_out(out_static, fixed, ga)
  if meta and positions:
    _add_axis_to_outputs(out, out_axes, transform_metadata)
  return out


def _out_axes_per_leaf(out_axes, out):
  """One axis spec per output leaf (graph nodes count as leaves)."""
  per_leaf = []
  jax.tree.map(
    lambda ax, sub: per_leaf.extend(
      [ax] * len(jax.tree_util.tree_leaves(sub, is_leaf=common.is_node_leaf))
    ),
    out_axes,
    out,
    is_leaf=_axes_leaf,
  )
  return per_leaf


def _state_axes_predicates(ax):
  return ax.predicates if isinstance(ax, StateAxes) else None


def _state_axes_out(node_states, axes, mask):
  """Moves the mapped axis of each leaf of an output graph node to the
  axis its StateAxes filter gives (None: not mapped)."""
  (values,) = node_states.groups
  out = []
  for value, group in zip(values, mask):
    if group == len(axes.axes):
      raise ValueError(
        f'A leaf of an output graph node matches no filter of {axes!r}; '
        'add a catch-all filter (...) to the out_axes StateAxes.'
      )
    ax = axes.axes[group]
    out.append(
      jax.tree.map(
        lambda y, ax=ax: y[0] if ax is None else _move(y, 0, ax), value
      )
    )
  return common.NodeStates((out,), node_states.key)


def _add_axis_to_outputs(out, out_axes, metadata):
  """Gives each output Variable with sharding names the mapped axis (named
  by ``metadata['partition_name']``), once per Variable."""
  axis = out_axes if isinstance(out_axes, int) else 0
  _axis_metadata.insert_into_outputs(out, axis, metadata)


def _tree_map_call(jax_map, f, in_axes, out_axes, args, kw, name):
  """vmap / pmap over pytrees (tree mode): Variable values flow back to
  the arguments with their mapped axis restored."""
  common.check_tree_mode_args(in_axes, out_axes, name=f'nnx.{name}')
  variables = common.tree_variables(args)

  def pf(*a):
    return f(*a), [v.raw_value for v in common.tree_variables(a)]

  var_axes = []
  ia = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
  for a, ax in zip(args, ia):
    var_axes.extend([ax] * len(common.tree_variables(a)))
  out, new = jax_map(pf, in_axes=ia, out_axes=(out_axes, 0), **kw)(*args)
  common.store_values(
    variables,
    [
      jax.tree.map(lambda y, ax=ax: y[0] if ax is None else _move(y, 0, ax), v)
      for v, ax in zip(new, var_axes)
    ],
  )
  return out


@common.options_first
def vmap(
  f=MISSING,
  *,
  in_axes=0,
  out_axes=0,
  axis_name=None,
  axis_size=None,
  spmd_axis_name=None,
  transform_metadata=FrozenDict({}),
  graph=None,
  graph_updates=None,
):
  """Reference-aware ``jax.vmap``; :class:`StateAxes` in ``in_axes`` give
  per-substate axes of graph nodes.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> class M(nnx.Module):
  ...   def __init__(self):
  ...     self.w = nnx.Param(jnp.ones(3))
  >>> nnx.vmap(lambda m, x: m.w * x, in_axes=(None, 0))(
  ...   M(), jnp.arange(2.0)).shape
  (2, 3)
  """

  @functools.wraps(f)
  def wrapper(*args):
    kw = dict(
      axis_name=axis_name, axis_size=axis_size, spmd_axis_name=spmd_axis_name
    )
    if not graph_with_updates(graph, graph_updates):
      return _tree_map_call(jax.vmap, f, in_axes, out_axes, args, kw, 'vmap')
    return _vmap_call(
      jax.vmap, f, in_axes, out_axes, args, kw, transform_metadata
    )

  return wrapper


@common.options_first
def pmap(
  f=MISSING,
  *,
  axis_name=None,
  in_axes=0,
  out_axes=0,
  static_broadcasted_argnums=(),
  devices=None,
  backend=None,
  axis_size=None,
  donate_argnums=(),
  transform_metadata=FrozenDict({}),
  graph=None,
  graph_updates=None,
):
  """Reference-aware ``jax.pmap`` (graph nodes as in :func:`vmap`).

  ``static_broadcasted_argnums`` arguments are passed to every device as
  Python values (not traced; ``in_axes`` entries for them are ignored) and
  ``donate_argnums`` donates the buffers of those arguments (for a graph
  node, its Variables).
  """
  static = _argnums(static_broadcasted_argnums)
  donate = _argnums(donate_argnums)
  if static & donate:
    raise ValueError(
      'nnx.pmap: an argument cannot be both static '
      f'(static_broadcasted_argnums) and donated (donate_argnums): '
      f'{sorted(static & donate)}.'
    )

  @functools.wraps(f)
  def wrapper(*args):
    kw = dict(
      axis_name=axis_name,
      devices=devices,
      backend=backend,
      axis_size=axis_size,
      donate_argnums=tuple(sorted(donate)),
    )
    statics = {i: args[i] for i in static if i < len(args)}
    axes = in_axes
    g = f
    if statics:
      # static arguments leave the mapped call; g puts them back
      n = len(args)
      dynamic = [i for i in range(n) if i not in statics]
      if not isinstance(axes, (int, type(None), StateAxes)):
        axes = tuple(tuple(axes)[i] for i in dynamic)
      args = tuple(args[i] for i in dynamic)
      kw['donate_argnums'] = tuple(
        dynamic.index(i) for i in sorted(donate) if i in dynamic
      )

      def g(*a):
        it = iter(a)
        return f(*(statics[i] if i in statics else next(it) for i in range(n)))

    if not graph_with_updates(graph, graph_updates):
      return _tree_map_call(jax.pmap, g, axes, out_axes, args, kw, 'pmap')
    return _vmap_call(jax.pmap, g, axes, out_axes, args, kw, transform_metadata)

  return wrapper


def _argnums(nums) -> frozenset:
  if isinstance(nums, int):
    return frozenset((nums,))
  return frozenset(nums)


@common.options_first
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
  (``nnx.Carry``), scanned axes (ints) and broadcast inputs (None)."""

  @functools.wraps(f)
  def wrapper(*args):
    ia = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    if sum(a is Carry for a in ia) > 1:
      raise ValueError('nnx.scan: only one input can be marked nnx.Carry.')
    oa = out_axes
    if (Carry in ia) != (
      oa is Carry or (isinstance(oa, tuple) and Carry in oa)
    ):
      raise ValueError(
        'nnx.scan: if in_axes contains nnx.Carry, out_axes must contain '
        'nnx.Carry too (and the other way round).'
      )
    g = graph_with_updates(graph, graph_updates)
    c_arg = ia.index(Carry) if Carry in ia else None
    meta = _axis_metadata.enabled(transform_metadata)
    if g:
      ga = common.GraphArgs(
        (args, {}), predicates_for=_predicates_for(ia, args)
      )
      carry_roots = _roots_of_arg(args, ga, c_arg)
      pure_args, _ = ga.pure()
      prefix = _state_axes_prefix(ia, pure_args, ga)
    else:
      common.check_tree_mode_args(ia, name='nnx.scan')
      variables = common.tree_variables(args)
      pure_args, prefix = args, ia
    flat, tdef = jax.tree_util.tree_flatten(pure_args)
    axes = _broadcast(
      prefix, pure_args, is_leaf=lambda x: _axes_leaf(x) and not _is_ns(x)
    )
    carry0 = [x for x, a in zip(flat, axes) if a is Carry]
    xs = [
      _move(x, a, 0)
      for x, a in zip(flat, axes)
      if isinstance(a, int) and a is not Carry
    ]
    cell = {}

    def body(carry, x):
      pure = tdef.unflatten(_interleave(flat, axes, carry, x))
      if g:
        ig = common.InnerGraph(ga.static, ga.masks(), (pure, {}))
        a = ig.args[0]
      else:
        a = pure
      if meta:
        mapped = _axis_metadata.mapped_variables(a, ia)
        _axis_metadata.remove(mapped, transform_metadata)
      out = f(*a)
      if meta:
        _axis_metadata.insert(mapped, transform_metadata)
      if oa is Carry:
        c_out, y_out = out, None
      elif isinstance(oa, tuple):
        c_idx = oa.index(Carry)
        outs = out if isinstance(out, tuple) else (out,)
        c_out = outs[c_idx]
        rest = tuple(o for i, o in enumerate(outs) if i != c_idx)
        y_out = rest[0] if len(rest) == 1 else rest
      else:
        c_out, y_out = None, out
      # input leaves after the call
      if g:
        if c_arg is not None:
          _check_carry_refs(a[c_arg], c_out)
        changed, values = ig.updates()
        if changed is not None:
          _structure_changed(changed, carry_roots)
        new_pure_leaves = list(flat)
        new_tree = list(jax.tree_util.tree_leaves(pure, is_leaf=_is_ns))
        rebuilt = []
        for x_ in new_tree:
          if _is_ns(x_):
            vals = values[x_.key]
            mask = ga.roots[x_.key].mask
            groups = (
              (vals,)
              if mask is None
              else common._group(vals, mask, ga.roots[x_.key].ngroups)
            )
            rebuilt.append(common.NodeStates(groups, x_.key))
          else:
            rebuilt.append(x_)
        new_pure_leaves = jax.tree_util.tree_leaves(rebuilt)
      else:
        new_pure_leaves = jax.tree_util.tree_leaves(a)
      # carry: graph-node leaves from the updates, other leaves from c_out
      c_plain = []
      if c_out is not None:
        c_plain = (
          [
            x_
            for x_ in jax.tree_util.tree_leaves(
              c_out, is_leaf=common.is_node_leaf
            )
            if not common.is_node_leaf(x_)
          ]
          if g
          else jax.tree_util.tree_leaves(c_out)
        )
      it_plain = iter(c_plain)
      new_carry = []
      node_leaf_flags = _node_flags(pure_args) if g else [False] * len(flat)
      for leaf, a_, is_node in zip(new_pure_leaves, axes, node_leaf_flags):
        if a_ is Carry:
          if is_node:
            new_carry.append(leaf)
          else:
            new_carry.append(next(it_plain) if g else leaf)
      if not g:
        new_carry = (
          jax.tree_util.tree_leaves(c_out) if c_out is not None else new_carry
        )
      scanned_updates = [
        leaf
        for leaf, a_ in zip(new_pure_leaves, axes)
        if isinstance(a_, int) and a_ is not Carry
      ]
      cell['y_tree'] = y_out
      return new_carry, (y_out, scanned_updates)

    carry, (ys, scanned) = jax.lax.scan(
      body, carry0, xs, length=length, reverse=reverse, unroll=unroll
    )
    # write back: carry leaves and scanned leaves into the inputs
    final_pure = tdef.unflatten(
      _interleave(flat, axes, carry, scanned, lambda x, a: _move(x, 0, a))
    )
    if g:
      leaves = jax.tree_util.tree_leaves(final_pure, is_leaf=_is_ns)
      values = {}
      for x_ in leaves:
        if _is_ns(x_):
          mask = ga.roots[x_.key].mask
          values[x_.key] = (
            list(x_.groups[0])
            if mask is None
            else common._ungroup(x_.groups, mask)
          )
      ga.write_back((None, [values[k] for k in range(len(ga.roots))]))
      a_final = final_pure
      carry_obj = None
      if Carry in ia:
        c_arg = ia.index(Carry)
        carry_obj = _restore_nodes(a_final[c_arg], ga)
    else:
      a_final = final_pure
      common.store_values(
        variables, [v.raw_value for v in common.tree_variables(a_final)]
      )
      carry_obj = a_final[ia.index(Carry)] if Carry in ia else None
    if oa is Carry:
      return carry_obj
    if isinstance(oa, tuple):
      outs = []
      ys_t = ys if isinstance(ys, tuple) and len(oa) > 2 else (ys,)
      it_y = iter(ys_t)
      for o in oa:
        outs.append(
          carry_obj if o is Carry else _stacked_out(next(it_y), o, meta)
        )
      return tuple(outs)
    return _stacked_out(ys, oa, meta)

  def _stacked_out(y, axis, meta):
    y = jax.tree.map(lambda v: _move(v, 0, axis), y)
    if meta and axis is not None:
      _axis_metadata.insert_into_outputs(y, axis, transform_metadata)
    return y

  return wrapper


def _roots_of_arg(args, ga, argnum):
  """Indexes (in ``ga.roots``) of the graph nodes found in ``args[argnum]``."""
  from flax.nnx.transforms.autodiff import _arg_index_of_positions

  if argnum is None:
    return frozenset()
  arg_of = _arg_index_of_positions(args)
  return frozenset(
    k for k, pos in enumerate(ga.positions) if arg_of[pos] == argnum
  )


def _check_carry_refs(c_in, c_out):
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
      or jax.tree_util.treedef_is_leaf(jax.tree_util.tree_structure(y)) is False
    ):
      raise ValueError(
        'nnx.scan: Carry references must be the same between iterations: '
        f'the carry input at carry{jax.tree_util.keystr(path)} is '
        f'{type(x).__name__} (id={id(x)}) but the carry output there is '
        f'{type(y).__name__} (id={id(y)}). Return the carried graph nodes '
        'themselves, in the same places.'
      )


def _structure_changed(changed, carry_roots):
  """Raises for a graph node of the inputs whose structure changed inside
  a scan step (TypeError for the carry, as ``jax.lax.scan`` does)."""
  for k, node in enumerate(changed):
    if node is not None and k in carry_roots:
      raise TypeError(
        'nnx.scan: scan body function carry input and carry output must '
        'have the same pytree structure, but a graph node of the carry '
        'gained or lost an attribute; create attributes before the call.'
      )
  raise ValueError(
    'The graph structure of an input changed inside nnx.scan; '
    'create attributes before the call.'
  )


def _interleave(flat, axes, carry, scanned, place=lambda x, a: x):
  """The input leaves of a scan step (or of its result): carry leaves
  from ``carry``, scanned ones from ``scanned`` (through ``place(x,
  axis)``), broadcast ones (axis None) from ``flat``, in input order."""
  it_c, it_s = iter(carry), iter(scanned)
  return [
    next(it_c) if a is Carry else leaf if a is None else place(next(it_s), a)
    for leaf, a in zip(flat, axes)
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


def _check_shard_map_mode(graph, graph_updates):
  """``nnx.shard_map`` lifts graph nodes in graph mode with graph updates
  only; the other modes raise instead of running as that one."""
  updates = graph_updates_default() if graph_updates is None else graph_updates
  if not resolve_graph(graph) or not updates:
    raise ValueError(
      'nnx.shard_map supports graph mode with graph updates only (got '
      f'graph={graph!r}, graph_updates={graph_updates!r} with the current '
      'defaults). Use jax.shard_map on nnx.split/nnx.merge for tree mode, or '
      'leave graph and graph_updates at their defaults.'
    )


@common.options_first
def shard_map(
  f=MISSING,
  *,
  mesh,
  in_specs,
  out_specs,
  axis_names=frozenset(),
  check_vma=True,
  graph=None,
  graph_updates=None,
):
  """Lifted ``jax.shard_map``; :class:`StateSharding` in ``in_specs`` gives
  per-substate PartitionSpecs of graph nodes."""
  from jax.sharding import PartitionSpec

  @functools.wraps(f)
  def wrapper(*args):
    _check_shard_map_mode(graph, graph_updates)
    specs = in_specs if isinstance(in_specs, tuple) else (in_specs,)
    is_spec = lambda x: isinstance(x, (PartitionSpec, StateAxes)) or x is None  # noqa
    ga = common.GraphArgs(
      (args, {}),
      predicates_for=_predicates_for(specs, args)
      if any(isinstance(s, StateSharding) for s in specs)
      else None,
    )
    pure_args, _ = ga.pure()

    def conv(spec, arg):
      if isinstance(spec, StateSharding):

        def node(x):
          if _is_ns(x):
            sp = list(spec.axes) + [PartitionSpec()]
            return common.NodeStates(tuple(sp[: len(x.groups)]), x.key)
          return PartitionSpec()

        return jax.tree.map(node, arg, is_leaf=_is_ns)
      return spec

    prefix = tuple(conv(s, a) for s, a in zip(specs, pure_args))
    cell = {}

    def pure_f(*pure):
      ig = common.InnerGraph(ga.static, ga.masks(), (pure, {}))
      out = f(*ig.args[0])
      _, values = ig.updates()
      cell['out'] = True
      return out, values

    # the input updates come back with the specs they went in with
    leaf_specs = _broadcast(
      prefix, pure_args, is_leaf=lambda x: is_spec(x) and not _is_ns(x)
    )
    values_specs = []
    idx = 0
    for x in jax.tree_util.tree_leaves(pure_args, is_leaf=_is_ns):
      n = len(jax.tree_util.tree_leaves(x))
      if _is_ns(x):
        sp = leaf_specs[idx : idx + n]
        mask = ga.roots[x.key].mask
        if mask is not None:
          its, start = [], 0
          for grp in x.groups:
            its.append(iter(sp[start : start + len(grp)]))
            start += len(grp)
          sp = [next(its[m]) for m in mask]
        values_specs.append(list(sp))
      idx += n
    out, values = jax.shard_map(
      pure_f,
      mesh=mesh,
      in_specs=prefix,
      out_specs=(out_specs, values_specs),
      axis_names=set(axis_names),
      check_vma=check_vma,
    )(*pure_args)
    ga.write_back((None, values))
    return out

  return wrapper


def _axis_per_arg(axes, n):
  if axes is None or isinstance(axes, int):
    return (axes,) * n
  axes = tuple(axes)
  if len(axes) != n:
    raise ValueError(
      f'transform_metadata got {len(axes)} axes for {n} arguments; give '
      'one axis (int or None) per positional argument, or a single one.'
    )
  return axes


def _each_variable(tree, graph):
  """The Variables of ``tree``: through graph nodes (graph mode) or as
  pytree leaves (tree mode)."""
  from flax.nnx import graphlib
  from flax.nnx.variablelib import Variable

  if not resolve_graph(graph):
    for leaf in common.tree_variables(tree):
      yield leaf
    return
  seen = set()
  for leaf in jax.tree_util.tree_leaves(tree, is_leaf=common.is_node_leaf):
    items = (
      graphlib.iter_graph(leaf)
      if common.is_node_leaf(leaf) and not isinstance(leaf, Variable)
      else [((), leaf)]
    )
    for _, v in items:
      if isinstance(v, Variable) and id(v) not in seen:
        seen.add(id(v))
        yield v


@common.options_first
def transform_metadata(
  f=MISSING, *, in_axes=0, out_axes=0, partition, graph=None
):
  """Runs ``f`` as if inside a mapped transform, for Variable metadata only.

  Before the call the axis ``in_axes`` (per positional argument, or one
  for all; None leaves an argument alone) named ``partition`` is removed
  from the sharding metadata of the Variables of the arguments; after it,
  the axis ``out_axes`` is inserted back into the Variables of the
  arguments and of the outputs. Values are not touched.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> class M(nnx.Module):
  ...   def __init__(self):
  ...     self.w = nnx.Param(jnp.ones((3, 2)), out_sharding=('layers', None))
  >>> @nnx.transform_metadata(partition='layers')
  ... def names(m):
  ...   return m.w.get_metadata()['out_sharding']
  >>> with nnx.use_eager_sharding(False):
  ...   m = M()
  >>> names(m)
  (None,)
  """

  @functools.wraps(f)
  def wrapper(*args, **kwargs):
    arg_axes = _axis_per_arg(in_axes, len(args))
    touched = []
    for arg, axis in zip(args, arg_axes):
      if axis is None:
        continue
      for v in _each_variable(arg, graph):
        v.remove_axis(axis, partition)
        touched.append(v)
    out = f(*args, **kwargs)
    out_axis = out_axes if isinstance(out_axes, int) else 0
    done = set()
    for v in touched:
      v.add_axis(out_axis, partition)
      done.add(id(v))
    for v in _each_variable(out, graph):
      if id(v) not in done:
        v.add_axis(out_axis, partition)
    return out

  return wrapper
