"""Generic lifting of JAX transforms over graph nodes, and the control-flow
transforms (cond, switch, while_loop, fori_loop), eval_shape and remat."""

import functools

import jax

from flax.nnx._common import MISSING, graph_updates_default, resolve_graph
from flax.nnx._common import Missing as Missing
from flax.nnx.transforms import common


def graph_with_updates(graph, graph_updates) -> bool:
  """Whether a transform runs in graph mode propagating graph updates
  (structure changes, shared references, input objects returned as
  themselves). Otherwise it works on pytrees: Variable values still flow
  back to the inputs, but outputs are new objects and structure changes
  made inside stay inside."""
  if not resolve_graph(graph):
    return False
  if graph_updates is None:
    graph_updates = graph_updates_default()
  return bool(graph_updates)


def lift(
  transform,
  f,
  args,
  kwargs=None,
  *,
  graph=None,
  write_back=True,
  predicates_for=None,
):
  """Runs ``transform(pure_f)(pure_args)`` where ``pure_f`` rebuilds the
  graph nodes, calls ``f`` and returns outputs plus input updates."""
  kwargs = kwargs or {}
  if not resolve_graph(graph):
    return lift_tree(transform, f, args, kwargs, write_back=write_back)
  ga = common.GraphArgs((args, kwargs), predicates_for=predicates_for)
  pure = ga.pure()
  cell = {}

  def pure_f(pure):
    ig = common.InnerGraph(ga.static, ga.masks(), pure)
    a, kw = ig.args
    out = f(*a, **kw)
    changed, values = ig.updates()
    out_static, out_leaves = ig.flatten_out(out)
    cell['static'] = (out_static, changed)
    return out_leaves, values

  out_leaves, values = transform(pure_f)(pure)
  out_static, changed = cell['static']
  if write_back:
    ga.write_back((changed, values))
  return common.unflatten_out(out_static, out_leaves, ga)


def lift_tree(transform, f, args, kwargs, *, write_back=True):
  variables = common.tree_variables((args, kwargs))

  leaves, treedef = jax.tree_util.tree_flatten((args, kwargs))

  def pure_f(leaves):
    # objects are rebuilt here, inside the trace of the transform
    a, kw = treedef.unflatten(leaves)
    out = f(*a, **kw)
    return out, [v.raw_value for v in common.tree_variables((a, kw))]

  out, new = transform(pure_f)(leaves)
  if write_back:
    common.store_values(variables, new)
  return out


def eval_shape(f, *args, graph=None, graph_updates=None, **kwargs):
  """Lifted ``jax.eval_shape``: returns abstract outputs (Modules hold
  ``jax.ShapeDtypeStruct`` values) without running any computation.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> class M(nnx.Module):
  ...   def __init__(self):
  ...     self.w = nnx.Param(jnp.ones((2, 3)))
  >>> nnx.eval_shape(lambda: M()).w.value.shape
  (2, 3)
  """
  return lift(
    lambda pf: functools.partial(jax.eval_shape, pf),
    f,
    args,
    kwargs,
    graph=graph_with_updates(graph, graph_updates),
    write_back=False,
  )


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
  """Lifted ``jax.checkpoint`` (a.k.a. ``jax.remat``)."""
  if isinstance(static_argnums, int):
    static_argnums = (static_argnums,)

  @functools.wraps(f)
  def wrapper(*args, **kwargs):
    statics = {i: args[i] for i in static_argnums}
    dyn = tuple(None if i in statics else a for i, a in enumerate(args))

    def g(*a, **kw):
      a = tuple(statics.get(i, x) for i, x in enumerate(a))
      return f(*a, **kw)

    return lift(
      lambda pf: jax.checkpoint(pf, prevent_cse=prevent_cse, policy=policy),
      g,
      dyn,
      kwargs,
      graph=graph_with_updates(graph, graph_updates),
    )

  return wrapper


checkpoint = remat


def cond(pred, true_fun, false_fun, *operands, graph=None, graph_updates=None):
  """``jax.lax.cond`` for branches taking Modules / graph nodes."""
  return switch(
    jax.numpy.asarray(pred, dtype=jax.numpy.int32),
    (false_fun, true_fun),
    *operands,
    graph=graph,
    graph_updates=graph_updates,
  )


