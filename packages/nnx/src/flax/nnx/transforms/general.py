"""Generic lifting of JAX transforms over graph nodes, and the control-flow
transforms (cond, switch, while_loop, fori_loop), eval_shape and remat."""

from flax.nnx.transforms import _scan_checks
import dataclasses
import functools
import typing as tp

import jax

from flax.nnx._common import MISSING, graph_updates_default, resolve_graph
from flax.nnx._common import Missing as Missing
from flax.nnx import extract, graphctx
from flax.nnx.transforms.engine import _fns, common, treemode, varflow
from flax.nnx.transforms.engine import refout
from flax.nnx.transforms.engine._fns import mode_text


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
  inner_fn=_fns.InnerFn,
  simple_fn=_fns.SimpleFn,
  user_graph=None,
):
  """Runs ``transform(fn)(*pure_args, **pure_kwargs)``.

  In graph mode ``fn`` is ``inner_fn(f, graph_args=...)`` (an
  :class:`~._fns.InnerFn`: it rebuilds the graph nodes, calls ``f`` and
  returns outputs plus input updates); otherwise ``simple_fn(f,
  user_graph)`` gets the arguments as pytrees (``user_graph``: the
  ``graph`` setting of the call, for messages).
  """
  kwargs = kwargs or {}
  if not resolve_graph(graph):
    fn = simple_fn(f, resolve_graph(user_graph))
    return lift_tree(transform, fn, args, kwargs, write_back=write_back)
  ga = common.GraphArgs((args, kwargs), predicates_for=predicates_for)
  pure_args, pure_kwargs = ga.pure()
  fn = inner_fn(f, graph_args=ga)
  cell = {}
  out_leaves, values = transform(_refs_kept(fn, cell))(
    *pure_args, **pure_kwargs
  )
  out_static, changed = fn.out_static
  if cell.get('refs'):
    inputs = jax.tree_util.tree_leaves((pure_args, pure_kwargs))
    values = refout.give(values, inputs)
  if write_back:
    ga.write_back((changed, values), metadata=True)
  return common.unflatten_out(out_static, out_leaves, ga)


def lift_tree(transform, fn, args, kwargs, *, write_back=True):
  """Runs ``transform(fn)(*args, **kwargs)`` for a :class:`~._fns.SimpleFn`
  ``fn`` and writes the Variable values it returns back into the
  arguments."""
  variables = fn.variables((args, kwargs))  # refuses sharing in tree mode
  pure_args, pure_kwargs = fn.pure((args, kwargs))
  if not write_back:
    return fn.result(transform(fn)(*pure_args, **pure_kwargs))
  cell = {}
  out, new = transform(_refs_kept(fn, cell))(*pure_args, **pure_kwargs)
  if cell.get('refs'):
    new = refout.give(new, jax.tree_util.tree_leaves((pure_args, pure_kwargs)))
  treemode.store_values(variables, new)
  return fn.result(out)


def _refs_kept(fn, cell):
  """``fn`` (returning ``(out, variable_values)``) with the Refs among the
  values (those of ref-mode Variables, updated in place) leaving as
  markers of the arguments they came in as (:mod:`.refout`)."""

  def run(*args, **kwargs):
    out, values = fn(*args, **kwargs)
    values, refs = refout.take(
      values, jax.tree_util.tree_leaves((args, kwargs))
    )
    cell['refs'] = refs or cell.get('refs', False)
    return out, values

  _fns.name_after(run, fn)
  return run


@dataclasses.dataclass(eq=False)
class SimpleEvalShapeFn(_fns.SimpleFn):
  """The function :func:`eval_shape` traces when graph nodes travel as
  pytrees (``graph=False`` or ``graph_updates=False``): ``f``'s output
  only, as nothing is written back. Shared Variables among the inputs are
  refused, as in tree mode; with ``graph_updates=False`` those shared among
  the outputs stay shared. Variables captured from outside may be returned
  (abstract)."""

  name: tp.ClassVar[str] = 'eval_shape'
  shares: tp.ClassVar[bool] = False
  out_check_trace: tp.ClassVar[bool] = False

  @property
  def _out_via_graph(self) -> bool:
    return bool(self.graph)

  def __call__(self, *args, **kwargs):
    (args, kwargs), entered = self.enter((args, kwargs))
    return self.outputs(entered, self.f(*args, **kwargs))


