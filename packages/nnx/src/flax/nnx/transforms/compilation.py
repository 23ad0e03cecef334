"""nnx.jit: jax.jit for functions taking Modules / graph nodes.

>>> from flax import nnx
>>> import jax.numpy as jnp
>>> class Counter(nnx.Module):
...   def __init__(self):
...     self.n = nnx.BatchStat(jnp.array(0))
>>> @nnx.jit
... def step(c):
...   c.n[...] += 1
>>> c = Counter()
>>> step(c); step(c)
>>> int(c.n[...])
2
"""

from flax.nnx.transforms.engine.types import StateSharding as StateSharding
from flax.nnx.transforms import shardmap
import functools
import inspect
import typing as tp

import jax

from flax.nnx._common import (
  MISSING,
  graph_updates_default,
  resolve_graph,
)
from flax.nnx._common import Missing as Missing
from flax.nnx.extract import labeled as labeled
from flax.nnx.transforms.engine import common, _prefix, treemode
from flax.nnx.transforms.engine import refout
from flax.nnx.transforms.jit import flatcall, jitfns, stages
from flax.nnx.transforms.jit import treecall
from flax.nnx.transforms.cachedpartial import cached_partial as cached_partial
from flax.nnx.transforms.engine import varflow
from flax.nnx.transforms.jit.jitfns import JitFn as JitFn
from flax.nnx.transforms.jit.jitfns import SimpleJitFn as SimpleJitFn
from flax.nnx.transforms.jit.jitfns import (
  SimpleJitPartialFn as SimpleJitPartialFn,
)
from flax.nnx.transforms.jit.stages import Compiled as Compiled
from flax.nnx.transforms.jit.stages import Lowered as Lowered
from flax.nnx.transforms.jit.stages import SimpleCompiled as SimpleCompiled
from flax.nnx.transforms.jit.stages import SimpleLowered as SimpleLowered
from flax.nnx.transforms.jit.stages import (
  SimplePartialCompiled as SimplePartialCompiled,
)
from flax.nnx.transforms.jit.stages import (
  SimplePartialLowered as SimplePartialLowered,
)
from flax.nnx.transforms.jit.stages import (
  SimplePartialTraced as SimplePartialTraced,
)
from flax.nnx.transforms.jit.stages import SimpleTraced as SimpleTraced
from flax.nnx.transforms.jit.stages import Stage as Stage
from flax.nnx.transforms.jit.stages import Traced as Traced

# Whether ``nnx.jit`` objects made from now on use the cached fast path
# where it applies (flatcall: one compiled function per call structure).
# Off, every call goes through the general path; the test suite runs the
# jit tests both ways and the results must agree.
FAST_PATH = True


def _store_written(variables, values) -> None:
  """Tree mode: writes back the values the function set (None: the
  Variable keeps its array)."""
  pairs = [(v, x) for v, x in zip(variables, values) if x is not None]
  treemode.store_values([v for v, _ in pairs], [x for _, x in pairs])


