"""vmap, pmap, scan and shard_map over graph nodes."""

from flax.nnx import graphlib
import dataclasses
import functools
import typing as tp

import jax

from flax.core.frozen_dict import FrozenDict as FrozenDict
from flax.nnx._common import MISSING, resolve_graph
from flax.nnx._common import Missing as Missing
from flax.nnx.module import Module as Module
from flax.nnx.statelib import State as State
from flax.nnx.variablelib import Variable
from flax.nnx.transforms.engine import (
  _axis_metadata,
  _fns,
  _prefix,
  common,
  treemode,
)
from flax.nnx.transforms.engine import varflow
from flax.nnx.extract import labeled as labeled
from flax.nnx.transforms.general import ForiLoopBodyFn as ForiLoopBodyFn
from flax.nnx.transforms.general import (
  SimpleForiLoopBodyFn as SimpleForiLoopBodyFn,
)
from flax.nnx.transforms.general import (
  SimpleWhileLoopBodyFn as SimpleWhileLoopBodyFn,
)
from flax.nnx.transforms.general import (
  SimpleWhileLoopCondFn as SimpleWhileLoopCondFn,
)
from flax.nnx.transforms.general import WhileLoopBodyFn as WhileLoopBodyFn
from flax.nnx.transforms.general import WhileLoopCondFn as WhileLoopCondFn
from flax.nnx.transforms.general import fori_loop as fori_loop
from flax.nnx.transforms.general import graph_with_updates
from flax.nnx.transforms.general import while_loop as while_loop
from flax.nnx.transforms.transforms import resolve_kwargs as resolve_kwargs
from flax.nnx.transforms.engine.types import Carry as Carry
from flax.nnx.transforms.engine.types import StateAxes as StateAxes
from flax.nnx.transforms.scanning import Broadcasted as Broadcasted
from flax.nnx.transforms.scanning import PytreeDeque as PytreeDeque
from flax.nnx.transforms.scanning import ScanFn as ScanFn
from flax.nnx.transforms.scanning import SimpleScanFn as SimpleScanFn
from flax.nnx.transforms.scanning import scan as scan
from flax.nnx.transforms.engine._axes import _axes_leaf, _is_ns, _move
from flax.nnx.transforms.engine._axes import _predicates_for, _state_axes_prefix
from flax.nnx.transforms.engine._axes import int_axis, root_in_axes


def _fix_out(leaves, axes):
  """Moves the mapped axis of each leaf to its place (unmapped leaves left
  ``jax.vmap`` with ``out_axes=None``, see :func:`_split_unmapped`)."""
  return [x if ax is None else _move(x, 0, ax) for x, ax in zip(leaves, axes)]


def _split_unmapped(elements, flags):
  """``(mapped, unmapped)``: the elements leave the mapped function with
  ``out_axes`` 0 and None, so that JAX rejects an unmapped one that came
  out batched ("got axis spec None but output was batched")."""
  mapped = [e for e, f in zip(elements, flags) if f]
  unmapped = [e for e, f in zip(elements, flags) if not f]
  return mapped, unmapped


@dataclasses.dataclass(frozen=True)
class _Label:
  """A pytree key printed as the text it holds (the place of an element
  in JAX's out_axes errors)."""

  text: str

  def __str__(self):
    return self.text


class _Unmapped:
  """The unmapped elements leaving the function of a graph-mode
  :func:`vmap` / :func:`pmap`, keyed (for JAX's "got axis spec None but
  output was batched" error) by where each comes from: ``[i]`` for the
  output leaf ``i``, ``[arg].states[group]['path'].value`` for a Variable
  of an argument."""

  __slots__ = ('elements', 'labels')

  def __init__(self, elements, labels):
    self.elements = list(elements)
    self.labels = labels


jax.tree_util.register_pytree_with_keys(
  _Unmapped,
  lambda u: (
    [(_Label(t), e) for t, e in zip(u.labels, u.elements)],
    u.labels,
  ),
  lambda labels, elements: _Unmapped(elements, labels),
  lambda u: (u.elements, u.labels),
)


def _join_unmapped(mapped, unmapped, flags):
  it_mapped, it_unmapped = iter(mapped), iter(unmapped)
  return [next(it_mapped) if f else next(it_unmapped) for f in flags]


