"""nnx.custom_vjp: ``jax.custom_vjp`` for functions taking graph nodes.

Graph mode with graph updates (:class:`CustomVjp`): graph nodes cross as
NodeStates split into the differentiated substate and the rest; the
primal and forward rule (:class:`CustomVjpFnWrapper`, :class:`FwdFn`)
return the input updates next to the output, the backward rule
(:class:`BwdFn`) turns the user's State cotangents into NodeStates.
Without graph updates (:class:`SimpleCustomVjp`) the arguments are pytrees
(``nnx.to_tree`` in graph mode) and the rules run on rebuilt objects.
"""

import dataclasses
import functools
import inspect
import typing as tp

import jax
import jax.numpy as jnp
import numpy as np

from flax.nnx import extract, filterlib, graphlib
from flax.nnx._common import MISSING, resolve_graph
from flax.nnx.statelib import State
from flax.nnx.transforms.engine import _fns, _prefix, common, treemode
from flax.nnx.transforms.engine.types import DiffState
from flax.nnx.transforms.engine.varflow import arg_index_of_positions
from flax.nnx.transforms.engine.varflow import resolved_updates as _updates
from flax.nnx.variablelib import Variable

_arg_index_of_positions = arg_index_of_positions


# -- custom_vjp ---------------------------------------------------------------------


def _zero_cotangent(x):
  def z(v):
    v = jnp.asarray(v) if not hasattr(v, 'dtype') else v
    if jnp.issubdtype(v.dtype, jnp.inexact):
      return jnp.zeros_like(v)
    return np.zeros(v.shape, dtype=jax.dtypes.float0)

  return jax.tree.map(z, x)


class BwdFn:
  """The backward rule ``nnx.custom_vjp`` registers in graph mode with graph
  updates: calls the user's ``bwd(res, g)`` and turns the cotangents it
  returns for graph nodes (States or Modules, missing entries are zeros)
  into NodeStates of the differentiated leaves. ``tree_node_args`` is the
  pure form of the arguments (NodeStates for graph nodes); the values of
  the static arguments (``statics``, by position) come first in the call,
  as ``jax.custom_vjp`` passes its ``nondiff_argnums``."""

  def __init__(
    self,
    bwd,
    tree_node_args,
    *,
    graph_args=None,
    static_argnums=(),
    statics=(),
  ) -> None:
    self.bwd = bwd
    self.tree_node_args = tree_node_args
    self.graph_args = graph_args
    self.static_argnums = frozenset(static_argnums)
    self.static_values = tuple(statics[i] for i in sorted(self.static_argnums))

  def __call__(self, *args):
    (res, nondiff), g = args
    tangents = self.bwd(*self.static_values, res, g)
    if not isinstance(tangents, tuple):
      tangents = (tangents,)
    out = []
    diff_tangents = iter(tangents)
    for i, a in enumerate(self.tree_node_args):
      if i in self.static_argnums:
        out.append(None)
        continue
      t = next(diff_tangents)
      if isinstance(a, common.NodeStates):
        out.append(self._node_cotangent(a, t))
      else:
        out.append(t)
    return tuple(out), _zero_cotangent(nondiff)

  def _node_cotangent(self, a, t):
    r = self.graph_args.roots[a.key]
    lookup = {}
    if t is not None:
      if graphlib.is_graph_node(t):
        t = graphlib.state(t)
      paths, leaves = (t if isinstance(t, State) else State(t))._flat_items()
      lookup = dict(zip(paths, leaves))
    vals = []
    for m, path, slot in zip(r.mask, r.paths, r.slots):
      if m != 0:
        continue
      tv = lookup.get(path)
      if tv is None:
        vals.append(_zero_cotangent(slot._raw_value))
      else:
        vals.append(tv._raw_value if isinstance(tv, Variable) else tv)
    return common.NodeStates((vals,), a.key)


def _positional(fun, args, kwargs) -> tuple:
  """``args`` and ``kwargs`` as positional arguments of ``fun`` (defaults
  filled in), as ``jax.custom_vjp`` passes them to its rules."""
  if not kwargs:
    return args
  bound = inspect.signature(fun).bind(*args, **kwargs)
  bound.apply_defaults()
  return bound.args