class JitWrapped:
  """A function compiled with :func:`jit`; also works as a method.

  ``trace`` / ``lower`` give the staged objects of :mod:`stages`
  (:class:`Traced`, :class:`Lowered`, then :class:`Compiled`).
  """

  _stages = (stages.Traced, stages.Lowered, stages.Compiled)

  def __init__(
    self,
    fun,
    in_shardings,
    out_shardings,
    static_argnums=None,
    static_argnames=None,
    donate_argnums=None,
    donate_argnames=None,
    keep_unused=False,
    device=None,
    backend=None,
    inline=False,
    *,
    graph=None,
    graph_updates=None,
    update_shardings=None,
  ):
    common.check_not_bound_method(fun, 'jit')
    _prefix.check_all(
      'jit',
      graph,
      graph_updates,
      in_shardings=in_shardings,
      out_shardings=out_shardings,
    )
    functools.update_wrapper(self, fun)
    self.fun = fun
    self.graph = resolve_graph(graph)
    if graph_updates is None:
      graph_updates = graph_updates_default()
    self.graph_updates = bool(graph_updates)
    update_shardings = tuple(update_shardings or ())
    self.update_shardings = update_shardings
    static_argnums = jitfns.normalize_nums(static_argnums)
    static_argnames = jitfns.normalize_names(static_argnames)
    donate_argnums = jitfns.normalize_nums(donate_argnums)
    donate_argnames = jitfns.normalize_names(donate_argnames)
    try:
      sig = inspect.signature(fun)
      params = list(sig.parameters)
    except (TypeError, ValueError):
      params = []
    # Resolve names <-> positions the way jax.jit does.
    if static_argnames and not static_argnums:
      static_argnums = tuple(
        i for i, p in enumerate(params) if p in static_argnames
      )
    elif static_argnums and not static_argnames:
      static_argnames = tuple(
        params[i] for i in static_argnums if i < len(params)
      )
    if donate_argnames and not donate_argnums:
      donate_argnums = tuple(
        i for i, p in enumerate(params) if p in donate_argnames
      )
    elif donate_argnums and not donate_argnames:
      donate_argnames = tuple(
        params[i] for i in donate_argnums if i < len(params)
      )
    self.static_argnums = frozenset(static_argnums)
    self.static_argnames = frozenset(static_argnames)
    # in_shardings cover the non-static positional arguments; entries
    # given per Variable (nnx.prefix results, StateSharding) become
    # prefixes of what crosses jax.jit (_prefix)
    in_shardings = jitfns.with_static_slots(in_shardings, self.static_argnums)
    self._in_prefix = in_shardings
    if in_shardings is not None:
      # the argument Variables leave with their input shardings (all of
      # them with graph updates, the ones set inside otherwise)
      fun = _prefix.with_update_shardings(
        fun,
        in_shardings,
        graph=self.graph,
        every=self.graph and self.graph_updates,
      )
    self._node_in = self._node_out = None
    self._node_jits: dict = {}
    # tree mode: graph nodes are pytrees, node-shaped prefixes match them
    if self.graph:
      if _prefix.has_node_entries(in_shardings):
        # per call structure: the prefix of each graph node's slots
        self._node_in = in_shardings
        in_shardings = None
      if _prefix.has_node_entries(out_shardings):
        # constrained inside, and given the sharding objects outside
        fun = _prefix.with_out_shardings(fun, out_shardings)
        self._node_out = out_shardings
        out_shardings = None
    self._donate_argnums = frozenset(donate_argnums)
    self._donate_argnames = frozenset(donate_argnames)
    self._fn = self._make_fn(fun, in_shardings, out_shardings, update_shardings)
    # Fast path: one compiled function per call structure (see flatcall).
    self._fast = (
      FAST_PATH
      and in_shardings is None
      and self._node_in is None
      and out_shardings is None
      and not update_shardings
    )
    # compiled entries by call structure (graph or tree mode: a wrapper
    # has one mode) and the memo of the last call (flatcall.Memo)
    self._entries: dict = {}
    self._hot = (
      self._fast
      and not self.static_argnums
      and not static_argnames
      and self._node_out is None
    )
    self._hot_key = (None, self.graph_updates)
    self._memo = [None]
    self._fast_jit_kwargs = dict(
      keep_unused=keep_unused, device=device, backend=backend, inline=inline
    )
    jit_kwargs = dict(
      static_argnums=(0,),
      donate_argnums=tuple(i + 1 for i in donate_argnums),
      donate_argnames=tuple(
        n for n in donate_argnames if n not in static_argnames
      )
      or None,
      in_shardings=in_shardings,
      out_shardings=(out_shardings, None)
      if out_shardings is not None
      else None,
      keep_unused=keep_unused,
      device=device,
      backend=backend,
      inline=inline,
    )
    if update_shardings and not self.graph:
      # the Variable values leave with these shardings, one per Variable
      # of the arguments in pytree order (tree mode)
      jit_kwargs['out_shardings'] = (out_shardings, list(update_shardings))
    self._jit_kwargs = jit_kwargs
    self._jitted = jax.jit(self._fn, **jit_kwargs)

  def _jit_of(self, ga, args):
    """The ``jax.jit`` function for a graph-mode call (one per call
    structure when ``in_shardings`` give shardings per Variable)."""
    if self._node_in is None:
      return self._jitted
    jitted = self._node_jits.get(ga.static)
    if jitted is None:
      prefix = _prefix.graph_prefix(self._node_in, tuple(args), ga)
      jitted = jax.jit(self._fn, **dict(self._jit_kwargs, in_shardings=prefix))
      self._node_jits[ga.static] = jitted
    return jitted

  def _make_fn(self, fun, in_shardings, out_shardings, update_shardings):
    """The function handed to ``jax.jit`` (see :mod:`jitfns`)."""
    if self.graph and self.graph_updates:
      if update_shardings:
        raise ValueError(
          'update_shardings apply without graph updates only (tree mode or '
          'graph_updates=False).'
        )
      return jitfns.JitFn(fun, in_shardings, out_shardings, None, 'nnx.jit')
    return self._simple_fn(
      fun,
      in_shardings,
      out_shardings,
      self._donate_argnums,
      self._donate_argnames,
      self.graph,
      update_shardings,
    )

  _simple_fn = jitfns.SimpleJitFn

  def __get__(self, obj, objtype=None):
    if obj is None:
      return self
    return functools.partial(self, obj)

  def _split_static(self, args, kwargs):
    if not self.static_argnums and not self.static_argnames:
      return args, kwargs, None
    statics = []
    args = list(args)
    for i in sorted(self.static_argnums):
      if i < len(args):
        statics.append(('a', i, args[i]))
        args[i] = None
    # trailing static arguments leave the call (in_shardings cover the
    # non-static positional arguments)
    while args and len(args) - 1 in self.static_argnums:
      args.pop()
    kwargs = dict(kwargs)
    for name in sorted(self.static_argnames):
      if name in kwargs:
        statics.append(('k', name, kwargs.pop(name)))
    return tuple(args), kwargs, jitfns.StaticBox(tuple(statics))

  # -- graph mode -------------------------------------------------------------
  def _call_graph(self, args, kwargs):
    out = self._call_graph_(args, kwargs)
    if self._node_out is not None:
      out = _prefix.map_variables(out, self._node_out, jax.device_put)
    return out

  def _call_graph_(self, args, kwargs):
    args, kwargs, box = self._split_static(args, kwargs)
    if self._fast:
      graph_updates = self.graph_updates
      out = flatcall.run(
        self._entries,
        (box, graph_updates),
        (args, kwargs),
        lambda call: self._new_entry(call, args, kwargs, box, graph_updates),
      )
      if out is not flatcall.NOT_FAST:
        return out
    return self._general_graph(args, kwargs, box)

  def _general_graph(self, args, kwargs, box):
    """Graph mode through :class:`common.GraphArgs` (shared references
    among the roots, shardings)."""
    if self._in_prefix is not None:
      _prefix.check_aliasing(args, self._in_prefix)
    ga = common.GraphArgs((args, kwargs))
    pure_args, pure_kwargs = ga.pure()
    key = (ga.static, box, self.graph_updates)
    result = self._jit_of(ga, args)(key, *pure_args, **pure_kwargs)
    return self._general_out(ga, result, (pure_args, pure_kwargs))

  def _general_out(self, ga, result, pure):
    """Writes back the updates of a general-path call and returns its
    outputs (``pure``: the arguments it was called with)."""
    out_leaves, values = result.leaves
    out_static, changed, refs, metas, written = result.static
    if refs:
      inputs = jax.tree_util.tree_leaves(pure)
      values = refout.give(values, inputs)
    ga.write_back(
      (changed, values),
      variables_only=not self.graph_updates,
      written=written,
    )
    if metas is not None:
      for k, j, meta in metas:
        varflow.give_metadata(ga.roots[k].slots[j], meta)
    if refs:
      out_leaves = refout.give(out_leaves, inputs)
    out = common.unflatten_out(out_static, out_leaves, ga)
    if refs:
      out = refout.give(out, inputs)
    return out

  def _new_entry(self, call, args, kwargs, box, graph_updates):
    """Compiles the call structure of ``call`` (graph mode unless
    ``graph_updates`` is None)."""
    tree = graph_updates is None
    is_leaf = call.is_leaf
    donate = set()
    if self._donate_argnums or self._donate_argnames:
      n = 0
      for i, a in enumerate(args):
        size = len(jax.tree_util.tree_leaves(a, is_leaf=is_leaf))
        if i in self._donate_argnums:
          donate.update(range(n, n + size))
        n += size
      for name in sorted(kwargs):
        size = len(jax.tree_util.tree_leaves(kwargs[name], is_leaf=is_leaf))
        if name in self._donate_argnames:
          donate.update(range(n, n + size))
        n += size
    fn = self._fn

    def body(tree):
      return fn.run(tree, box)

    if tree:
      entry = treecall.make_tree_entry(
        call, body, fn, self._fast_jit_kwargs, donate
      )
    else:
      entry = flatcall.make_entry(
        call,
        body,
        self._fast_jit_kwargs,
        donate,
        graph_updates=graph_updates,
        name=fn.ctxtag,
        source=fn.f,
      )
    entries = self._entries
    if len(entries) >= flatcall._MAX_ENTRIES:
      entries.clear()
    entries[call.key] = entry
    return entry

  # -- tree mode --------------------------------------------------------------

  def _call_tree(self, args, kwargs):
    args, kwargs, box = self._split_static(args, kwargs)
    if self._fast:
      out = treecall.run_tree(
        self._entries,
        box,
        (args, kwargs),
        lambda call: self._new_entry(call, args, kwargs, box, None),
      )
      if out is not flatcall.NOT_FAST:
        return out
    return self._general_tree(args, kwargs, box)

  def _general_tree(self, args, kwargs, box):
    """Tree mode with JAX flattening the arguments (a Variable reachable
    twice is an error there)."""
    variables = varflow.check_unique((args, kwargs), 'nnx.jit')
    out, new = self._jitted(box, *args, **kwargs)
    _store_written(variables, new)
    return out

  def __call__(self, *args, **kwargs):
    graph = self.graph
    if self._hot:
      # No static arguments: straight to the fast path; a call with the
      # same roots as the last one reuses its structure (flatcall.Memo).
      if graph:
        memo = self._memo
        if memo[0] is not None and not kwargs:
          out = flatcall.run_memo(memo[0], args)
          if out is not flatcall.NOT_FAST:
            return out
        out = flatcall.run(
          self._entries,
          self._hot_key,
          (args, kwargs),
          self._compile_graph,
          None if kwargs else memo,
        )
      else:
        memo = self._memo
        if memo[0] is not None and not kwargs:
          out = treecall.run_tree_memo(memo[0], args)
          if out is not flatcall.NOT_FAST:
            return out
        out = treecall.run_tree(
          self._entries,
          None,
          (args, kwargs),
          self._compile_tree,
          None if kwargs else memo,
        )
      if out is not flatcall.NOT_FAST:
        return out
      # the fast path declined this call: no static arguments to split
      if graph:
        return self._general_graph(args, kwargs, None)
      return self._general_tree(args, kwargs, None)
    if graph:
      return self._call_graph(args, kwargs)
    return self._call_tree(args, kwargs)

  def _compile_graph(self, call):
    args, kwargs = call.treedef.unflatten(call.leaves)
    return self._new_entry(call, args, kwargs, None, self._hot_key[1])

  def _compile_tree(self, call):
    args, kwargs = call.treedef.unflatten(call.leaves)
    return self._new_entry(call, args, kwargs, None, None)

  def _jax_traced(self, args, kwargs):
    """``jax.stages.Traced`` of the pure function for these arguments."""
    args, kwargs, box = self._split_static(args, kwargs)
    if not self.graph:
      varflow.check_unique((args, kwargs), 'nnx.jit')
      return self._jitted.trace(box, *args, **kwargs)
    ga = common.GraphArgs((args, kwargs))
    pure_args, pure_kwargs = ga.pure()
    key = (ga.static, box, self.graph_updates)
    return self._jit_of(ga, args).trace(key, *pure_args, **pure_kwargs)

  def trace(self, *args, **kwargs):
    """Traces the function for these arguments (a :class:`Traced`)."""
    return self._stages[0](self._jax_traced(args, kwargs), self)

  def lower(self, *args, **kwargs):
    """Lowers the function for these arguments (a :class:`Lowered`)."""
    return self._stages[1](self._jax_traced(args, kwargs).lower(), self)

  def _call_compiled(self, compiled, args, kwargs):
    """Calls ``compiled`` (of :meth:`lower`) with user arguments."""
    args, kwargs, box = self._split_static(args, kwargs)
    if not self.graph:
      variables = varflow.check_unique((args, kwargs), 'nnx.jit')
      out, new = compiled(*args, **kwargs)
      _store_written(variables, new)
      return out
    ga = common.GraphArgs((args, kwargs))
    pure_args, pure_kwargs = ga.pure()
    key = (ga.static, box, self.graph_updates)
    recorded = self._fn.out_static.get(key)
    if recorded is None:
      raise ValueError(
        'A compiled nnx.jit function was called with arguments whose '
        'graph structure or static arguments differ from the ones it was '
        'lowered with; lower it again for these arguments.'
      )
    result = compiled(*pure_args, **pure_kwargs)
    return self._general_out(ga, result, (pure_args, pure_kwargs))

  def eval_shape(self, *args, **kwargs):
    """The abstract outputs of a call (``jax.ShapeDtypeStruct`` leaves;
    graph nodes among them hold abstract values): nothing runs and the
    inputs are not updated."""
    args, kwargs, box = self._split_static(args, kwargs)
    if not self.graph:
      varflow.check_unique((args, kwargs), 'nnx.jit')
      out, _ = jax.eval_shape(functools.partial(self._fn, box), *args, **kwargs)
      return out
    ga = common.GraphArgs((args, kwargs))
    pure = ga.pure()
    key = (ga.static, box, self.graph_updates)
    result = jax.eval_shape(
      functools.partial(self._fn, key), *pure[0], **pure[1]
    )
    out_leaves, _ = result.leaves
    out_static, _, refs, _, _ = result.static
    # outputs that are inputs come back as abstract copies of them
    inputs = common.InnerGraph(
      ga.static, None, jax.eval_shape(lambda t: t, _ref_values(pure))
    )
    if refs:
      pure_leaves = jax.tree_util.tree_leaves(pure)
      out_leaves = refout.give(out_leaves, pure_leaves, lambda v: v)
    out = common.unflatten_out(out_static, out_leaves, _AbstractInputs(inputs))
    if refs:
      out = refout.give(out, pure_leaves, lambda v: v)
    return out