@dataclasses.dataclass(eq=False)
class EvalShapeFn(_fns.InnerFn):
  """The function :func:`eval_shape` traces in graph mode: every object of
  its output is new and abstract, inputs and objects captured from
  outside the trace included (nothing runs, so nothing is shared with the
  caller's objects)."""

  out_inputs_as_refs: tp.ClassVar[bool] = False
  out_check_trace: tp.ClassVar[bool] = False


def eval_shape(f, *args, graph=None, graph_updates=None, **kwargs):
  """Lifted ``jax.eval_shape``: returns abstract outputs (Modules hold
  ``jax.ShapeDtypeStruct`` values) without running any computation.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> class M(nnx.Module):
  ...   def __init__(self):
  ...     self.w = nnx.Param(jnp.ones((2, 3)))
  >>> nnx.eval_shape(lambda: M()).w.shape
  (2, 3)
  """
  common.check_not_bound_method(f, 'eval_shape')
  return lift(
    lambda pf: functools.partial(jax.eval_shape, pf),
    f,
    args,
    kwargs,
    graph=graph_with_updates(graph, graph_updates),
    write_back=False,
    inner_fn=EvalShapeFn,
    simple_fn=SimpleEvalShapeFn,
    user_graph=graph,
  )


def cond(pred, true_fun, false_fun, *operands, graph=None, graph_updates=None):
  """``jax.lax.cond`` for branches taking Modules / graph nodes (see
  :func:`switch`); JAX's messages speak of ``cond``, ``true_fun`` and
  ``false_fun``."""
  return _branches(
    lambda fns, *ops: jax.lax.cond(pred, fns[0], fns[1], *ops),
    (true_fun, false_fun),
    operands,
    graph,
    graph_updates,
  )


def switch(index, branches, *operands, graph=None, graph_updates=None):
  """``jax.lax.switch`` for branches taking Modules / graph nodes.

  With graph updates (graph mode's default) attributes the branches add
  or remove (the same in every branch) appear on the operands afterwards;
  with ``graph_updates=False`` or ``graph=False`` only Variable values
  flow back.
  """
  return _branches(
    lambda fns, *ops: jax.lax.switch(index, fns, *ops),
    tuple(branches),
    operands,
    graph,
    graph_updates,
  )


def _branches(run, branches, operands, graph, graph_updates):
  """Runs ``run(branch_fns, *pure_operands)`` (``jax.lax.cond`` or
  ``jax.lax.switch``) on the branches lifted over graph nodes."""
  if not graph_with_updates(graph, graph_updates):
    fns = [SimpleCondFn(b, resolve_graph(graph)) for b in branches]
    variables = fns[0].variables(operands, 'operands')
    pure = fns[0].pure(operands)
    cell = {}
    out, new = run([_refs_kept(fn, cell) for fn in fns], *pure)
    if cell.get('refs'):
      new = refout.give(new, jax.tree_util.tree_leaves(pure))
    treemode.store_values(variables, new)
    return fns[0].result(out)

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
      # Refs of the operands come back as themselves (refout)
      (out, values), refs = refout.take(
        (out, values), jax.tree_util.tree_leaves(pure)
      )
      cell['refs'] = refs or cell.get('refs', False)
      out_static, out_leaves = ig.flatten_out(out)
      cell['static'] = out_static
      return out_leaves, values

    # JAX names the branch after the user function in its messages
    _fns.name_after(pf, b)
    return pf

  out_leaves, values = run([make(b) for b in branches], pure)
  if cell['refs']:
    inputs = jax.tree_util.tree_leaves(pure)
    values = refout.give(values, inputs)
  ga.write_back((cell['changed'], values), metadata=True)
  out = common.unflatten_out(cell['static'], out_leaves, ga)
  if cell['refs']:
    out = refout.give(out, inputs)
  return out


@dataclasses.dataclass(eq=False)
class SimpleCondFn(_fns.SimpleFn):
  """A branch of :func:`cond` / :func:`switch` as ``jax.lax.switch`` runs
  it when graph nodes travel as pytrees: returns the branch's output and
  the values of the operands' Variables."""

  name: tp.ClassVar[str] = 'cond'

  def __call__(self, *operands):
    operands, entered = self.enter(operands, 'operands')
    out = self.f(*operands)
    return self.outputs(entered, out), entered.values()


