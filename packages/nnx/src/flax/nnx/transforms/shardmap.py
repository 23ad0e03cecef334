"""nnx.shard_map: ``jax.shard_map`` for functions taking graph nodes.

In graph mode with graph updates (:class:`ShardMapFn`) graph nodes cross
as NodeStates, :class:`StateSharding` gives per-substate specs, structure
changes and returned inputs come back as graph updates. Without graph
updates (:class:`SimpleShardMapFn`: ``graph=False``, or
``graph_updates=False``) only Variable values flow back, each with the
spec it went in with.

>>> import jax
>>> import jax.numpy as jnp
>>> from jax.sharding import PartitionSpec as P
>>> from flax import nnx
>>> mesh = jax.make_mesh((1,), ('d',), axis_types=(jax.sharding.AxisType.Auto,))
>>> class W(nnx.Module):
...   def __init__(self):
...     self.w = nnx.Param(jnp.arange(4.0))
>>> f = nnx.shard_map(
...   lambda m: jax.lax.psum(m.w[...].sum(), 'd'),
...   mesh=mesh, in_specs=(P('d'),), out_specs=P(), graph=False,
... )
>>> float(f(W()))
6.0
"""

from flax.nnx.transforms.iteration import _predicates_for
import functools

import jax
from jax.sharding import PartitionSpec

from flax.nnx import extract
from flax.nnx._common import MISSING
from flax.nnx.transforms.engine import _fns, _prefix, common, treemode, varflow
from flax.nnx.transforms.engine.types import StateAxes, StateSharding
from flax.nnx.variablelib import Variable

_is_ns = lambda x: isinstance(x, common.NodeStates)  # noqa: E731


def _is_spec(x) -> bool:
  return x is None or isinstance(x, (PartitionSpec, StateAxes))


def _leaf_specs(prefix, tree, is_leaf) -> list:
  """The spec of every leaf of ``tree`` from the prefix tree ``prefix``."""
  out = []

  def visit(p, t):
    out.extend([p] * len(jax.tree_util.tree_leaves(t)))

  jax.tree_util.tree_map(visit, prefix, tree, is_leaf=is_leaf)
  return out


class ShardMapFn:
  """Runs the user function inside ``jax.shard_map`` in graph mode with
  graph updates: rebuilds the graph nodes of the arguments from their
  NodeStates, calls ``f`` and returns ``(outputs, input_updates)``.

  ``graph_args`` (the :class:`~flax.nnx.transforms.engine.common.GraphArgs` of
  the call) supplies the structure the NodeStates are rebuilt with;
  ``out_static`` receives the structure of the outputs.
  """

  def __init__(
    self, f, in_specs, out_specs, kwarg_specs, ctxtag, *, graph_args=None
  ) -> None:
    self.f = f
    self.in_specs = in_specs
    self.out_specs = out_specs
    self.kwarg_specs = kwarg_specs
    self.ctxtag = ctxtag
    self.graph_args = graph_args
    self.out_static = None

  def __call__(self, *pure_args, **pure_kwargs):
    ga = self.graph_args
    ig = common.InnerGraph(ga.static, ga.masks(), (pure_args, pure_kwargs))
    out, changed, values = varflow.run_inner(
      ig, lambda t: self.f(*t[0], **t[1]), True, 'nnx.shard_map'
    )
    out_static, out_leaves = ig.flatten_out(out)
    self.out_static = (out_static, changed)
    return out_static[0].unflatten(out_leaves), values


class SimpleShardMapFn(_fns.PytreeMode):
  """Runs the user function inside ``jax.shard_map`` without graph
  updates; returns ``(outputs, variable_values)``. In tree mode
  (``graph=False``) JAX rebuilt the arguments already; in graph mode
  ``graph_args`` rebuilds them. ``update_specs`` are the specs of the
  Variable values returned."""

  name = 'shard_map'

  def __init__(
    self, f, graph, in_specs, out_specs, update_specs, *, graph_args=None
  ) -> None:
    self.f = f
    self.graph = graph
    self.in_specs = in_specs
    self.out_specs = out_specs
    self.update_specs = update_specs
    self.graph_args = graph_args
    self.meta_changes = None

  def __call__(self, *args):
    # only the values the function changed come back (None for the
    # others): the Variables it left alone keep their arrays outside
    if self.graph:
      ga = self.graph_args
      ig = common.InnerGraph(ga.static, None, (args, {}))
      before = varflow.values_of(varflow.root_slots(ig))
      out, _, values = varflow.run_inner(
        ig, lambda t: self.f(*t[0]), False, 'nnx.shard_map'
      )
      # metadata set inside comes back (applied by the caller)
      self.meta_changes = ig.meta_changes
      # output graph nodes cross as graphs (nnx.prefix out_specs match)
      return extract.to_tree(out), [
        _changed(v, b) for v, b in zip(values, before)
      ]
    # tree mode: the pytree mode of every transform
    (args, _), entered = self.enter((args, {}))
    before = [v._raw_value for v in entered.variables]
    out = self.f(*args)
    return self.outputs(entered, out), _changed(entered.values(), before)


def _changed(values, before) -> list:
  """``values`` with None where a value is the one it was before."""
  return [None if v is b else v for v, b in zip(values, before)]


def _kept_unchanged(values, slots) -> list:
  """The values that came back from :class:`SimpleShardMapFn`, with the
  current value of ``slots`` where none came back."""
  return [s._raw_value if v is None else v for v, s in zip(values, slots)]