def _ref_values(tree):
  """``tree`` with its ``jax.Ref`` leaves read (an abstract evaluation
  cannot return a Ref)."""
  return jax.tree.map(lambda x: x[...] if isinstance(x, jax.Ref) else x, tree)


class _AbstractInputs:
  """The input objects of a call rebuilt with abstract values, in the
  order of their global indices (for :func:`common.unflatten_out`)."""

  def __init__(self, inner):
    nodes = [None] * len(inner.global_ids)
    seen = set()
    for index in inner.indexes:
      for obj in index.values():
        if id(obj) not in seen:
          seen.add(id(obj))
          nodes[inner.global_ids[id(obj)]] = obj
    self._nodes = nodes

  def all_nodes(self) -> list:
    return self._nodes


class SimpleJitWrapped(JitWrapped):
  """A function compiled with :func:`jit` without graph updates
  (``graph=False`` or ``graph_updates=False``): Variable values flow back,
  structure changes stay inside, Variable aliasing is an error.

  ``partial_args`` are bound first arguments (as :func:`jit_partial`
  does: a wrapper built with some is a :class:`SimpleJitPartialWrapped`);
  ``update_shardings`` (tree mode) are the shardings of the Variable
  values leaving the function, one per Variable of the arguments.
  """

  _stages = (stages.SimpleTraced, stages.SimpleLowered, stages.SimpleCompiled)

  def __init__(
    self,
    fun,
    in_shardings,
    out_shardings,
    static_argnums,
    static_argnames,
    donate_argnums,
    donate_argnames,
    keep_unused,
    device,
    backend,
    inline,
    partial_args,
    graph,
    update_shardings,
  ):
    self.partial_args = tuple(partial_args)
    if self.partial_args and not graph:
      # tree mode: the bound Variables cross as values, once each
      varflow.check_unique((self.partial_args, {}), 'nnx.jit_partial')
    if self.partial_args and not isinstance(self, SimpleJitPartialWrapped):
      # calls prepend the bound arguments: that is the partial wrapper
      self.__class__ = SimpleJitPartialWrapped
    JitWrapped.__init__(
      self,
      fun,
      in_shardings,
      out_shardings,
      static_argnums,
      static_argnames,
      donate_argnums,
      donate_argnames,
      keep_unused,
      device,
      backend,
      inline,
      graph=graph,
      graph_updates=False,
      update_shardings=update_shardings,
    )