@dataclasses.dataclass(eq=False)
class _LoopFn(_fns.InnerFn):
  """Loop functions over a carry whose graph nodes are ``NodeStates``."""

  name: tp.ClassVar[str] = 'while_loop'

  def carry(self, pure_val):
    if self.graph_args is None:  # no graph nodes known: a plain carry
      return pure_val
    return common.InnerGraph(self.graph_args.static, None, pure_val).args

  def pure(self, out, before=None):
    """``out`` with graph nodes as NodeStates; it must hold the Variables
    ``before`` (those of the body's input, read before it ran) in the same
    places."""
    if self.graph_args is None:
      return out
    ga_out = common.GraphArgs(out)
    if ga_out.static[0] != self.graph_args.static[0]:
      # the carry differs outside its graph nodes: JAX's loop raises
      return ga_out.pure()
    same = ga_out.static == self.graph_args.static
    if same and before is not None:
      after = [v for _, v in varflow.variable_paths(out, '')]
      same = len(before) == len(after) and all(
        a is b for a, b in zip(before, after)
      )
    if not same:
      why = (
        'an attribute of a graph node was added, removed or replaced (a new '
        'Variable object included), or a different object was returned. '
        'Update Variables in place (v[...] = ...) instead.'
      )
      if self.name == 'fori_loop':
        # the loop runs as a scan: its carry check (a TypeError)
        raise TypeError(
          'scan body function carry input and carry output must have the '
          f'same pytree structure, but they differ (nnx.fori_loop): {why}'
        )
      raise ValueError(
        f"nnx.{self.name} requires body function's input and output to "
        f'have the same reference and pytree structure: {why}'
      )
    return ga_out.pure()


@dataclasses.dataclass(eq=False)
class WhileLoopCondFn(_LoopFn):
  """``cond_fun`` of :func:`while_loop` in graph mode: rebuilds the carry
  and calls ``f`` on it."""

  def __call__(self, pure_val):
    return self.f(self.carry(pure_val))


@dataclasses.dataclass(eq=False)
class WhileLoopBodyFn(_LoopFn):
  """``body_fun`` of :func:`while_loop` in graph mode: rebuilds the carry,
  calls ``f`` and returns the new carry with graph nodes as
  ``NodeStates`` (its graph structure must not change)."""

  def __call__(self, pure_val):
    carry = self.carry(pure_val)
    before = [v for _, v in varflow.variable_paths(carry, '')]
    return self.pure(self.f(carry), before)


@dataclasses.dataclass(eq=False)
class ForiLoopBodyFn(_LoopFn):
  """``body_fun`` of :func:`fori_loop` in graph mode (as
  :class:`WhileLoopBodyFn`, with the loop index first)."""

  name: tp.ClassVar[str] = 'fori_loop'

  def __call__(self, i, pure_val_in):
    return self.pure(self.f(i, self.carry(pure_val_in)))


@dataclasses.dataclass(eq=False)
class _SimpleLoopFn(_fns.SimpleFn):
  name: tp.ClassVar[str] = 'while_loop'

  def check(self, val, out, before):
    """The carry's graph nodes must keep their pytree metadata (a carry
    that differs outside them is left to JAX's loop, its TypeError) and
    the body must return the Variables of its input (``before``, read
    before it ran) in the same places; returns the carry as it crosses the
    loop."""

    after = [v for _, v in varflow.variable_paths(out, '')]
    out = self.pure(out)
    _scan_checks.check_carry_metadata(
      _scan_checks.carry_metadata(val),
      _scan_checks.carry_metadata(out),
      f'nnx.{self.name} ({mode_text(self.graph)})',
      variables_to_jax=not self.graph,
    )
    if len(before) != len(after) or any(
      a is not b for a, b in zip(before, after)
    ):
      raise ValueError(
        f'{self.name} Variable identity must be preserved across '
        'iterations. The body function returned a Variable other than the '
        'one it received at the same place of the carry (a new or '
        'reordered Variable): update Variables in place (v[...] = ...) '
        'instead.'
      )
    return out


