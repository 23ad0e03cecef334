"""grad, value_and_grad, vjp, jvp and custom_vjp over graph nodes."""

import collections
import functools
import inspect

import jax
import jax.numpy as jnp
import numpy as np

from flax.nnx import extract, filterlib, graphlib
from flax.nnx._common import MISSING, graph_updates_default, resolve_graph
from flax.nnx._common import Missing as Missing
from flax.nnx.statelib import State as State
from flax.nnx.extract import labeled as labeled
from flax.nnx.transforms import common, varflow
from flax.nnx.transforms.types import DiffState
from flax.nnx.variablelib import Param, Variable


def _arg_index_of_positions(args):
  """Maps flattened-leaf positions (nodes as leaves) to argument index."""
  out = []
  for i, a in enumerate(args):
    n = len(jax.tree_util.tree_leaves(a, is_leaf=common.is_node_leaf))
    out.extend([i] * n)
  return out


def _diff_specs(argnums):
  single = isinstance(argnums, (int, DiffState))
  items = (argnums,) if single else tuple(argnums)
  specs = []
  for a in items:
    if isinstance(a, DiffState):
      specs.append((a.argnum, a.filter))
    else:
      specs.append((a, Param))
  return single, specs


class GradFn:
  """The function ``nnx.grad`` differentiates in graph mode with graph
  updates.

  It is called with the differentiated substates (one NodeStates tree per
  differentiated argument); ``nondiff_states`` holds the pure form of every
  argument (graph nodes as NodeStates with all their filter groups), whose
  other groups and arguments complete the call. It rebuilds the graph
  nodes (``graph_args`` gives their structure), runs ``f`` and returns
  ``(loss, (aux_leaves, leaf_values))``; the structure of ``aux`` and the
  graph changes are kept in ``out_static``.
  """

  def __init__(
    self, f, has_aux, nondiff_states, *, graph_args=None, argnums=()
  ) -> None:
    self.f = f
    self.has_aux = has_aux
    self.nondiff_states = nondiff_states
    self.graph_args = graph_args
    self.argnums = tuple(argnums)
    self.out_static = None

  def __call__(self, *pure_args):
    (diff_trees,) = pure_args
    is_ns = lambda x: isinstance(x, common.NodeStates)  # noqa: E731
    args = list(self.nondiff_states)
    for i, tree in zip(self.argnums, diff_trees):
      args[i] = jax.tree_util.tree_map(
        lambda d, p: (
          common.NodeStates((d.groups[0], p.groups[1]), p.key)
          if is_ns(p)
          else d
        ),
        tree,
        args[i],
        is_leaf=is_ns,
      )
    ga = self.graph_args
    ig = common.InnerGraph(ga.static, ga.masks(), (tuple(args), {}))
    out = self.f(*ig.args[0])
    loss, aux = out if self.has_aux else (out, None)
    changed, values = ig.updates()
    aux_static, aux_leaves = ig.flatten_out(aux)
    self.out_static = (aux_static, changed)
    return loss, (aux_leaves, values)