class SimpleJitPartialWrapped(SimpleJitWrapped):
  """:func:`jit_partial`: a :class:`SimpleJitWrapped` whose first
  arguments are bound to ``partial_args``; Variable updates reach them."""

  _stages = (
    stages.SimplePartialTraced,
    stages.SimplePartialLowered,
    stages.SimplePartialCompiled,
  )
  _simple_fn = jitfns.SimpleJitPartialFn

  def __call__(self, *args, **kwargs):
    return JitWrapped.__call__(self, *self.partial_args, *args, **kwargs)

  def trace(self, *args, **kwargs):
    return JitWrapped.trace(self, *self.partial_args, *args, **kwargs)

  def lower(self, *args, **kwargs):
    return JitWrapped.lower(self, *self.partial_args, *args, **kwargs)

  def eval_shape(self, *args, **kwargs):
    return JitWrapped.eval_shape(self, *self.partial_args, *args, **kwargs)

  def _call_compiled(self, compiled, args, kwargs):
    return JitWrapped._call_compiled(
      self, compiled, self.partial_args + tuple(args), kwargs
    )


# The options nnx.jit and jit_partial hand on to _make_jit by keyword.
_JIT_OPTIONS = (
  'in_shardings',
  'out_shardings',
  'static_argnums',
  'static_argnames',
  'donate_argnums',
  'donate_argnames',
  'keep_unused',
  'device',
  'backend',
  'inline',
  'graph',
)