class _CustomVjpCall:
  """The graph structure of one ``nnx.custom_vjp`` call (graph mode):
  rebuilds the graph nodes from the differentiated and non-differentiated
  NodeStates and reads the input updates the function made."""

  def __init__(self, graph_args, args) -> None:
    self.graph_args = graph_args
    self.args = args

  def rebuild(self, diff, nondiff, statics, static_argnums):
    is_ns = lambda x: isinstance(x, common.NodeStates)  # noqa: E731
    full = []
    for i, (d, nd) in enumerate(zip(diff, nondiff)):
      if i in static_argnums:
        full.append(statics[i])
        continue
      full.append(
        jax.tree_util.tree_map(
          lambda x, y: (
            common.NodeStates((x.groups[0], y.groups[0]), x.key)
            if is_ns(x)
            else x
          ),
          d,
          nd,
          is_leaf=is_ns,
        )
      )
    ga = self.graph_args
    return common.InnerGraph(ga.static, ga.masks(), (tuple(full), {}))

  def input_updates(self, ig, static_argnums):
    """The updated State of each graph-node argument (None for the other
    arguments), the static ones (``static_argnums``) left out."""
    ga = self.graph_args
    changed, values = ig.updates()
    # structure changes (plain attributes set by the function) are applied
    # to the arguments after the call
    self.changed = changed
    out = []
    for i, a in enumerate(self.args):
      if i in static_argnums:
        continue
      if not common.is_node_leaf(a):
        out.append(None)
        continue
      k = ga.positions.index([j for j, x in enumerate(ga.leaves) if x is a][0])
      r = ga.roots[k]
      leaves = [
        slot.copy(v) if isinstance(slot, Variable) else v
        for slot, v in zip(r.slots, values[k])
      ]
      out.append(State._from_flat(list(r.paths), leaves))
    return tuple(out)

  def output(self, ig, out):
    """``out`` as it leaves the primal: each graph node (or Variable) in it
    as a State of the Variables it adds (an empty State for an input's
    node: its cotangent reaches the input's updates), recorded so that
    :meth:`rebuild_output` puts the objects back."""
    out_static, leaves = ig.flatten_out(out)
    treedef, _, positions = out_static
    paths = []
    for pos, (node_paths, slots) in zip(positions, ig.out_slots):
      node_paths = [tuple(p) for p in node_paths]
      paths.append(node_paths)
      leaves[pos] = State._from_flat(
        list(node_paths),
        [s.copy(s._raw_value) if isinstance(s, Variable) else s for s in slots],
      )
    self.out_static, self.out_paths = out_static, paths
    return treedef.unflatten(leaves)

  def rebuild_output(self, out):
    """The outputs of the call: the graph nodes of the primal's output
    rebuilt, those of the inputs being the input objects."""
    treedef, nodes, positions = self.out_static
    if not positions:
      return out
    leaves = treedef.flatten_up_to(out)
    for pos, node_paths in zip(positions, self.out_paths):
      flat = dict(zip(*leaves[pos]._flat_items()))
      leaves[pos] = [
        x._raw_value if isinstance(x, Variable) else x
        for x in (flat[tuple(p)] for p in node_paths)
      ]
    return common.rebuild_out(
      treedef, nodes, positions, leaves, self.graph_args.all_nodes
    )


class CustomVjpFnWrapper:
  """The primal function of :class:`CustomVjp` handed to
  ``jax.custom_vjp``: called with the differentiated and the other
  NodeStates of the arguments, it rebuilds the graph nodes (``nodedefs``:
  the call's graph structure; ``nondiff_states``: the static arguments by
  position, at ``jax_nondiff_argnums``), runs ``f`` and returns ``(input
  updates, out)``. ``ctxtag`` names the transform in errors."""

  def __init__(
    self, f, jax_nondiff_argnums, ctxtag, nondiff_states, nodedefs
  ) -> None:
    self.f = f
    self.jax_nondiff_argnums = tuple(jax_nondiff_argnums)
    self.ctxtag = ctxtag
    self.nondiff_states = nondiff_states
    self.nodedefs = nodedefs

  def _rebuild(self, pure_args):
    diff, nondiff = pure_args
    return self.nodedefs.rebuild(
      diff, nondiff, self.nondiff_states, self.jax_nondiff_argnums
    )

  def __call__(self, *pure_args):
    ig = self._rebuild(pure_args)
    out = self.f(*ig.args[0])
    updates = self.nodedefs.input_updates(ig, self.jax_nondiff_argnums)
    return updates, self.nodedefs.output(ig, out)