@dataclasses.dataclass(eq=False)
class VmapFn(_fns.InnerFn):
  """The function ``jax.vmap`` maps for :func:`vmap` in graph mode with
  graph updates: rebuilds the graph nodes of one slice of the arguments
  (``in_axes``: one entry per argument), calls ``f`` (with the mapped axis
  removed from the sharding names of the mapped Variables when
  ``transform_metadata`` names a partition), and returns the output leaves
  and the new values of the inputs as two lists, mapped and unmapped (for
  ``out_axes=(0, None)``; :meth:`joined` puts them back). Per output leaf
  axes (for tuple, dict or StateAxes ``out_axes``) are kept on the
  instance."""

  transform_metadata: tp.Mapping[str, tp.Any]
  in_axes: tp.Any
  out_axes: tp.Any
  out_leaf_axes: tp.Any = dataclasses.field(
    default=None, init=False, repr=False
  )
  out_masks: tp.Any = dataclasses.field(default=None, init=False, repr=False)
  changed: tp.Any = dataclasses.field(default=None, init=False, repr=False)
  # Per root, the mapped axis of each input slot (set before the call), and
  # how the returned elements go back into (output leaves, values).
  value_axes: tp.Any = dataclasses.field(default=None, init=False, repr=False)
  route: tp.Any = dataclasses.field(default=None, init=False, repr=False)
  # the in_axes entry of each root (set before the call); per root whose
  # structure changed under a StateAxes, the axis of each of its values
  root_axes: tp.Any = dataclasses.field(default=None, init=False, repr=False)
  changed_axes: tp.Any = dataclasses.field(default=None, init=False, repr=False)

  name: tp.ClassVar[str] = 'vmap'

  def __call__(self, *pure_args: tuple[tp.Any, ...]):
    ig = self.rebuild(pure_args)
    inner_args = ig.args[0]
    metadata = self.transform_metadata
    meta = _axis_metadata.enabled(metadata)
    if meta:
      mapped = _axis_metadata.mapped_variables(inner_args, self.in_axes)
      _axis_metadata.remove(mapped, metadata)
    out = self.f(*inner_args)
    if meta:
      _axis_metadata.insert(mapped, metadata)
    # an input object returned needs its input axis as output axis
    _prefix.check_aliasing((inner_args, out), (self.in_axes, self.out_axes))
    self.changed, values = ig.updates()
    self.changed_axes = _changed_axes(self.changed, self.root_axes, ig)
    out_static, out_leaves = ig.flatten_out(out)
    self.out_static = out_static
    if not isinstance(self.out_axes, int):
      self.out_leaf_axes = _out_axes_per_leaf(self.out_axes, out)
      self.out_masks = ig.out_masks(
        [
          _state_axes_predicates(self.out_leaf_axes[pos])
          for pos in out_static[2]
        ]
      )
    elements, flags, rebuild, origins = _routing(
      self, out_leaves, values, self.value_axes
    )
    self.route = (flags, rebuild)
    mapped, unmapped = _split_unmapped(elements, flags)
    unmapped_origins = [o for o, f in zip(origins, flags) if not f]
    paths = {
      k: [tuple(p) for p in ig.update_slots[k][0]]
      for k in range(len(values))
      if self.changed is not None
      and self.changed[k] is not None
      and ig.update_slots
    }
    labels = tuple(self._label(o, paths) for o in unmapped_origins)
    return _Unmapped(unmapped, labels), mapped

  def _label(self, origin, changed_paths) -> str:
    """Where an unmapped element comes from (see :class:`_Unmapped`)."""
    if origin[0] == 'out':
      return f'[{origin[1]}]'
    _, k, j = origin
    ga = self.graph_args
    root = ga.roots[k]
    if k in changed_paths:
      path, group, is_var = changed_paths[k][j], 0, True
    else:
      path = tuple(root.paths[j])
      group = 0 if root.mask is None else root.mask[j]
      is_var = isinstance(root.slots[j], Variable)
    arg = _arg_of_root(ga, k)
    keys = ''.join(f'[{p!r}]' for p in path)
    return f'[{arg}].states[{group}]{keys}' + ('.value' if is_var else '')

  def joined(self, unmapped, mapped):
    """``(output leaves, values)`` from what the mapped call returned."""
    flags, rebuild = self.route
    return rebuild(_join_unmapped(mapped, unmapped.elements, flags))