def switch(index, branches, *operands, graph=None, graph_updates=None):
  """``jax.lax.switch`` for branches taking Modules / graph nodes.

  With graph updates (graph mode's default) attributes the branches add
  or remove (the same in every branch) appear on the operands afterwards;
  with ``graph_updates=False`` or ``graph=False`` only Variable values
  flow back.
  """
  branches = tuple(branches)
  if not graph_with_updates(graph, graph_updates):
    variables = common.tree_variables(operands)

    def make(b):
      def pf(ops):
        out = b(*ops)
        return out, [v.raw_value for v in common.tree_variables(ops)]

      return pf

    out, new = jax.lax.switch(index, [make(b) for b in branches], operands)
    common.store_values(variables, new)
    return out

  ga = common.GraphArgs(operands)
  pure = ga.pure()
  cell = {}

  def make(b):
    def pf(pure):
      ig = common.InnerGraph(ga.static, None, pure)
      out = b(*ig.args)
      changed, values = ig.updates()
      if 'changed' in cell and cell['changed'] != changed:
        raise ValueError(
          'The branches of nnx.cond / nnx.switch changed the graph '
          'structure of the operands differently (an attribute added or '
          'removed in one branch only); make the same change in every '
          'branch or create attributes before the call.'
        )
      cell['changed'] = changed
      out_static, out_leaves = ig.flatten_out(out)
      cell['static'] = out_static
      return out_leaves, values

    return pf

  out_leaves, values = jax.lax.switch(index, [make(b) for b in branches], pure)
  ga.write_back((cell['changed'], values))
  return common.unflatten_out(cell['static'], out_leaves, ga)


def _loop_pure(ga, body, name):
  """Body over pure carries with the same graph structure."""

  def pure_body(*prefix_and_pure):
    *prefix, pure = prefix_and_pure
    ig = common.InnerGraph(ga.static, None, pure)
    out = body(*prefix, ig.args)
    ga_out = common.GraphArgs(out)
    if ga_out.static != ga.static:
      raise ValueError(
        f'nnx.{name}: the body must return a value with the same structure '
        'and the same graph (reference) structure as its input; an '
        'attribute of a graph node was added, removed or replaced, or a '
        'different object was returned.'
      )
    return ga_out.pure()

  return pure_body


def _finish_loop(ga, pure_out):
  leaves = ga.treedef.flatten_up_to(pure_out)
  values = [leaves[pos].groups[0] for pos in ga.positions]
  ga.write_back((None, values))
  for k, pos in enumerate(ga.positions):
    leaves[pos] = ga.roots[k].obj
  return ga.treedef.unflatten(leaves)


def while_loop(cond_fun, body_fun, init_val, *, graph=None, graph_updates=None):
  """``jax.lax.while_loop`` whose carry may hold Modules / graph nodes.

  The body must keep the reference structure of the carry. With
  ``graph_updates=False`` (or ``graph=False``) the carry is a pytree: the
  result holds new objects and the Variables of ``init_val`` get the final
  values.
  """
  if not graph_with_updates(graph, graph_updates):
    return _tree_loop(
      lambda c, b, v: jax.lax.while_loop(c, b, v),
      cond_fun,
      body_fun,
      init_val,
    )
  ga = common.GraphArgs(init_val)

  def pure_cond(pure):
    ig = common.InnerGraph(ga.static, None, pure)
    return cond_fun(ig.args)

  pure_out = jax.lax.while_loop(
    pure_cond, _loop_pure(ga, body_fun, 'while_loop'), ga.pure()
  )
  return _finish_loop(ga, pure_out)


def fori_loop(
  lower,
  upper,
  body_fun,
  init_val,
  *,
  unroll=None,
  graph=None,
  graph_updates=None,
):
  """``jax.lax.fori_loop`` whose carry may hold Modules / graph nodes
  (``graph_updates=False`` / ``graph=False``: as in :func:`while_loop`)."""
  if not graph_with_updates(graph, graph_updates):
    variables = common.tree_variables(init_val)

    def pb(i, v):
      out = body_fun(i, v)
      return out

    out = jax.lax.fori_loop(lower, upper, pb, init_val, unroll=unroll)
    common.store_values(variables, _raw_values(out))
    return out
  ga = common.GraphArgs(init_val)
  pure_out = jax.lax.fori_loop(
    lower,
    upper,
    _loop_pure(ga, body_fun, 'fori_loop'),
    ga.pure(),
    unroll=unroll,
  )
  return _finish_loop(ga, pure_out)