class FwdFn(CustomVjpFnWrapper):
  """The forward rule of :class:`CustomVjp`: runs the user's ``fwd`` on the
  rebuilt graph nodes and returns ``((input updates, out), (residuals,
  non-differentiated states))``."""

  def __init__(
    self, fwd, nondiff_argnums, ctxtag, nondiff_states, nodedefs
  ) -> None:
    super().__init__(fwd, nondiff_argnums, ctxtag, nondiff_states, nodedefs)
    self.fwd = fwd
    self.nondiff_argnums = self.jax_nondiff_argnums

  def __call__(self, *pure_args):
    ig = self._rebuild(pure_args)
    result = self.fwd(*ig.args[0])
    if not isinstance(result, tuple) or len(result) != 2:
      raise ValueError(
        f'The fwd rule of {self.ctxtag} must return a pair (out, '
        f'residuals), got {type(result).__name__}.'
      )
    out, res = result
    updates = self.nodedefs.input_updates(ig, self.jax_nondiff_argnums)
    return (updates, self.nodedefs.output(ig, out)), (res, pure_args[1])


class CustomVjp:
  """A function with a custom VJP over graph nodes, graph mode with graph
  updates (see :func:`custom_vjp`): ``nondiff_argnums`` holds argument
  numbers (static arguments) and :class:`DiffState` (the substate of a
  graph node that gets cotangents)."""

  def __init__(self, fun, nondiff_argnums):
    functools.update_wrapper(self, fun)
    self.fun = fun
    self.nondiff_argnums = tuple(nondiff_argnums)
    self.fwd = None
    self.bwd = None

  def defvjp(self, fwd, bwd, symbolic_zeros=False):
    if symbolic_zeros:
      raise ValueError(
        'symbolic_zeros=True is supported by nnx.custom_vjp without graph '
        'updates only (graph=False or graph_updates=False).'
      )
    self.fwd = fwd
    self.bwd = bwd

  def __call__(self, *args, **kwargs):
    if self.fwd is None:
      raise ValueError(
        'nnx.custom_vjp function called before defvjp(fwd, bwd).'
      )
    return self._call_graph(*_positional(self.fun, args, kwargs))

  def _call_graph(self, *args):
    int_nondiff = {a for a in self.nondiff_argnums if isinstance(a, int)}
    filters = {
      a.argnum: a.filter
      for a in self.nondiff_argnums
      if isinstance(a, DiffState)
    }
    arg_of = _arg_index_of_positions(args)

    def predicates_for(k, pos):
      i = arg_of[pos]
      return (filterlib.to_predicate(filters.get(i, ...)),)

    ga = common.GraphArgs((args, {}), predicates_for=predicates_for)
    pure_args, _ = ga.pure()
    is_ns = lambda x: isinstance(x, common.NodeStates)  # noqa: E731
    diff = tuple(
      None
      if i in int_nondiff
      else jax.tree.map(
        lambda x: common.NodeStates((x.groups[0],), x.key) if is_ns(x) else x,
        a,
        is_leaf=is_ns,
      )
      for i, a in enumerate(pure_args)
    )
    nondiff = tuple(
      jax.tree.map(
        lambda x: (
          common.NodeStates((x.groups[1],), x.key) if is_ns(x) else None
        ),
        a,
        is_leaf=is_ns,
      )
      for a in pure_args
    )
    statics = tuple(a if i in int_nondiff else None for i, a in enumerate(args))
    call = _CustomVjpCall(ga, args)
    jax_nondiff = tuple(sorted(int_nondiff))
    pure_f = jax.custom_vjp(
      CustomVjpFnWrapper(
        self.fun, jax_nondiff, 'nnx.custom_vjp', list(statics), call
      )
    )
    pure_f.defvjp(
      FwdFn(self.fwd, jax_nondiff, 'nnx.custom_vjp', list(statics), call),
      BwdFn(
        self.bwd,
        tuple(pure_args),
        graph_args=ga,
        static_argnums=int_nondiff,
        statics=statics,
      ),
    )
    call.changed = None
    updates, out = pure_f(diff, nondiff)
    diff_args = [a for i, a in enumerate(args) if i not in int_nondiff]
    if call.changed is not None and _write_changed(
      ga, diff_args, updates, call
    ):
      return call.rebuild_output(out)
    for a, st in zip(diff_args, updates):
      if st is None:
        continue
      paths, leaves = st._flat_items()
      graphlib.update(a, State._from_flat(paths, leaves))
    return call.rebuild_output(out)


def _write_changed(ga, diff_args, updates, call) -> bool:
  """Writes the new values and graph structure (plain attributes the
  function set) into the argument roots; False if the new structure has
  other leaves than the old one (the values then go by path)."""
  values = [ga.values(k) for k in range(len(ga.roots))]
  for a, st in zip(diff_args, updates):
    if st is None:
      continue
    k = ga.positions.index([j for j, x in enumerate(ga.leaves) if x is a][0])
    leaves = st._flat_items()[1]
    if len(leaves) != len(values[k]):
      return False
    values[k] = [v._raw_value if isinstance(v, Variable) else v for v in leaves]
  ga.write_back((call.changed, values))
  return True