def _grad_graph(f, argnums, has_aux, holomorphic, allow_int, with_value):
  single, specs = _diff_specs(argnums)
  filters = {i: filt for i, filt in specs}

  def wrapper(*args):
    arg_of = _arg_index_of_positions(args)

    def predicates_for(k, pos):
      i = arg_of[pos]
      if i in filters:
        return (filterlib.to_predicate(filters[i]),)
      return None

    ga = common.GraphArgs((args, {}), predicates_for=predicates_for)
    pure_args, _ = ga.pure()
    node_root = {}  # id(NodeStates) -> root k
    diff_trees = []
    for i, _ in specs:
      diff_trees.append(
        jax.tree.map(
          lambda x: (
            common.NodeStates((x.groups[0],), x.key)
            if isinstance(x, common.NodeStates)
            else x
          ),
          pure_args[i],
          is_leaf=lambda x: isinstance(x, common.NodeStates),
        )
      )
    fn = GradFn(
      f,
      has_aux,
      collections.deque(pure_args),
      graph_args=ga,
      argnums=tuple(i for i, _ in specs),
    )
    transform = jax.value_and_grad if with_value else jax.grad
    res = transform(
      fn,
      argnums=0,
      has_aux=True,
      holomorphic=holomorphic,
      allow_int=allow_int,
    )(diff_trees)
    if with_value:
      (loss, (aux_leaves, values)), grads = res
    else:
      grads, (aux_leaves, values) = res
      loss = None
    aux_static, changed = fn.out_static
    ga.write_back((changed, values))
    aux = common.unflatten_out(aux_static, aux_leaves, ga)
    del node_root

    def to_state(x):
      if not isinstance(x, common.NodeStates):
        return x
      r = ga.roots[x.key]
      paths, slots = [], []
      for m, path, slot in zip(r.mask, r.paths, r.slots):
        if m == 0:
          paths.append(path)
          slots.append(slot)
      leaves = [
        s.copy(g) if isinstance(s, Variable) else g
        for s, g in zip(slots, x.groups[0])
      ]
      return State._from_flat(paths, leaves)

    grads = tuple(
      jax.tree.map(
        to_state, g, is_leaf=lambda x: isinstance(x, common.NodeStates)
      )
      for g in grads
    )
    grads = grads[0] if single else grads
    if with_value:
      return ((loss, aux) if has_aux else loss), grads
    return (grads, aux) if has_aux else grads

  return wrapper


# -- without graph updates ------------------------------------------------------
#
# With graph=False, or graph=True and graph_updates=False, the arguments
# cross the JAX transform as pytrees: tree mode flattens them as JAX does
# (shared Variables are an error), graph mode goes through ``nnx.to_tree``
# (shared references kept). Inside, the function gets fresh objects; the
# final values of the input Variables flow back, structure changes stay
# inside, and an input Variable may not be returned.


def _simple_pure(args: tuple, graph: bool, name: str):
  """The arguments as a pytree, and the outer Variables to update."""
  if graph:
    outer = varflow.variable_paths(args, '.args')
    return extract.to_tree(args), [v for _, v in outer]
  varflow.check_unique((args, {}), name)
  return args, [v for _, v in varflow.variable_paths(args, '.args')]


def _simple_enter(pure: tuple, graph: bool):
  """Inside: fresh objects for ``pure`` and their input Variables."""
  if graph:
    args = extract.from_tree(pure)
  else:
    args = jax.tree_util.tree_map(lambda x: x, pure)
  return args, varflow.variable_paths(args, '.args')


def _simple_leave(inputs, out, name: str) -> list:
  varflow.check_no_aliases(inputs, out, name)
  return [v.raw_value for _, v in inputs]


def _simple_out(tree, graph: bool):
  return extract.from_tree(tree) if graph else tree


class _SimpleFn:
  """Runs the user function on fresh objects inside a JAX transform and
  returns ``(out, (aux, updates))`` (``has_aux`` splits ``out``)."""

  name = 'nnx transform'

  def __init__(self, f, has_aux: bool, graph: bool) -> None:
    self.f = f
    self.has_aux = has_aux
    self.graph = graph

  def _run(self, pure):
    args, inputs = _simple_enter(tuple(pure), self.graph)
    out = self.f(*args)
    main, aux = out if self.has_aux else (out, None)
    updates = _simple_leave(inputs, out, self.name)
    if self.graph:
      aux = extract.to_tree(aux)
    return main, (aux, updates)


class SimpleGradFn(_SimpleFn):
  """The function ``nnx.grad`` differentiates when it runs without graph
  updates: ``f`` on fresh copies of the arguments, returning ``(loss, (aux,
  variable_updates))``."""

  name = 'nnx.grad'

  def __call__(self, *args, **kwargs):
    if kwargs:
      raise TypeError(
        'nnx.grad passes the differentiated arguments positionally; got '
        f'keyword arguments {sorted(kwargs)}.'
      )
    return self._run(args)