def _tree_loop(loop, cond_fun, body_fun, init_val):
  variables = common.tree_variables(init_val)
  out = loop(cond_fun, body_fun, init_val)
  common.store_values(variables, _raw_values(out))
  return out


def _raw_values(tree):
  return [v.raw_value for v in common.tree_variables(tree)]


class _Carrier:
  """A pytree without leaves carrying hashable structure through a JAX
  transform (as auxiliary data)."""

  __slots__ = ('static',)

  def __init__(self, static):
    self.static = static


jax.tree_util.register_pytree_node(
  _Carrier, lambda c: ((), c.static), lambda static, _: _Carrier(static)
)


class _Result:
  """Outputs of a :func:`merge_inputs` function: leaves and updates as
  children, their structure as auxiliary data."""

  __slots__ = ('leaves', 'static')

  def __init__(self, leaves, static):
    self.leaves = leaves
    self.static = static


jax.tree_util.register_pytree_node(
  _Result, lambda r: (r.leaves, r.static), lambda s, c: _Result(c, s)
)


@common.options_first
def split_inputs(f=MISSING, *, ctxtag='split_merge_inputs'):
  """Outer half of a manual lift: replaces the graph nodes of the
  arguments by pytrees of their Variable values before calling ``f`` (a
  JAX-transformed function wrapped by :func:`merge_inputs` with the same
  ``ctxtag``), then applies the Variable and structure updates it reports
  and rebuilds graph nodes in its outputs.

  >>> import jax
  >>> import jax.numpy as jnp
  >>> from flax import nnx
  >>> from flax.nnx.transforms.general import merge_inputs, split_inputs
  >>> class Counter(nnx.Module):
  ...   def __init__(self):
  ...     self.n = nnx.BatchStat(jnp.array(0))
  >>> @split_inputs
  ... @jax.jit
  ... @merge_inputs
  ... def step(c):
  ...   c.n[...] += 1
  ...   return c.n[...]
  >>> c = Counter()
  >>> int(step(c)), int(c.n[...])
  (1, 1)
  """

  @functools.wraps(f)
  def wrapper(*args, **kwargs):
    if ctxtag in kwargs:
      raise TypeError(f'split_inputs: keyword {ctxtag!r} is reserved.')
    ga = common.GraphArgs((args, kwargs))
    pure_args, pure_kwargs = ga.pure()
    result = f(*pure_args, **pure_kwargs, **{ctxtag: _Carrier(ga.static)})
    if not isinstance(result, _Result):
      raise ValueError(
        f'split_inputs: the function did not return the result of a '
        f'merge_inputs function with ctxtag={ctxtag!r}; wrap the inner '
        'function with merge_inputs (same ctxtag).'
      )
    out_static, changed = result.static
    out_leaves, values = result.leaves
    ga.write_back((changed, values))
    return common.unflatten_out(out_static, out_leaves, ga)

  return wrapper


@common.options_first
def merge_inputs(f=MISSING, *, ctxtag='split_merge_inputs'):
  """Inner half of a manual lift (see :func:`split_inputs`): rebuilds the
  graph nodes of the arguments, calls ``f`` and returns its outputs with
  the updates of the inputs."""

  @functools.wraps(f)
  def wrapper(*args, **kwargs):
    carrier = kwargs.pop(ctxtag, None)
    if not isinstance(carrier, _Carrier):
      raise ValueError(
        f'merge_inputs: called without the structure that split_inputs '
        f'passes (ctxtag={ctxtag!r}); call it through a split_inputs '
        'function with the same ctxtag.'
      )
    ig = common.InnerGraph(carrier.static, None, (args, kwargs))
    a, kw = ig.args
    out = f(*a, **kw)
    changed, values = ig.updates()
    out_static, out_leaves = ig.flatten_out(out)
    return _Result((out_leaves, values), (out_static, changed))

  return wrapper