@common.options_first(no_methods=True)
def custom_vjp(
  fun=MISSING, *, nondiff_argnums=(), graph=None, graph_updates=None
):
  """Reference-aware ``jax.custom_vjp``.

  In graph mode with graph updates (:class:`CustomVjp`) ``bwd`` returns, for
  a graph node, a State (or the node) of cotangents of its differentiated
  substate (every Variable, or the one a :class:`DiffState` in
  ``nondiff_argnums`` selects). Without graph updates
  (:class:`SimpleCustomVjp`) the arguments are pytrees and ``bwd`` returns
  cotangents in their structure, as ``jax.custom_vjp``.

  >>> from flax import nnx
  >>> import jax, jax.numpy as jnp
  >>> @nnx.custom_vjp(graph=False)
  ... def f(x):
  ...   return jnp.sin(x)
  >>> f.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (2.0 * g,))
  >>> float(jax.grad(f)(0.5))
  2.0
  """
  _prefix.check_all(
    'custom_vjp', graph, graph_updates, nondiff_argnums=nondiff_argnums
  )
  g = resolve_graph(graph)
  if g and _updates(graph_updates):
    return CustomVjp(fun, nondiff_argnums)
  treemode.check_tree_mode_args(nondiff_argnums, name='nnx.custom_vjp')
  return SimpleCustomVjp(fun, nondiff_argnums, g)


@dataclasses.dataclass(eq=False)
class SimpleCustomVjpFn(_fns.PytreeMode):
  """The primal function of :class:`SimpleCustomVjp`: ``f`` on the
  arguments rebuilt from their pytree form (the pytree mode of every
  transform, :class:`_fns.PytreeMode`)."""

  f: tp.Callable[..., tp.Any]
  graph: bool
  # positions of the non-differentiated arguments: passed as given (the
  # objects themselves), so that the function may update their Variables
  keep: tuple = ()

  name: tp.ClassVar[str] = 'custom_vjp'

  def rebuilt(self, args):
    """``args`` rebuilt (:meth:`fresh`), those at ``keep`` as given."""
    if not self.keep:
      return self.fresh(args)
    fresh = self.fresh(
      tuple(None if i in self.keep else a for i, a in enumerate(args))
    )
    return tuple(
      a if i in self.keep else b for i, (a, b) in enumerate(zip(args, fresh))
    )

  def run(self, f, args):
    """``f`` on the rebuilt ``args``: ``(f's result, the updates of the
    differentiated arguments)``: each argument in pytree form holding the
    Variables whose value ``f`` set, None in place of the other Variables
    and arrays. They leave as outputs of the primal, whose cotangents
    (same structure) ``bwd`` may take."""
    args = self.rebuilt(args)
    diff = [a for i, a in enumerate(args) if i not in self.keep]
    before = {id(v): v._raw_value for v in _variables_of(diff)}
    result = f(*args)
    primal = jax.custom_derivatives.CustomVJPPrimal

    def updated(x):
      if isinstance(x, primal):
        x = x.value
      if isinstance(x, Variable) and before.get(id(x), x) is not x._raw_value:
        return x
      return None

    updates = tuple(
      jax.tree.map(updated, self.pure(a), is_leaf=_is_update_leaf) for a in diff
    )
    return result, updates

  def __call__(self, *args):
    out, updates = self.run(self.f, args)
    return out, updates


@dataclasses.dataclass(eq=False)
class SimpleFwdFn(_fns.PytreeMode):
  """The forward rule of :class:`SimpleCustomVjp`: ``fwd`` on the rebuilt
  arguments, returning ``(out, residuals)`` (residuals in pytree form)."""

  fwd: tp.Callable[..., tp.Any]
  graph: bool
  keep: tuple = ()

  name: tp.ClassVar[str] = 'custom_vjp'

  rebuilt = SimpleCustomVjpFn.rebuilt
  run = SimpleCustomVjpFn.run

  def __call__(self, *args):
    (out, res), updates = self.run(self.fwd, args)
    return (out, updates), self.pure(res)


