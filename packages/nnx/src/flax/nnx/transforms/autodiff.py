"""grad, value_and_grad, vjp, jvp and custom_vjp over graph nodes."""

from flax.nnx.transforms.transforms import resolve_kwargs as resolve_kwargs
from flax.nnx.transforms.general import lift
from flax.nnx.transforms.general import lift_tree
import collections
import dataclasses
import inspect
import functools
import typing as tp

import jax
import jax.numpy as jnp

from flax.nnx import filterlib
from flax.nnx._common import MISSING, resolve_graph
from flax.nnx._common import Missing as Missing
from flax.nnx.statelib import State as State
from flax.nnx.statelib import node_state
from flax.nnx.extract import labeled as labeled
from flax.nnx.transforms.engine import _fns, _prefix, common, treemode, varflow
from flax.nnx.transforms.engine.varflow import (
  arg_index_of_positions as _arg_index_of_positions,
)
from flax.nnx.transforms.engine.varflow import resolved_updates as _updates
from flax.nnx.transforms.engine.types import DiffState
from flax.nnx.variablelib import Param, Variable


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

  __signature__ = _fns.CallSignature(
    _fns.signature_of(('diff_trees', inspect.Parameter.POSITIONAL_ONLY))
  )
  __wrapped__ = _fns.UserFunction()

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
    # only the values the function changed leave (as aux)
    values, written = ig.written(changed, values)
    aux_static, aux_leaves = ig.flatten_out(aux, check_trace=False)
    self.out_static = (aux_static, changed, written)
    return loss, (aux_leaves, values)


class _RootOr:
  """A differentiated argument's filter: a Variable root (path ``()``)
  whatever the filter, as in Flax 0.12.8, otherwise ``pred``. Equal for
  equal filters, so that the cached filter masks of the arguments' flat
  views are found again by a new ``nnx.grad`` of the same filter."""

  __slots__ = ('pred',)

  def __init__(self, pred):
    self.pred = pred

  def __call__(self, path, x):
    return not path or self.pred(path, x)

  def __eq__(self, other):
    return type(other) is _RootOr and self.pred == other.pred

  def __hash__(self):
    return hash((_RootOr, self.pred))


def _diff_predicates(filt) -> tuple:
  """The one-predicate filter group of a differentiated argument."""
  return (_RootOr(filterlib.to_predicate(filt)),)


def _grad_graph(f, argnums, has_aux, holomorphic, allow_int, with_value):
  single, specs = _diff_specs(argnums)
  # the filter predicates of each differentiated argument, made once (the
  # masks of the arguments' flat views are cached per predicates)
  predicates = {i: _diff_predicates(filt) for i, filt in specs}
  needed = max((i + 1 for i, _ in specs if i >= 0), default=0)

  def wrapper(*args):
    if len(args) < needed:
      # JAX's message for too few positional arguments
      nums = tuple(i for i, _ in specs)
      raise TypeError(
        f'differentiating with respect to argnums={nums[0] if single else nums}'
        f' requires at least {needed} positional arguments to be passed by '
        f'the caller, but got only {len(args)} positional arguments.'
      )
    for i, _ in specs:
      if i < -len(args):
        # JAX's message for a negative index out of range
        raise ValueError(
          'Positional argument indices, e.g. for `static_argnums`, must have '
          'value greater than or equal to -len(args) and less than '
          f'len(args), but got value {i} for len(args) == {len(args)}.'
        )
    arg_of = _arg_index_of_positions(args)

    def predicates_for(k, pos):
      return predicates.get(arg_of[pos])

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
    aux_static, changed, written = fn.out_static
    ga.write_back((changed, values), written=written, metadata=True)
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
      # a Variable's gradient is a Variable (as its state is)
      return node_state(paths, leaves)

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
# cross the JAX transform in the pytree mode shared by every transform
# (:class:`_fns.PytreeMode`): tree mode flattens them as JAX does (shared
# Variables are an error), graph mode goes through ``nnx.to_tree`` (shared
# references kept). Inside, the function gets fresh objects; the final
# values of the input Variables flow back, structure changes stay inside,
# and an input Variable may not be returned.


@dataclasses.dataclass(eq=False)
class _SimpleDiffFn(_fns.PytreeMode):
  """Runs the user function on fresh objects inside a JAX transform and
  returns ``(out, (aux, updates))`` (``has_aux`` splits ``out``)."""

  f: tp.Callable[..., tp.Any]
  has_aux: bool
  graph: bool

  def _run(self, pure, pure_kwargs=None):
    (args, kwargs), entered = self.enter((tuple(pure), dict(pure_kwargs or {})))
    out = self.f(*args, **kwargs)
    main, aux = out if self.has_aux else (out, None)
    self.outputs(entered, out)
    return main, (self.pure(aux), entered.values())