@dataclasses.dataclass(eq=False)
class PmapFn(VmapFn):
  """The function ``jax.pmap`` maps for :func:`pmap` in graph mode with
  graph updates (as :class:`VmapFn`)."""

  name: tp.ClassVar[str] = 'pmap'


@dataclasses.dataclass(eq=False)
class SimpleVmapFn(_fns.SimpleFn):
  """The function ``jax.vmap`` maps for :func:`vmap` when graph nodes
  travel as pytrees: returns ``f``'s output and the values of the argument
  Variables (mapped ones, then unmapped ones); ``update_axes`` gives each
  Variable's mapped axis (where its new value goes back; None: not
  mapped)."""

  in_axes: tp.Any
  out_axes: tp.Any
  update_axes: tuple[tp.Any, ...]

  name: tp.ClassVar[str] = 'vmap'

  def __call__(self, *args, **kwargs):
    (args, kwargs), entered = self.enter((args, kwargs))
    out = self.f(*args, **kwargs)
    values = entered.values()
    # Unmapped Variables leave with out_axes None (see _split_unmapped).
    flags = [ax is not None for ax in self.update_axes]
    return (self.outputs(entered, out), *_split_unmapped(values, flags))

  def write_back(self, variables, mapped, unmapped) -> None:
    flags = [ax is not None for ax in self.update_axes]
    new = _join_unmapped(mapped, unmapped, flags)
    treemode.store_values(
      variables,
      [
        v if ax is None else jax.tree.map(lambda y, ax=ax: _move(y, 0, ax), v)
        for v, ax in zip(new, self.update_axes)
      ],
    )


@dataclasses.dataclass(eq=False)
class SimplePmapFn(SimpleVmapFn):
  """The function ``jax.pmap`` maps for :func:`pmap` when graph nodes
  travel as pytrees (as :class:`SimpleVmapFn`)."""

  name: tp.ClassVar[str] = 'pmap'


def _vmap_call(
  jax_map, fn_cls, f, in_axes, out_axes, args, map_kwargs, transform_metadata
):
  if isinstance(in_axes, (int, type(None), StateAxes)):
    in_axes = (in_axes,) * len(args)
  elif type(in_axes) is not tuple or len(in_axes) != len(args):
    _prefix_error(in_axes, args)
  in_axes = tuple(in_axes)
  _prefix.check_aliasing(args, in_axes)
  state_axes = any(isinstance(ax, StateAxes) for ax in in_axes)
  ga = common.GraphArgs(
    (args, {}),
    predicates_for=_predicates_for(in_axes, args) if state_axes else None,
  )
  pure_args, _ = ga.pure()
  prefix, pos_axes, root_axes = _layout(in_axes, args, pure_args, ga)
  meta = _axis_metadata.enabled(transform_metadata)
  fn = fn_cls(f, transform_metadata, in_axes, out_axes, graph_args=ga)
  fn.value_axes = pos_axes
  fn.root_axes = root_axes
  unmapped, mapped = jax_map(
    fn, in_axes=prefix, out_axes=(None, 0), **map_kwargs
  )(*pure_args)
  out_leaves, values = fn.joined(unmapped, mapped)
  out_static = fn.out_static
  changed = fn.changed
  new_values = [
    _fix_out(vals, pos_axes[k])
    if changed is None or changed[k] is None
    else _fix_out(vals, fn.changed_axes[k])
    if fn.changed_axes.get(k) is not None
    else _changed_node_values(vals, fn.root_axes[k], fn.name)
    for k, vals in enumerate(values)
  ]
  ga.write_back((changed, new_values), metadata=True)
  if meta:
    _axis_metadata.insert_into_grown(
      ga, changed, args, in_axes, transform_metadata
    )
  # outputs
  treedef, nodes, positions = out_static
  leaves = list(out_leaves)
  if isinstance(out_axes, int):
    fixed = jax.tree.map(lambda x: _move(x, 0, out_axes), leaves)
  else:
    node_masks = dict(zip(positions, fn.out_masks))
    fixed = []
    for i, (x, ax) in enumerate(zip(leaves, fn.out_leaf_axes)):
      if isinstance(ax, StateAxes):
        fixed.append(_state_axes_out(x, ax, node_masks[i]))
      else:
        fixed.append(
          x if ax is None else jax.tree.map(lambda y, ax=ax: _move(y, 0, ax), x)
        )
  out = common.unflatten_out(out_static, fixed, ga)
  if meta and positions:
    # Variables of the arguments returned have their axis back already.
    inputs = {id(v) for _, v in _axis_metadata.variables_of(args)}
    _add_axis_to_outputs(out, out_axes, transform_metadata, inputs)
  return out