def _specs_per_arg(in_specs, n):
  if isinstance(in_specs, (tuple, list)):
    return tuple(in_specs)
  return (in_specs,) * n


def _check_no_state_sharding(specs):
  for leaf in jax.tree_util.tree_leaves(specs, is_leaf=_is_spec):
    if isinstance(leaf, StateSharding):
      raise ValueError(
        '`in_specs` cannot contain `StateSharding` objects when graph=False '
        'or graph_updates=False: give PartitionSpecs for whole arguments, '
        'or use graph mode with updates: nnx.shard_map(..., graph=True, '
        'graph_updates=True).'
      )


def _values_specs(ga, pure_args, prefix) -> list:
  """Specs of the values of every root, in InnerGraph layout."""
  leaf_specs = _leaf_specs(
    prefix, pure_args, is_leaf=lambda x: _is_spec(x) and not _is_ns(x)
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
      if sp and all(x == sp[0] for x in sp):
        # one spec for the whole root: also covers values of attributes
        # the function adds (graph updates)
        values_specs.append(sp[0])
      else:
        values_specs.append(list(sp))
    idx += n
  return values_specs


def _graph_call(f, args, specs, updates, mesh, out_specs, axis_names, vma):

  predicates = None
  if updates and any(isinstance(s, StateSharding) for s in specs):
    predicates = _predicates_for(specs, args)
  _prefix.check_aliasing(args, tuple(specs))
  ga = common.GraphArgs((args, {}), predicates_for=predicates)
  pure_args, _ = ga.pure()

  def conv(spec, arg):
    if isinstance(spec, StateSharding):

      def node(x):
        if _is_ns(x):
          sp = list(spec.axes) + [PartitionSpec()]
          return common.NodeStates(tuple(sp[: len(x.groups)]), x.key)
        return PartitionSpec()

      return jax.tree_util.tree_map(node, arg, is_leaf=_is_ns)
    return spec

  if _prefix.has_tree_states(specs):
    prefix = tuple(_prefix.graph_prefix(tuple(specs), tuple(args), ga))
  else:
    prefix = tuple(conv(s, a) for s, a in zip(specs, pure_args))
  values_specs = _values_specs(ga, pure_args, prefix)
  if updates:
    fn = ShardMapFn(f, prefix, out_specs, None, None, graph_args=ga)
  else:
    fn = SimpleShardMapFn(
      f, True, prefix, out_specs, values_specs, graph_args=ga
    )
  out, values = jax.shard_map(
    fn,
    mesh=mesh,
    in_specs=prefix,
    out_specs=(
      out_specs if updates else _prefix.to_jax(out_specs, graph=True),
      values_specs,
    ),
    axis_names=set(axis_names),
    check_vma=vma,
  )(*pure_args)
  if not updates:
    values = [
      _kept_unchanged(vals, r.slots) for vals, r in zip(values, ga.roots)
    ]
    ga.write_back((None, values))
    for k, j, meta in fn.meta_changes or ():
      varflow.give_metadata(ga.roots[k].slots[j], meta)
    return extract.from_tree(out)
  out_static, changed = fn.out_static
  ga.write_back((changed, values))
  leaves = out_static[0].flatten_up_to(out)
  return common.unflatten_out(out_static, leaves, ga)


def _tree_call(f, args, specs, mesh, out_specs, axis_names, vma):
  variables = varflow.check_unique((args, {}), 'nnx.shard_map')
  leaf_specs = _leaf_specs(specs, args, is_leaf=_is_spec)
  items = jax.tree_util.tree_leaves(
    args, is_leaf=lambda x: isinstance(x, Variable)
  )
  update_specs = [
    s for s, item in zip(leaf_specs, items) if isinstance(item, Variable)
  ]
  fn = SimpleShardMapFn(f, False, specs, out_specs, tuple(update_specs))
  out, values = jax.shard_map(
    fn,
    mesh=mesh,
    in_specs=specs,
    out_specs=(out_specs, update_specs),
    axis_names=set(axis_names),
    check_vma=vma,
  )(*args)
  treemode.store_values(variables, _kept_unchanged(values, variables))
  return out


@common.options_first(no_methods=True)
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
  """Lifted ``jax.shard_map`` for functions taking graph nodes.

  In graph mode with graph updates, :class:`StateSharding` in ``in_specs``
  gives per-substate PartitionSpecs of a graph node, and structure changes
  and returned inputs come back as in :func:`nnx.jit`. With
  ``graph=False`` or ``graph_updates=False`` the arguments are pytrees
  (PartitionSpecs for whole arguments; Variable values flow back).
  """
  _prefix.check_all(
    'shard_map', graph, graph_updates, in_specs=in_specs, out_specs=out_specs
  )

  # the modes in force now are the function's (as every decorator
  # transform)
  g, updates = common.modes_now(graph, graph_updates)
  updates = g and updates

  @functools.wraps(f)
  def wrapper(*args):
    specs = _specs_per_arg(in_specs, len(args))
    if not updates:
      _check_no_state_sharding(specs)
    if g:
      return _graph_call(
        f, args, specs, updates, mesh, out_specs, axis_names, check_vma
      )
    return _tree_call(f, args, specs, mesh, out_specs, axis_names, check_vma)

  return wrapper