def _grad_simple(
  f, argnums, has_aux, holomorphic, allow_int, graph, with_value
):
  single = isinstance(argnums, (int, DiffState))
  items = (argnums,) if single else tuple(argnums)
  if any(isinstance(a, DiffState) for a in items):
    raise ValueError(
      '`argnums` cannot contain `DiffState` objects when graph=False or '
      'graph_updates=False: differentiate whole arguments (plain argnums), '
      'or use graph mode with updates to select a substate: '
      'nnx.grad(..., graph=True, graph_updates=True).'
    )
  fn = SimpleGradFn(f, has_aux, graph)
  transform = jax.value_and_grad if with_value else jax.grad
  lifted = transform(
    fn,
    argnums=argnums,
    has_aux=True,
    holomorphic=holomorphic,
    allow_int=allow_int,
  )

  def wrapper(*args):
    pure, outer = _simple_pure(args, graph, 'nnx.grad')
    res = lifted(*pure)
    if with_value:
      (loss, (aux, updates)), grads = res
    else:
      grads, (aux, updates) = res
      loss = None
    common.store_values(outer, updates)
    grads = _simple_out(grads, graph)
    aux = _simple_out(aux, graph)
    if with_value:
      return ((loss, aux) if has_aux else loss), grads
    return (grads, aux) if has_aux else grads

  return wrapper


def _zeros(x):
  def z(v):
    if hasattr(v, 'dtype') and jnp.issubdtype(v.dtype, jnp.inexact):
      return jnp.zeros_like(v)
    return v

  return jax.tree.map(z, x)


def _make_grad(
  f, argnums, has_aux, holomorphic, allow_int, graph, graph_updates, with_value
):
  common.check_not_bound_method(f, 'grad')

  @functools.wraps(f)
  def wrapper(*args):
    g = resolve_graph(graph)
    if g and _updates(graph_updates):
      inner = _grad_graph(
        f, argnums, has_aux, holomorphic, allow_int, with_value
      )
    else:
      inner = _grad_simple(
        f, argnums, has_aux, holomorphic, allow_int, g, with_value
      )
    return inner(*args)

  return wrapper


def _updates(graph_updates) -> bool:
  if graph_updates is None:
    return graph_updates_default()
  return bool(graph_updates)


def _refuse_reduce_axes(name, reduce_axes):
  """``reduce_axes`` is gone from JAX's autodiff; a non-empty value is an
  error, as under Flax 0.12.8."""
  if reduce_axes:
    raise NotImplementedError(
      f'reduce_axes argument to {name} is deprecated: JAX no longer reduces '
      f'gradients over named axes; call nnx.{name} without reduce_axes and '
      'reduce with jax.lax.psum inside the function instead.'
    )


def grad(
  f=MISSING,
  *,
  argnums=0,
  has_aux=False,
  holomorphic=False,
  allow_int=False,
  reduce_axes=(),
  graph=None,
  graph_updates=None,
):
  """Lifted ``jax.grad``: gradients w.r.t. the ``nnx.Param`` Variables of
  graph-node arguments (or the substate a :class:`DiffState` selects),
  returned as a State in graph mode.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> class M(nnx.Module):
  ...   def __init__(self):
  ...     self.w = nnx.Param(jnp.array(3.0))
  >>> g = nnx.grad(lambda m: m.w * m.w)(M())
  >>> float(g['w'].value)
  6.0
  """
  _refuse_reduce_axes('grad', reduce_axes)
  if f is MISSING:
    return functools.partial(
      grad,
      argnums=argnums,
      has_aux=has_aux,
      holomorphic=holomorphic,
      allow_int=allow_int,
      graph=graph,
      graph_updates=graph_updates,
    )
  return _make_grad(
    f, argnums, has_aux, holomorphic, allow_int, graph, graph_updates, False
  )


def value_and_grad(
  f=MISSING,
  *,
  argnums=0,
  has_aux=False,
  holomorphic=False,
  allow_int=False,
  reduce_axes=(),
  graph=None,
  graph_updates=None,
):
  """Like :func:`grad` but returns ``(value, grads)``."""
  _refuse_reduce_axes('value_and_grad', reduce_axes)
  if f is MISSING:
    return functools.partial(
      value_and_grad,
      argnums=argnums,
      has_aux=has_aux,
      holomorphic=holomorphic,
      allow_int=allow_int,
      graph=graph,
      graph_updates=graph_updates,
    )
  return _make_grad(
    f, argnums, has_aux, holomorphic, allow_int, graph, graph_updates, True
  )