def _make_jit(fun, *, partial_args=(), graph, graph_updates, **options):
  """The wrapper class of :func:`jit` for these modes, resolved now."""
  g = resolve_graph(graph)
  if graph_updates is None:
    graph_updates = graph_updates_default()
  if g and graph_updates and not partial_args:
    return JitWrapped(fun, graph=True, graph_updates=True, **options)
  return SimpleJitWrapped(
    fun,
    partial_args=partial_args,
    graph=g,
    update_shardings=(),
    **options,
  )


def jit(
  fun: tp.Callable = MISSING,
  *,
  in_shardings=None,
  out_shardings=None,
  static_argnums=None,
  static_argnames=None,
  donate_argnums=None,
  donate_argnames=None,
  keep_unused: bool = False,
  device=None,
  backend=None,
  inline: bool = False,
  graph=None,
  graph_updates=None,
):
  """Lifted ``jax.jit`` for functions taking Modules / graph nodes.

  Variable updates (and, with ``graph_updates``, structure changes) made
  inside are applied to the inputs after the call. Without ``fun`` it
  returns a decorator taking the same options.
  """
  given = locals()
  options = {k: given[k] for k in (*_JIT_OPTIONS, 'graph_updates')}
  make = functools.partial(_make_jit, **options)
  return make if fun is MISSING else make(fun)