def _prefix_error(in_axes, args):
  """JAX's pytree structure error for ``in_axes`` that are not a prefix of
  the positional arguments (another length or container type)."""
  jax.tree.map(
    lambda *_: None,
    in_axes,
    args,
    is_leaf=lambda x: x is None or isinstance(x, (int, StateAxes)),
  )
  raise ValueError(
    f'pytree structure error: in_axes {in_axes!r} is not a tuple with one '
    f'entry per positional argument ({len(args)} given).'
  )


# (in_axes, argument structure) -> (prefix, axes per root slot, axis per
# root): the part of a mapped call that depends on its structure only
_LAYOUTS: dict = {}


def _layout(in_axes, args, pure_args, ga):
  """The JAX ``in_axes`` prefix of ``pure_args``, the mapped axis of each
  slot of each root and the ``in_axes`` entry of each root, cached per
  ``in_axes`` and argument structure when the roots cross by their cached
  flat views, unfiltered (their graphdefs then identify the structure
  cheaply)."""
  key = None
  if ga.fast and all(r.view is not None and r.mask is None for r in ga.roots):
    try:
      key = (in_axes, ga.treedef, tuple(r.view.graphdef for r in ga.roots))
      hit = _LAYOUTS.get(key)
    except TypeError:  # unhashable axes
      key = hit = None
    if hit is not None:
      return hit
  prefix = _state_axes_prefix(in_axes, pure_args, ga)
  layout = (
    prefix,
    _value_axes(prefix, pure_args, ga),
    root_in_axes(in_axes, args, ga),
  )
  if key is not None:
    if len(_LAYOUTS) >= 256:
      _LAYOUTS.clear()
    _LAYOUTS[key] = layout
  return layout


def _value_axes(prefix, pure_args, ga):
  """Per root, the mapped axis of each of its slots (slot order): the
  axis of the slot's filter group (a slot's value may hold any number of
  leaves, none included)."""
  pos_axes = {}

  def visit(p, sub):
    for x in jax.tree_util.tree_leaves(sub, is_leaf=_is_ns):
      if not _is_ns(x):
        continue
      group_axes = p.groups if _is_ns(p) else (p,) * len(x.groups)
      mask = ga.roots[x.key].mask
      if mask is None:
        pos_axes[x.key] = [ax for g, ax in zip(x.groups, group_axes) for _ in g]
      else:
        pos_axes[x.key] = [group_axes[m] for m in mask]

  jax.tree.map(
    visit, prefix, pure_args, is_leaf=lambda x: _axes_leaf(x) or _is_ns(x)
  )
  return pos_axes


def _arg_of_root(ga, k) -> int:
  """The index of the positional argument the root ``k`` of ``ga`` is in."""
  args, _ = ga.treedef.unflatten(range(len(ga.leaves)))
  pos = ga.positions[k]
  for i, a in enumerate(args):
    if pos in jax.tree_util.tree_leaves(a):
      return i
  return k