# -- vjp / jvp ------------------------------------------------------------------


def _refuse_graph_updates(name, graph, graph_updates) -> bool:
  """Resolved graph mode of ``nnx.vjp`` / ``nnx.jvp``; graph mode with
  graph updates is refused as under Flax 0.12.8."""
  g = resolve_graph(graph)
  if g and _updates(graph_updates):
    raise NotImplementedError(
      f'graph-mode with graph_updates is not supported for nnx.{name}: '
      f'call nnx.{name}(..., graph=False) or nnx.{name}(..., '
      'graph_updates=False); Variable updates still reach the inputs.'
    )
  return g


class SimpleVjpFn(_SimpleFn):
  """The function ``nnx.vjp`` linearizes: ``f`` on fresh copies of the
  primals, returning ``(out, (aux, variable_updates))``."""

  name = 'nnx.vjp'

  def __call__(self, *primals):
    return self._run(primals)


class SimpleJvpFn(_SimpleFn):
  """The function ``nnx.jvp`` pushes tangents through: ``f`` on fresh
  copies of the primals, returning ``(out, (aux, variable_updates))``."""

  name = 'nnx.jvp'

  def __call__(self, *primals):
    return self._run(primals)


def vjp(
  f=MISSING,
  *primals,
  has_aux=False,
  reduce_axes=(),
  graph=None,
  graph_updates=None,
):
  """Lifted ``jax.vjp``; Variable updates made by ``f`` are kept.

  Runs without graph updates (``graph=False`` or ``graph_updates=False``);
  graph mode with updates raises ``NotImplementedError``. Returns
  ``(primals_out, vjp_fn)`` (plus ``aux`` with ``has_aux``); ``vjp_fn``
  gives the cotangents of the primals in their own structure (Modules for
  Modules).

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> class M(nnx.Module):
  ...   def __init__(self):
  ...     self.w = nnx.Param(jnp.array(3.0))
  >>> out, vjp_fn = nnx.vjp(lambda m: m.w * m.w, M(), graph=False)
  >>> (ct,) = vjp_fn(jnp.array(1.0))
  >>> float(out), float(ct.w[...])
  (9.0, 6.0)
  """
  if f is MISSING:
    return lambda fn: functools.partial(
      vjp,
      fn,
      has_aux=has_aux,
      reduce_axes=reduce_axes,
      graph=graph,
      graph_updates=graph_updates,
    )
  g = _refuse_graph_updates('vjp', graph, graph_updates)
  _refuse_reduce_axes('vjp', reduce_axes)
  if not primals:
    return functools.partial(
      vjp, f, has_aux=has_aux, graph=graph, graph_updates=graph_updates
    )
  pure, outer = _simple_pure(primals, g, 'nnx.vjp')
  out, vjp_fn, (aux, updates) = jax.vjp(
    SimpleVjpFn(f, has_aux, g), *pure, has_aux=True
  )
  common.store_values(outer, updates)

  def user_vjp(ct):
    return _simple_out(vjp_fn(ct), g)

  if has_aux:
    return out, user_vjp, _simple_out(aux, g)
  return out, user_vjp