def jit_partial(
  fun: tp.Callable,
  *partial_args,
  in_shardings=None,
  out_shardings=None,
  static_argnums=None,
  static_argnames=None,
  donate_argnums=None,
  donate_argnames=None,
  keep_unused: bool = False,
  device=None,
  backend=None,
  inline: bool = False,
  graph=None,
  graph_updates=None,
):
  """``nnx.jit(fun)`` with its first arguments bound to ``partial_args``.

  Variable updates made by the call flow back to the bound graph nodes;
  structural updates are not supported, so in graph mode
  ``graph_updates`` must be False (tree mode has no graph updates). Argument numbers (shardings, static and donated arguments) count
  the bound arguments first.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> class Counter(nnx.Module):
  ...   def __init__(self):
  ...     self.n = nnx.BatchStat(jnp.array(0))
  >>> def step(c, k):
  ...   c.n[...] += k
  ...   return c.n[...]
  >>> c = Counter()
  >>> f = nnx.jit_partial(step, c, graph_updates=False)
  >>> int(f(2)), int(f(3)), int(c.n[...])
  (2, 5, 5)
  """
  updates = graph_updates_default() if graph_updates is None else graph_updates
  if updates and resolve_graph(graph):
    raise ValueError(
      '`graph_updates` not supported by `jit_partial`: pass '
      'graph_updates=False (Variable updates still reach the bound '
      'arguments).'
    )
  given = locals()
  options = {k: given[k] for k in _JIT_OPTIONS}
  return _make_jit(
    fun, partial_args=tuple(partial_args), graph_updates=False, **options
  )


def __getattr__(name):
  # names of the shard_map transform, which lives in its own module
  if name in ('shard_map', 'ShardMapFn', 'SimpleShardMapFn'):
    return getattr(shardmap, name)
  raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