@dataclasses.dataclass(eq=False)
class SimpleGradFn(_SimpleDiffFn):
  """The function ``nnx.grad`` differentiates when it runs without graph
  updates: ``f`` on fresh copies of the arguments, returning ``(loss, (aux,
  variable_updates))``."""

  name: tp.ClassVar[str] = 'grad'
  __signature__ = _fns.CallSignature()
  __wrapped__ = _fns.UserFunction()

  def __call__(self, *args, **kwargs):
    # keyword arguments are passed through, not differentiated
    return self._run(args, kwargs)


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

  def wrapper(*args, **kwargs):
    outer = fn.variables((args, kwargs))
    pure_args, pure_kwargs = fn.pure((args, kwargs))
    res = lifted(*pure_args, **pure_kwargs)
    if with_value:
      (loss, (aux, updates)), grads = res
    else:
      grads, (aux, updates) = res
      loss = None
    treemode.store_values(outer, updates)
    grads = fn.result(grads)
    aux = fn.result(aux)
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
  _prefix.check_all(
    'value_and_grad' if with_value else 'grad',
    graph,
    graph_updates,
    argnums=argnums,
  )

  # the modes in force now are the function's (as every decorator
  # transform); its differentiating function is made once
  g, updates = common.modes_now(graph, graph_updates)
  updates = g and updates
  if updates:
    inner = _grad_graph(f, argnums, has_aux, holomorphic, allow_int, with_value)
  else:
    inner = _grad_simple(
      f, argnums, has_aux, holomorphic, allow_int, g, with_value
    )

  @functools.wraps(f)
  def wrapper(*args, **kwargs):
    if g:
      _prefix.check_aliasing(
        args, _argnums_prefix(argnums, len(args), None if updates else False)
      )
    if updates:
      # graph mode differentiates positional arguments only
      args = varflow.positional_args(f, args, kwargs)
      kwargs = {}
    return inner(*args, **kwargs)

  return wrapper


def _argnums_prefix(argnums, n, other):
  """A prefix of ``n`` positional arguments: True for the differentiated
  ones (their DiffState where given), ``other`` for the rest."""
  nums = (argnums,) if isinstance(argnums, (int, DiffState)) else argnums
  out = [other] * n
  for a in nums:
    i = a.argnum if isinstance(a, DiffState) else a
    if isinstance(i, int) and -n <= i < n:
      out[i] = a if isinstance(a, DiffState) else True
  return tuple(out)


def _refuse_reduce_axes(name, reduce_axes):
  """``reduce_axes`` is gone from JAX's autodiff; a non-empty value is an
  error, as under Flax 0.12.8."""
  if reduce_axes:
    raise NotImplementedError(
      f'reduce_axes argument to {name} is deprecated: JAX no longer reduces '
      f'gradients over named axes; call nnx.{name} without reduce_axes and '
      'reduce with jax.lax.psum inside the function instead.'
    )


def _reduce_axes_check(name):
  """``options_first`` check refusing ``reduce_axes`` at decoration."""

  def check(reduce_axes=(), **_):
    _refuse_reduce_axes(name, reduce_axes)

  return check


