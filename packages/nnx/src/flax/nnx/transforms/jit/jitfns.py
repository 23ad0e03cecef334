"""The functions ``nnx.jit`` hands to ``jax.jit``.

A jitted function owns one of these; it carries the compilation options
the wrapper configures ``jax.jit`` with and runs the user function inside
the trace:

- :class:`JitFn` (graph mode with graph updates) rebuilds the graph nodes
  of the arguments from their NodeStates, runs the function and returns
  the flattened outputs and the new leaf values (structure changes
  recorded in ``out_static``).
- :class:`SimpleJitFn` (without graph updates) does the same with
  structure changes dropped in graph mode; in tree mode JAX rebuilt the
  arguments already and the Variable values are returned.
- :class:`SimpleJitPartialFn` is the one of ``nnx.jit_partial``.

The first positional argument is static: the call structure in graph mode
(graph structure, static arguments, graph updates), the static arguments
in tree mode. ``run(tree, box)`` runs the user function on an ``(args,
kwargs)`` pair; the compiled fast path (``flatcall``/``treecall``) calls it
after rebuilding the arguments itself. The static arguments of a call
travel in a :class:`StaticBox` (part of the cache key), and the argument
options of ``nnx.jit`` are normalized here too.
"""

import inspect

import jax

from flax.nnx.transforms.engine import _fns, common, varflow
from flax.nnx.transforms.engine import refout


# -- static arguments and argument options ------------------------------------


def normalize_nums(nums):
  if nums is None:
    return ()
  if isinstance(nums, int):
    return (nums,)
  return tuple(nums)


def normalize_names(names):
  if names is None:
    return ()
  if isinstance(names, str):
    return (names,)
  return tuple(names)


def with_static_slots(in_shardings, static_argnums):
  """``in_shardings`` (one entry per non-static positional argument) with
  a None entry at each static position: the static arguments stay in the
  call ``jax.jit`` sees (as placeholders)."""
  if not static_argnums or not isinstance(in_shardings, (tuple, list)):
    return in_shardings
  out = []
  for entry in in_shardings:
    while len(out) in static_argnums:
      out.append(None)
    out.append(entry)
  return tuple(out)


class StaticBox:
  """Static user argument inside the cache key."""

  __slots__ = ('values',)

  def __init__(self, values):
    self.values = values

  def __eq__(self, other):
    return type(other) is StaticBox and self.values == other.values

  def __hash__(self):
    try:
      return hash(self.values)
    except TypeError as e:
      raise ValueError(
        'Non-hashable static arguments are not supported: static arguments '
        f'of nnx.jit are part of the compilation cache key ({e}). Pass a '
        'hashable value (a tuple instead of a list, ...) or make the '
        'argument non-static.'
      ) from None


def join_static(args, kwargs, box):
  """Puts the static arguments held by ``box`` back into the call."""
  if box is None:
    return args, kwargs
  args = list(args)
  for kind, where, value in box.values:
    if kind == 'a':
      if where >= len(args):
        args.extend([None] * (where + 1 - len(args)))
      args[where] = value
    else:
      kwargs[where] = value
  return tuple(args), kwargs