@dataclasses.dataclass(eq=False)
class SimpleBwdFn(_fns.PytreeMode):
  """The backward rule of :class:`SimpleCustomVjp`: ``bwd(*nondiff, res,
  g)`` with graph nodes rebuilt, its cotangents (Modules for Modules) put
  back in pytree form."""

  bwd: tp.Callable[..., tp.Any]
  graph: bool
  keep: tuple = ()

  name: tp.ClassVar[str] = 'custom_vjp'

  rebuilt = SimpleCustomVjpFn.rebuilt

  def __call__(self, *args):
    # the non-differentiated arguments come first, as given; the cotangent
    # of the primal output is (output, updates of the arguments): a bwd
    # taking three positional parameters gets the updates' cotangents too
    *front, res, (g, updates_g) = args
    front = self.rebuilt(tuple(front))
    res, g = self.fresh((res, g))
    if _positional_count(self.bwd) - len(front) >= 3:
      # a Variable the function did not set is None (graph nodes rebuild
      # it holding None)
      updates_g = jax.tree.map(
        lambda x: None if _holds_none(x) else x,
        self.fresh(updates_g),
        is_leaf=lambda x: isinstance(x, Variable),
      )
      return self.pure(self.bwd(*front, res, g, updates_g))
    return self.pure(self.bwd(*front, res, g))


def _is_update_leaf(x) -> bool:
  return isinstance(x, (Variable, jax.custom_derivatives.CustomVJPPrimal))


def _variables_of(tree) -> list:
  """The Variables of ``tree`` (a pytree of rebuilt arguments; graph nodes
  walked as graphs)."""
  out = []
  for leaf in jax.tree.leaves(tree, is_leaf=common.is_node_leaf):
    if isinstance(leaf, Variable):
      out.append(leaf)
    elif common.is_node_leaf(leaf):
      out.extend(
        v for _, v in graphlib.iter_graph(leaf) if isinstance(v, Variable)
      )
  return out


def _holds_none(x) -> bool:
  return isinstance(x, Variable) and x._raw_value is None


def _positional_count(fn) -> int:
  """How many positional parameters ``fn`` takes (-1: any number)."""
  try:
    params = inspect.signature(fn).parameters.values()
  except (TypeError, ValueError):
    return -1
  n = 0
  for p in params:
    if p.kind is p.VAR_POSITIONAL:
      return -1
    if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
      n += 1
  return n


class SimpleCustomVjp:
  """A function with a custom VJP without graph updates (see
  :func:`custom_vjp`): the arguments are pytrees (``graph=True``: through
  ``nnx.to_tree``, shared references kept); ``nondiff_argnums`` are
  argument numbers, as in ``jax.custom_vjp``."""

  def __init__(self, fun, nondiff_argnums, graph):
    functools.update_wrapper(self, fun)
    self.fun = fun
    self.nondiff_argnums = tuple(nondiff_argnums)
    self.graph = bool(graph)
    self._jax = jax.custom_vjp(
      SimpleCustomVjpFn(fun, self.graph, self.nondiff_argnums),
      nondiff_argnums=self.nondiff_argnums,
    )
    self.fwd = None
    self.bwd = None

  def defvjp(self, fwd, bwd, symbolic_zeros=False):
    self.fwd = fwd
    self.bwd = bwd
    self._jax.defvjp(
      SimpleFwdFn(fwd, self.graph, self.nondiff_argnums),
      SimpleBwdFn(bwd, self.graph, tuple(range(len(self.nondiff_argnums)))),
      symbolic_zeros=symbolic_zeros,
    )

  def __call__(self, *args, **kwargs):
    args = _positional(self.fun, args, kwargs)
    # a Variable reachable twice is refused in both modes, as in Flax
    treemode.tree_variables(args, 'arguments', 'nnx.custom_vjp')
    if self.fwd is None:
      raise ValueError(
        'nnx.custom_vjp function called before defvjp(fwd, bwd).'
      )
    if self.graph:
      # one split for all the differentiated arguments, as the cotangents
      # bwd returns for them are converted back
      nondiff = self.nondiff_argnums
      pure = extract.to_tree(
        tuple(None if i in nondiff else a for i, a in enumerate(args))
      )
      args = tuple(
        a if i in nondiff else p for i, (a, p) in enumerate(zip(args, pure))
      )
    out, updates = self._jax(*args)
    # the Variables the function set reach the differentiated arguments
    # (``updates`` holds them where the arguments, in pytree form, hold
    # Variables; None elsewhere)
    pure_diff = tuple(
      a for i, a in enumerate(args) if i not in self.nondiff_argnums
    )
    is_var = lambda x: isinstance(x, Variable)  # noqa: E731
    new = {
      path: x
      for path, x in jax.tree_util.tree_leaves_with_path(
        updates, is_leaf=is_var
      )
      if is_var(x)
    }
    pairs = [
      (var, treemode.with_metadata(new[path]))
      for path, var in jax.tree_util.tree_leaves_with_path(
        pure_diff, is_leaf=is_var
      )
      if is_var(var) and path in new
    ]
    treemode.store_values([v for v, _ in pairs], [x for _, x in pairs])
    return out