@common.options_first(check=_reduce_axes_check('grad'), no_methods=True)
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
  >>> float(g['w'][...])
  6.0
  """
  _refuse_reduce_axes('grad', reduce_axes)
  return _make_grad(
    f, argnums, has_aux, holomorphic, allow_int, graph, graph_updates, False
  )


@common.options_first(
  check=_reduce_axes_check('value_and_grad'), no_methods=True
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


@dataclasses.dataclass(eq=False)
class SimpleVjpFn(_SimpleDiffFn):
  """The function ``nnx.vjp`` linearizes: ``f`` on fresh copies of the
  primals, returning ``(out, (aux, variable_updates))``."""

  name: tp.ClassVar[str] = 'vjp'

  def __call__(self, *primals):
    return self._run(primals)


@dataclasses.dataclass(eq=False)
class SimpleJvpFn(_SimpleDiffFn):
  """The function ``nnx.jvp`` pushes tangents through: ``f`` on fresh
  copies of the primals, returning ``(out, (aux, variable_updates))``."""

  name: tp.ClassVar[str] = 'jvp'

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
  fn = SimpleVjpFn(f, has_aux, g)
  outer = fn.variables((primals, {}))
  out, vjp_fn, (aux, updates) = jax.vjp(fn, *fn.pure(primals), has_aux=True)
  treemode.store_values(outer, updates)

  def user_vjp(ct):
    return fn.result(vjp_fn(ct))

  if has_aux:
    return out, user_vjp, fn.result(aux)
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
  fn = SimpleJvpFn(f, has_aux, g)
  outer = fn.variables((primals, {}))
  out, t_out, (aux, updates) = jax.jvp(
    fn, fn.pure(primals), fn.pure(tangents), has_aux=True
  )
  treemode.store_values(outer, updates)
  if has_aux:
    return out, t_out, fn.result(aux)
  return out, t_out


# -- remat ------------------------------------------------------------------------


@dataclasses.dataclass(eq=False)
class SimpleRematFn(_fns.SimpleFn):
  """The function ``nnx.remat`` checkpoints without graph updates: ``f`` on
  fresh copies of the arguments (rebuilt with ``nnx.from_tree`` when
  ``graph``), returning ``(out, variable_updates)``; input Variables may
  not be returned."""

  name: tp.ClassVar[str] = 'remat'


@common.options_first(no_methods=True)
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
  >>> class Scale(nnx.Module):
  ...   def __init__(self):
  ...     self.w = nnx.Param(jnp.full((2,), 0.5))
  ...   def __call__(self, x):
  ...     return x * self.w[...]
  >>> m = Scale()
  >>> f = nnx.remat(lambda m, x: jnp.sum(jnp.sin(m(x))), graph=False)
  >>> y = f(m, jnp.ones(2))
  >>> y.shape
  ()
  """
  if isinstance(static_argnums, int):
    static_argnums = (static_argnums,)
  static_argnums = tuple(static_argnums)
  # the modes in force now are the function's
  g, updates = common.modes_now(graph, graph_updates)

  @functools.wraps(f)
  def wrapper(*args, **kwargs):
    if g and updates:
      # graph mode passes positional arguments only
      args = varflow.positional_args(f, args, kwargs)
      return _remat_graph(f, prevent_cse, static_argnums, policy, args, {})

    statics = {i: args[i] for i in static_argnums if i < len(args)}
    dyn = tuple(None if i in statics else a for i, a in enumerate(args))

    def inner(*a, **kw):
      a = tuple(statics.get(i, x) for i, x in enumerate(a))
      return f(*a, **kw)

    _fns.name_after(inner, f)  # JAX's messages name the user function
    return lift_tree(
      lambda pf: jax.checkpoint(pf, prevent_cse=prevent_cse, policy=policy),
      SimpleRematFn(inner, g),
      dyn,
      kwargs,
    )

  return wrapper


def _remat_graph(f, prevent_cse, static_argnums, policy, args, kwargs):

  statics = {i: args[i] for i in static_argnums if i < len(args)}
  dyn = tuple(None if i in statics else a for i, a in enumerate(args))

  def inner(*a, **kw):
    a = tuple(statics.get(i, x) for i, x in enumerate(a))
    return f(*a, **kw)

  _fns.name_after(inner, f)  # JAX's messages name the user function
  return lift(
    lambda pf: jax.checkpoint(pf, prevent_cse=prevent_cse, policy=policy),
    inner,
    dyn,
    kwargs,
    graph=True,
  )


checkpoint = remat


from flax.nnx.transforms.customvjp import BwdFn as BwdFn  # noqa: E402
from flax.nnx.transforms.customvjp import CustomVjp as CustomVjp  # noqa: E402
from flax.nnx.transforms.customvjp import (  # noqa: E402
  CustomVjpFnWrapper as CustomVjpFnWrapper,
)
from flax.nnx.transforms.customvjp import FwdFn as FwdFn  # noqa: E402
from flax.nnx.transforms.customvjp import SimpleBwdFn as SimpleBwdFn  # noqa: E402
from flax.nnx.transforms.customvjp import (  # noqa: E402
  SimpleCustomVjp as SimpleCustomVjp,
)
from flax.nnx.transforms.customvjp import (  # noqa: E402
  SimpleCustomVjpFn as SimpleCustomVjpFn,
)
from flax.nnx.transforms.customvjp import SimpleFwdFn as SimpleFwdFn  # noqa: E402
from flax.nnx.transforms.customvjp import custom_vjp as custom_vjp  # noqa: E402