def _routing(fn, out_leaves, values, pos_axes):
  """Inside the mapped function: the output leaves and input values as one
  list of elements, whether each is mapped (False: its axis spec is None),
  how to put the list back into ``(out_leaves, values)``, and where each
  element comes from (``('out', i)`` or ``('value', root, slot)``)."""
  elements, flags, layout, origins = [], [], [], []
  leaf_axes = fn.out_leaf_axes
  if leaf_axes is None:  # an int out_axes: every output leaf is mapped
    leaf_axes = [0] * len(out_leaves)
  else:
    node_masks = dict(zip(fn.out_static[2], fn.out_masks))
  for i, (x, ax) in enumerate(zip(out_leaves, leaf_axes)):
    if isinstance(ax, StateAxes):
      (group_values,) = x.groups
      mask = node_masks[i]
      layout.append(('node', x.key, len(group_values)))
      elements.extend(group_values)
      origins.extend([('out', i)] * len(group_values))
      flags.extend(g == len(ax.axes) or ax.axes[g] is not None for g in mask)
    else:
      layout.append(('leaf',))
      elements.append(x)
      origins.append(('out', i))
      flags.append(ax is not None)
  for k, vals in enumerate(values):
    layout.append(('values', len(vals)))
    elements.extend(vals)
    origins.extend(('value', k, j) for j in range(len(vals)))
    if fn.changed is None or fn.changed[k] is None:
      flags.extend(ax is not None for ax in pos_axes[k])
    elif fn.changed_axes and fn.changed_axes.get(k) is not None:
      flags.extend(ax is not None for ax in fn.changed_axes[k])
    elif fn.root_axes is not None and fn.root_axes[k] is None:
      # a broadcast input whose structure changed: its values leave
      # unmapped (new leaves included)
      flags.extend([False] * len(vals))
    else:
      flags.extend([True] * len(vals))

  def rebuild(flat):
    it = iter(flat)
    out, vals = [], []
    for entry in layout:
      if entry[0] == 'node':
        out.append(
          common.NodeStates(([next(it) for _ in range(entry[2])],), entry[1])
        )
      elif entry[0] == 'leaf':
        out.append(next(it))
      else:
        vals.append([next(it) for _ in range(entry[1])])
    return out, vals

  return elements, flags, rebuild, origins


def _changed_axes(changed, root_axes, ig) -> dict:
  """Per root whose structure changed inside the function and that is
  mapped with a StateAxes (not one int axis for all), the axis of each of
  its leaves after the function: the one its filter gives (None: not
  mapped), so new attributes are batched or broadcast by their filter."""
  out = {}
  if changed is None or root_axes is None:
    return out
  for k, node in enumerate(changed):
    axis = root_axes[k]
    if node is None or not isinstance(axis, StateAxes):
      continue
    if int_axis(axis) is not None:
      continue
    paths, slots = ig.update_slots[k]
    out[k] = [axis.map_prefix(tuple(p), s) for p, s in zip(paths, slots)]
  return out


def _changed_node_values(values, axis, name):
  """Values of a mapped graph node that gained or lost attributes inside
  the function: every leaf, new ones included, is mapped over ``axis``
  (a StateAxes giving every filter the same int axis counts as that); a
  broadcast node (``axis`` None) keeps its values as they are."""
  if axis is None:
    return values
  mapped = int_axis(axis)
  if mapped is None:
    raise ValueError(
      f'The graph structure of an input changed inside nnx.{name} (an '
      f'attribute was added or removed) but the input is mapped with '
      f'in_axes {axis!r}: only graph nodes mapped over an int axis can '
      'change structure (their new leaves are batched on that axis). '
      'Create the attributes before the call.'
    )
  return [jax.tree.map(lambda v: _move(v, 0, mapped), x) for x in values]


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
      value
      if ax is None
      else jax.tree.map(lambda y, ax=ax: _move(y, 0, ax), value)
    )
  return common.NodeStates((out,), node_states.key)


def _add_axis_to_outputs(out, out_axes, metadata, skip=()):
  """Gives each output Variable with sharding names the mapped axis (named
  by ``metadata['partition_name']``), once per Variable, except those whose
  id is in ``skip``."""
  axis = out_axes if isinstance(out_axes, int) else 0
  _axis_metadata.insert_into_outputs(out, axis, metadata, skip)