class JitFn:
  """The function ``nnx.jit`` compiles in graph mode with graph updates.

  Attributes: ``f`` (the user function), ``in_shardings``,
  ``out_shardings`` and ``kwarg_shardings`` (the shardings ``jax.jit`` is
  configured with for positional arguments, outputs and keyword
  arguments), ``ctxtag`` (the name errors raised inside use) and
  ``out_static`` (output structure and graph changes recorded per call
  structure while tracing).
  """

  graph = True
  graph_updates = True
  # JAX names the user function in its messages; the call signature stays
  # this class's own (the static key first, then the pure arguments)
  __signature__ = _fns.CallSignature(
    _fns.signature_of(
      ('pure_args', inspect.Parameter.VAR_POSITIONAL),
      ('pure_kwargs', inspect.Parameter.VAR_KEYWORD),
    )
  )
  __wrapped__ = _fns.UserFunction()

  def __init__(
    self, f, in_shardings, out_shardings, kwarg_shardings, ctxtag
  ) -> None:
    self.f = f
    self.in_shardings = in_shardings
    self.out_shardings = out_shardings
    self.kwarg_shardings = kwarg_shardings
    self.ctxtag = ctxtag
    self.out_static: dict = {}

  def __repr__(self):
    return f'{type(self).__name__}({self.f!r})'

  def run(self, tree, box):
    args, kwargs = join_static(*tree, box)
    return self.f(*args, **kwargs)

  def __call__(self, *pure_args, **pure_kwargs):
    key, *pure_args = pure_args
    static, box, graph_updates = key
    ig = common.InnerGraph(static, None, (tuple(pure_args), pure_kwargs))
    out, changed, values = varflow.run_inner(
      ig, lambda tree: self.run(tree, box), graph_updates, self.ctxtag
    )
    # without graph updates only the values set inside leave (the others
    # keep their arrays outside)
    written = None
    if not graph_updates:
      values, written = ig.written(None, values)
    # Refs among the arguments may be returned or kept, Refs made inside
    # returned when an argument is a graph node or a Ref; without graph
    # updates JAX refuses Refs among the outputs (refout)
    inputs = jax.tree_util.tree_leaves((pure_args, pure_kwargs))
    values, refs = refout.take(values, inputs)
    if graph_updates:
      new_ok = bool(static[3]) or any(isinstance(a, jax.Ref) for a in inputs)
      out, refs_out = refout.take(out, inputs, new_ok)
      refs = refs or refs_out
    out_static, out_leaves = ig.flatten_out(
      out, True if graph_updates else self.ctxtag
    )
    if graph_updates:
      # and the Refs of the output graph nodes (e.g. of ref=True Variables
      # of a Module made inside), given back before they are rebuilt
      out_leaves, node_refs = refout.take(out_leaves, inputs, new_ok)
      refs = refs or node_refs
    self.out_static[key] = (out_static, changed)
    # without graph updates, metadata set inside comes back (varflow)
    metas = None if graph_updates else ig.meta_changes
    return common.Result(
      (out_leaves, values), (out_static, changed, refs, metas, written)
    )


class SimpleJitFn(JitFn, _fns.PytreeMode):
  """The function ``nnx.jit`` compiles without graph updates.

  ``graph`` selects graph mode (graph nodes rebuilt from NodeStates,
  shared references kept, structure changes dropped) or tree mode
  (:class:`~._fns.PytreeMode`: pytrees, Variables returned by value); ``donate_argnums`` /
  ``donate_argnames`` are the donated arguments; ``update_shardings``
  (tree mode) are the shardings of the Variable values leaving the
  function, one per Variable of the arguments (empty: unconstrained).
  """

  graph_updates = False

  def __init__(
    self,
    f,
    in_shardings,
    out_shardings,
    donate_argnums,
    donate_argnames,
    graph,
    update_shardings,
  ) -> None:
    super().__init__(f, in_shardings, out_shardings, None, 'nnx.jit')
    self.donate_argnums = frozenset(donate_argnums)
    self.donate_argnames = frozenset(donate_argnames)
    self.graph = bool(graph)
    self.update_shardings = tuple(update_shardings or ())

  def _transform_text(self) -> str:
    return self.ctxtag

  def __call__(self, *args, **kwargs):
    if self.graph:
      return super().__call__(*args, **kwargs)
    # tree mode: the pytree mode of every transform
    box, *args = args
    (args, kwargs), entered = self.enter(join_static(tuple(args), kwargs, box))
    before = [v._raw_value for v in entered.variables]
    out = self.f(*args, **kwargs)
    # only the values set inside leave (None: the Variable keeps its array)
    values = [
      None if value is old else value
      for value, old in zip(entered.values(), before)
    ]
    return self.outputs(entered, out), values


class SimpleJitPartialFn(SimpleJitFn):
  """:class:`SimpleJitFn` of ``nnx.jit_partial``: the bound arguments come
  first in the call it runs."""

  def __init__(
    self,
    f,
    in_shardings,
    out_shardings,
    donate_argnums,
    donate_argnames,
    graph,
    update_shardings,
  ) -> None:
    super().__init__(
      f,
      in_shardings,
      out_shardings,
      donate_argnums,
      donate_argnames,
      graph,
      update_shardings,
    )
    self.ctxtag = 'nnx.jit_partial'