@dataclasses.dataclass(eq=False)
class SimpleWhileLoopCondFn(_SimpleLoopFn):
  """``cond_fun`` of :func:`while_loop` when graph nodes travel as
  pytrees."""

  def __call__(self, val):
    return self.f(self.fresh(val))


@dataclasses.dataclass(eq=False)
class SimpleWhileLoopBodyFn(_SimpleLoopFn):
  """``body_fun`` of :func:`while_loop` when graph nodes travel as pytrees
  (the carry keeps its structure)."""

  def __call__(self, val):
    carry = self.fresh(val)
    before = [v for _, v in varflow.variable_paths(carry, '')]
    return self.check(val, self.f(carry), before)


@dataclasses.dataclass(eq=False)
class SimpleForiLoopBodyFn(_SimpleLoopFn):
  """``body_fun`` of :func:`fori_loop` when graph nodes travel as
  pytrees."""

  name: tp.ClassVar[str] = 'fori_loop'

  def __call__(self, i, val):
    carry = self.fresh(val)
    before = [v for _, v in varflow.variable_paths(carry, '')]
    return self.check(val, self.f(i, carry), before)


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
    g = resolve_graph(graph)
    body = SimpleWhileLoopBodyFn(body_fun, g)
    variables = body.variables(init_val, 'carry')
    out = body.result(
      jax.lax.while_loop(
        SimpleWhileLoopCondFn(cond_fun, g), body, body.pure(init_val)
      )
    )
    treemode.store_values(variables, body.values(out, 'carry'))
    return treemode.same_variables(init_val, out)
  ga = common.GraphArgs(init_val)
  pure_out = jax.lax.while_loop(
    WhileLoopCondFn(cond_fun, graph_args=ga),
    WhileLoopBodyFn(body_fun, graph_args=ga),
    ga.pure(),
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
    body = SimpleForiLoopBodyFn(body_fun, resolve_graph(graph))
    variables = body.variables(init_val, 'carry')
    out = body.result(
      jax.lax.fori_loop(lower, upper, body, body.pure(init_val), unroll=unroll)
    )
    treemode.store_values(variables, body.values(out, 'carry'))
    return treemode.same_variables(init_val, out)
  ga = common.GraphArgs(init_val)
  pure_out = jax.lax.fori_loop(
    lower,
    upper,
    ForiLoopBodyFn(body_fun, graph_args=ga),
    ga.pure(),
    unroll=unroll,
  )
  return _finish_loop(ga, pure_out)


@common.options_first
def split_inputs(f=MISSING, *, ctxtag='split_merge_inputs'):
  """Outer half of a manual lift: in an update context named ``ctxtag``,
  replaces the graph nodes of the positional arguments by their
  ``NodeStates`` before calling ``f`` (a JAX-transformed function wrapped
  by :func:`merge_inputs` with the same ``ctxtag``), which returns the
  pair ``(arguments, output)`` with graph nodes as ``NodeStates``; merging
  it applies the Variable and structure updates made inside to the
  arguments and rebuilds the graph nodes of the output, which is returned.
  With a JAX transform of its own axes (``jax.vmap``) the axes of ``f``'s
  output apply to that pair.

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
  def wrapper(*args):
    with graphctx.update_context(ctxtag):
      pure_args = extract.to_tree(args, ctxtag=ctxtag)
      pure_args_out, pure_out = f(*pure_args)
      _, out = extract.from_tree(
        (pure_args_out, pure_out), ctxtag=ctxtag, is_inner=False
      )
    return out

  return wrapper


@common.options_first
def merge_inputs(f=MISSING, *, ctxtag='split_merge_inputs'):
  """Inner half of a manual lift (see :func:`split_inputs`): rebuilds the
  graph nodes of the positional arguments (in the update context
  ``ctxtag`` that :func:`split_inputs` entered), calls ``f`` and returns
  ``(arguments, output)`` with graph nodes as ``NodeStates`` (the other
  leaves of the arguments as None)."""

  @functools.wraps(f)
  def wrapper(*pure_args):
    args = extract.from_tree(pure_args, ctxtag=ctxtag, is_inner=True)
    out = f(*args)
    args_out = extract.clear_non_graph_nodes(args)
    return extract.to_tree((args_out, out), ctxtag=ctxtag)

  return wrapper