def _tree_map_call(
  jax_map, fn_cls, f, in_axes, out_axes, args, kwargs, kw, name, graph
):
  """vmap / pmap over pytrees (tree mode): Variable values flow back to
  the arguments with their mapped axis restored. Keyword arguments are
  mapped over their axis 0, as in ``jax.vmap``."""
  treemode.check_tree_mode_args(in_axes, out_axes, name=f'nnx.{name}')
  g = resolve_graph(graph)
  if (
    not g
    and jax_map is jax.vmap
    and type(in_axes) is tuple
    and len(in_axes) != len(args)
  ):
    # JAX's message (it checks the positional arguments only)
    raise ValueError(
      'vmap in_axes must be an int, None, or a tuple of entries '
      'corresponding to the positional arguments passed to the function, '
      f'but got len(in_axes)={len(in_axes)}, len(args)={len(args)}'
    )
  if g:
    _prefix.check_aliasing(
      args,
      in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args),
      arg_paths=True,
    )
  in_axes = _prefix.to_jax(in_axes, graph=g)
  out_axes = _prefix.to_jax(out_axes, graph=g)
  ia = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
  fn = fn_cls(f, g, ia, out_axes, ())
  variables = fn.variables((args, kwargs))
  pure_args, pure_kwargs = fn.pure((args, kwargs))
  var_axes = _prefix.variable_prefixes(ia, tuple(pure_args))
  var_axes.extend([0] * len(fn.variables(((), kwargs))))
  fn.update_axes = tuple(var_axes)
  out, mapped, unmapped = jax_map(
    fn, in_axes=ia, out_axes=(out_axes, 0, None), **kw
  )(*pure_args, **pure_kwargs)
  fn.write_back(variables, mapped, unmapped)
  return fn.result(out)


@common.options_first(no_methods=True)
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

  _prefix.check_all(
    'vmap', graph, graph_updates, in_axes=in_axes, out_axes=out_axes
  )
  # the modes in force now are the function's
  graph, graph_updates = common.modes_now(graph, graph_updates)

  @functools.wraps(f)
  def wrapper(*args, **kwargs):
    kw = dict(
      axis_name=axis_name, axis_size=axis_size, spmd_axis_name=spmd_axis_name
    )
    if not graph_with_updates(graph, graph_updates):
      return _tree_map_call(
        jax.vmap,
        SimpleVmapFn,
        f,
        in_axes,
        out_axes,
        args,
        kwargs,
        kw,
        'vmap',
        graph,
      )
    # graph mode maps positional arguments only
    args = varflow.positional_args(f, args, kwargs)
    return _vmap_call(
      jax.vmap, VmapFn, f, in_axes, out_axes, args, kw, transform_metadata
    )

  return wrapper


@common.options_first(no_methods=True)
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

  _prefix.check_all(
    'pmap', graph, graph_updates, in_axes=in_axes, out_axes=out_axes
  )
  # the modes in force now are the function's
  graph, graph_updates = common.modes_now(graph, graph_updates)

  @functools.wraps(f)
  def wrapper(*args, **kwargs):
    if kwargs and graph_with_updates(graph, graph_updates):
      raise TypeError(
        f'pmap() got an unexpected keyword argument {sorted(kwargs)[0]!r}: '
        'nnx.pmap in graph mode with graph updates takes positional '
        'arguments only.'
      )
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

      def g(*a, **k):
        it = iter(a)
        return f(
          *(statics[i] if i in statics else next(it) for i in range(n)), **k
        )

    if not graph_with_updates(graph, graph_updates):
      return _tree_map_call(
        jax.pmap,
        SimplePmapFn,
        g,
        axes,
        out_axes,
        args,
        kwargs,
        kw,
        'pmap',
        graph,
      )
    return _vmap_call(
      jax.pmap, PmapFn, g, axes, out_axes, args, kw, transform_metadata
    )

  return wrapper


def _argnums(nums) -> frozenset:
  if isinstance(nums, int):
    return frozenset((nums,))
  return frozenset(nums)


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

  if not resolve_graph(graph):
    for leaf in treemode.tree_variables(tree, 'arguments'):
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
        _axis_metadata._remove_axis_name(v, axis, partition)
        touched.append((v, axis))
    out = f(*args, **kwargs)
    out_axis = out_axes if isinstance(out_axes, int) else 0
    done = set()
    for v, axis in reversed(touched):
      # the arguments' Variables get their axis back where it was
      _axis_metadata._insert_axis_name(v, axis, partition)
      done.add(id(v))
    for v in _each_variable(out, graph):
      if id(v) not in done:
        _axis_metadata._insert_axis_name(v, out_axis, partition)
    return out

  return wrapper