def jvp(
  f=MISSING,
  primals=MISSING,
  tangents=MISSING,
  *,
  has_aux=False,
  graph=None,
  graph_updates=None,
):
  """Lifted ``jax.jvp``: returns ``(primals_out, tangent_out)`` (plus
  ``aux``). Runs without graph updates (``graph=False`` or
  ``graph_updates=False``); graph mode with updates raises
  ``NotImplementedError``. Tangents of Modules are Modules of tangents.
  """
  if f is MISSING:
    return lambda fn: functools.partial(
      jvp, fn, has_aux=has_aux, graph=graph, graph_updates=graph_updates
    )
  if primals is MISSING:
    return functools.partial(
      jvp, f, has_aux=has_aux, graph=graph, graph_updates=graph_updates
    )
  g = _refuse_graph_updates('jvp', graph, graph_updates)
  primals = tuple(primals)
  tangents = tuple(tangents)
  pure, outer = _simple_pure(primals, g, 'nnx.jvp')
  tpure = extract.to_tree(tangents) if g else tangents
  out, t_out, (aux, updates) = jax.jvp(
    SimpleJvpFn(f, has_aux, g), pure, tpure, has_aux=True
  )
  common.store_values(outer, updates)
  if has_aux:
    return out, t_out, _simple_out(aux, g)
  return out, t_out


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
  pure form of the arguments (NodeStates for graph nodes)."""

  def __init__(
    self, bwd, tree_node_args, *, graph_args=None, static_argnums=()
  ) -> None:
    self.bwd = bwd
    self.tree_node_args = tree_node_args
    self.graph_args = graph_args
    self.static_argnums = frozenset(static_argnums)

  def __call__(self, *args):
    (res, nondiff), g = args
    tangents = self.bwd(res, g)
    if not isinstance(tangents, tuple):
      tangents = (tangents,)
    out = []
    for i, a in enumerate(self.tree_node_args):
      if i in self.static_argnums:
        out.append(None)
        continue
      t = tangents[i]
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
        vals.append(_zero_cotangent(slot.raw_value))
      else:
        vals.append(tv.raw_value if isinstance(tv, Variable) else tv)
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

  def input_updates(self, ig):
    ga = self.graph_args
    _, values = ig.updates()
    out = []
    for a in self.args:
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
    return self.nodedefs.input_updates(ig), out


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
    return (self.nodedefs.input_updates(ig), out), (res, pure_args[1])


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
        self.bwd, tuple(pure_args), graph_args=ga, static_argnums=int_nondiff
      ),
    )
    updates, out = pure_f(diff, nondiff)
    for k_arg, st in enumerate(updates):
      if st is None:
        continue
      paths, leaves = st._flat_items()
      a = args[k_arg]
      graphlib.update(a, State._from_flat(paths, leaves))
    return out


@common.options_first
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
  g = resolve_graph(graph)
  if g and _updates(graph_updates):
    return CustomVjp(fun, nondiff_argnums)
  common.check_tree_mode_args(nondiff_argnums, name='nnx.custom_vjp')
  return SimpleCustomVjp(fun, nondiff_argnums, g)


class _SimpleCall:
  """Runs a user function of ``nnx.custom_vjp`` without graph updates on
  the arguments rebuilt from their pytree form (``nnx.from_tree`` in
  graph mode)."""

  def __init__(self, fn, graph: bool) -> None:
    self._fn = fn
    self.graph = graph

  def _args(self, args):
    return extract.from_tree(args) if self.graph else args


class SimpleCustomVjpFn(_SimpleCall):
  """The primal function of :class:`SimpleCustomVjp`."""

  def __init__(self, f, graph: bool) -> None:
    super().__init__(f, graph)
    self.f = f

  def __call__(self, *args):
    return self.f(*self._args(args))


class SimpleFwdFn(_SimpleCall):
  """The forward rule of :class:`SimpleCustomVjp`: ``fwd`` on the rebuilt
  arguments, returning ``(out, residuals)``."""

  def __init__(self, fwd, graph: bool) -> None:
    super().__init__(fwd, graph)
    self.fwd = fwd

  def __call__(self, *args):
    out, res = self.fwd(*self._args(args))
    if self.graph:
      res = extract.to_tree(res)
    return out, res


class SimpleBwdFn(_SimpleCall):
  """The backward rule of :class:`SimpleCustomVjp`: ``bwd(*nondiff, res,
  g)`` with graph nodes rebuilt, its cotangents (Modules for Modules) put
  back in pytree form."""

  def __init__(self, bwd, graph: bool) -> None:
    super().__init__(bwd, graph)
    self.bwd = bwd

  def __call__(self, *args):
    if self.graph:
      args = extract.from_tree(args)
    cts = self.bwd(*args)
    return extract.to_tree(cts) if self.graph else cts


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
      SimpleCustomVjpFn(fun, self.graph), nondiff_argnums=self.nondiff_argnums
    )
    self.fwd = None
    self.bwd = None

  def defvjp(self, fwd, bwd, symbolic_zeros=False):
    self.fwd = fwd
    self.bwd = bwd
    self._jax.defvjp(
      SimpleFwdFn(fwd, self.graph),
      SimpleBwdFn(bwd, self.graph),
      symbolic_zeros=symbolic_zeros,
    )

  def __call__(self, *args, **kwargs):
    if self.fwd is None:
      raise ValueError(
        'nnx.custom_vjp function called before defvjp(fwd, bwd).'
      )
    args = _positional(self.fun, args, kwargs)
    if self.graph:
      args = tuple(
        a if i in self.nondiff_argnums else extract.to_tree(a)
        for i, a in enumerate(args)
      )
    return self._jax(*args)


# -- remat ------------------------------------------------------------------------


class SimpleRematFn:
  """The function ``nnx.remat`` checkpoints without graph updates: ``f`` on
  fresh copies of the arguments (rebuilt with ``nnx.from_tree`` when
  ``graph``), returning ``(out, variable_updates)``; input Variables may
  not be returned."""

  def __init__(self, f, graph: bool) -> None:
    self.f = f
    self.graph = graph

  def __call__(self, *args, **kwargs):
    (args, kwargs), _ = _simple_enter((args, kwargs), self.graph)
    inputs = varflow.args_paths((args, kwargs))
    out = self.f(*args, **kwargs)
    updates = _simple_leave(inputs, out, 'nnx.remat')
    if self.graph:
      out = extract.to_tree(out)
    return out, updates


@common.options_first
def remat(
  f=MISSING,
  *,
  prevent_cse=True,
  static_argnums=(),
  policy=None,
  graph=None,
  graph_updates=None,
):
  """Lifted ``jax.checkpoint`` (``jax.remat``): ``f``'s intermediates are
  recomputed on the backward pass instead of stored.

  In graph mode with graph updates, structure changes made inside come
  back as with :func:`nnx.jit`; without graph updates (``graph=False`` or
  ``graph_updates=False``) Variable values flow back.

  >>> from flax import nnx
  >>> import jax, jax.numpy as jnp
  >>> m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
  >>> f = nnx.remat(lambda m, x: jnp.sum(jnp.sin(m(x))), graph=False)
  >>> y = f(m, jnp.ones((1, 2)))
  >>> y.shape
  ()
  """
  if isinstance(static_argnums, int):
    static_argnums = (static_argnums,)
  static_argnums = tuple(static_argnums)

  @functools.wraps(f)
  def wrapper(*args, **kwargs):
    g = resolve_graph(graph)
    if g and _updates(graph_updates):
      return _remat_graph(f, prevent_cse, static_argnums, policy, args, kwargs)
    statics = {i: args[i] for i in static_argnums if i < len(args)}
    dyn = tuple(None if i in statics else a for i, a in enumerate(args))
    pure, outer = _simple_pure((dyn, kwargs), g, 'nnx.remat')
    pure_args, pure_kwargs = pure

    def inner(*a, **kw):
      a = tuple(statics.get(i, x) for i, x in enumerate(a))
      return f(*a, **kw)

    out, updates = jax.checkpoint(
      SimpleRematFn(inner, g), prevent_cse=prevent_cse, policy=policy
    )(*pure_args, **pure_kwargs)
    common.store_values(outer, updates)
    return _simple_out(out, g)

  return wrapper


def _remat_graph(f, prevent_cse, static_argnums, policy, args, kwargs):
  from flax.nnx.transforms.general import lift

  statics = {i: args[i] for i in static_argnums if i < len(args)}
  dyn = tuple(None if i in statics else a for i, a in enumerate(args))

  def inner(*a, **kw):
    a = tuple(statics.get(i, x) for i, x in enumerate(a))
    return f(*a, **kw)

  return lift(
    lambda pf: jax.checkpoint(pf, prevent_cse=prevent_cse, policy=policy),
    inner,
    dyn,
    kwargs,
    graph=True,
  )


checkpoint = remat


def __getattr__(name):
  # resolve_kwargs lives with the other general transforms
  if name == 'resolve_kwargs':
    from flax.nnx.transforms.transforms import resolve_kwargs

    return resolve_kwargs
  raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
