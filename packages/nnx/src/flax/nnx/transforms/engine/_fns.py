"""The functions NNX transforms hand to JAX transforms.

Each lifted transform wraps the user's function in one of two callables:

* :class:`InnerFn` (graph mode with graph updates): receives the arguments
  with graph nodes replaced by ``NodeStates`` (see :mod:`.common`),
  rebuilds fresh objects, calls the function, and returns the output
  leaves together with the new values of the inputs; the output structure
  and the structure changes of the inputs stay on the instance
  (``out_static``) for the caller to apply outside.
* :class:`SimpleFn` (``graph=False`` or ``graph_updates=False``): graph
  nodes travel as pytrees; it calls the function and returns its output
  with the values of the argument Variables, which the caller writes back.

The public classes (``CheckifyFn``, ``SimpleCondFn``, ``VmapFn``, ...)
are these, with the fields of their transform.
"""

import dataclasses
import inspect
import typing as tp

import jax

from flax.nnx import extract
from flax.nnx._common import META_EPOCH
from flax.nnx.transforms.engine import common, treemode, varflow


class CallSignature:
  """The ``__signature__`` JAX reads of a callable handed to it (for the
  argument names of its errors) without inspecting the callable on every
  call: the user function's (``f``), cached per function, or the fixed
  ``signature`` given. Read on the class it is None, so that the class's
  own signature stays that of its constructor."""

  def __init__(self, signature: inspect.Signature | None = None):
    self._fixed = signature

  def __get__(self, obj, objtype=None):
    if obj is None:
      return None
    if self._fixed is not None:
      return self._fixed
    return varflow._signature_of(obj.f)[0]


def signature_of(*params: tuple[str, inspect._ParameterKind]):
  """An ``inspect.Signature`` of the named parameters of the given kinds."""
  return inspect.Signature([inspect.Parameter(n, k) for n, k in params])


class UserFunction:
  """The ``__wrapped__`` of a callable handed to JAX: the user function
  (``f``), which JAX names in its messages (``function <name> at
  <file>:<line>``); absent on the class. JAX reads the signature from
  :class:`CallSignature`, which stops the unwrapping there."""

  def __get__(self, obj, objtype=None):
    if obj is None:
      raise AttributeError('__wrapped__')
    return obj.f


def name_after(inner, f) -> None:
  """Lets JAX name the function ``inner`` (which it compiles) after the
  user function ``f`` in its messages; ``inner`` keeps its signature."""
  inner.__signature__ = inspect.signature(inner)
  inner.__wrapped__ = f


@dataclasses.dataclass(eq=False)
class InnerFn:
  """Graph-mode callable run inside a JAX transform (see module doc)."""

  __signature__ = CallSignature()
  __wrapped__ = UserFunction()

  f: tp.Callable[..., tp.Any]
  graph_args: tp.Any = dataclasses.field(default=None, kw_only=True, repr=False)
  out_static: tp.Any = dataclasses.field(default=None, init=False, repr=False)
  # How the outputs leave (see ``InnerGraph.flatten_out``): input objects
  # among them stay the inputs, and a Variable created outside the trace
  # may not leave.
  out_inputs_as_refs: tp.ClassVar[bool] = True
  out_check_trace: tp.ClassVar[bool] = True

  def rebuild(self, pure_args, pure_kwargs=None):
    """Fresh graph nodes from the pure arguments: an ``InnerGraph``."""
    ga = self.graph_args
    if ga is None:
      raise ValueError(
        f'{type(self).__name__} was called without the graph structure of '
        'its arguments (graph_args=); it is built by the NNX transform.'
      )
    return common.InnerGraph(
      ga.static, ga.masks(), (pure_args, pure_kwargs or {})
    )

  def __call__(self, *pure_args, **pure_kwargs):
    ig = self.rebuild(pure_args, pure_kwargs)
    args, kwargs = ig.args
    out = self.f(*args, **kwargs)
    changed, values = ig.updates()
    out_static, out_leaves = ig.flatten_out(
      out, self.out_check_trace, self.out_inputs_as_refs
    )
    self.out_static = (out_static, changed)
    return out_leaves, values


def mode_text(graph: bool) -> str:
  return 'graph_updates=False' if graph else 'tree mode (graph=False)'


@dataclasses.dataclass(frozen=True)
class Entered:
  """The inputs of a function run inside a transform, read before it runs:
  their Variables (``variables``, in the order of
  :meth:`PytreeMode.variables`) and the paths of those (``paths``, for the
  alias check of the outputs). A Variable the function adds to an input is
  in neither: it is not written back (the structure stays inside) and may
  be returned. ``epoch``: the Variable metadata epoch when it was read."""

  variables: list
  paths: list
  epoch: int = dataclasses.field(default_factory=lambda: META_EPOCH.value)

  def values(self) -> list:
    """The raw values of the input Variables now (after the function);
    if some Variable metadata changed meanwhile, each value travels with
    its Variable's metadata (a :class:`treemode.WithMetadata`), which
    :func:`treemode.store_values` gives the input Variable."""
    if META_EPOCH.value == self.epoch:
      return [v._raw_value for v in self.variables]
    return [treemode.with_metadata(v) for v in self.variables]


class PytreeMode:
  """The one pytree mode of the NNX transforms (see module doc), for a
  callable with ``f`` and ``graph`` attributes.

  ``graph`` tells which setting chose it: with ``graph=True`` (and
  ``graph_updates=False``) graph nodes cross the transform through
  :func:`~flax.nnx.to_tree`, so objects shared among the inputs stay shared
  inside (unless the transform sets ``shares = False``); with
  ``graph=False`` they cross as JAX pytrees and a Variable reachable twice
  is an error. In both, the values of the input Variables flow back and an
  input Variable may not be returned.

  Outside the transform: :meth:`variables` (the Variables to update),
  :meth:`pure` (what crosses) and :meth:`result` (what comes back).
  Inside: :meth:`enter` (new objects and their :class:`Entered` record,
  whose ``values()`` are the new values in the order of :meth:`variables`)
  and :meth:`outputs` (what leaves).
  """

  name: tp.ClassVar[str] = 'transform'
  # whether graph mode keeps objects shared among the inputs shared
  shares: tp.ClassVar[bool] = True
  # Whether a Variable created outside the trace may not be returned.
  out_check_trace: tp.ClassVar[bool] = True

  @property
  def _via_graph(self) -> bool:
    return bool(self.graph) and self.shares

  @property
  def _out_via_graph(self) -> bool:
    """Whether the outputs cross as a graph (objects shared among them
    stay shared); by default as the inputs do."""
    return self._via_graph

  def variables(self, tree, where='call'):
    """The Variables of ``tree``, in the order of :meth:`values`; in tree
    mode (or where sharing is refused) one reachable twice raises (``where``
    as in :func:`treemode.tree_variables`: by default an ``(args, kwargs)``
    pair)."""
    if self._via_graph:
      return [v for _, v in varflow.variable_paths(tree, '')]
    return treemode.tree_variables(tree, where, self._transform_text())

  def values(self, tree, where='call'):
    """The raw values of :meth:`variables` (for a tree that crossed the
    transform, e.g. a loop's final carry)."""
    return [v._raw_value for v in self.variables(tree, where)]

  def pure(self, tree):
    """``tree`` as it crosses the JAX transform."""
    return extract.to_tree(tree) if self._via_graph else tree

  def result(self, tree):
    """An output tree that crossed the JAX transform (:meth:`outputs`),
    rebuilt."""
    return extract.from_tree(tree) if self._out_via_graph else tree

  def fresh(self, tree):
    """``tree`` with its graph nodes and Variables rebuilt (inside the
    trace of the transform, whatever the transform passed in)."""
    if self._via_graph:
      return extract.from_tree(tree)
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return treedef.unflatten(leaves)

  def enter(self, tree, where='call') -> tuple[tp.Any, 'Entered']:
    """``tree`` rebuilt (:meth:`fresh`) and its :class:`Entered` record,
    read before the function runs (``where`` as in :meth:`variables`)."""
    tree = self.fresh(tree)
    pair = tree if where == 'call' else (tree, {})
    return tree, Entered(self.variables(tree, where), varflow.args_paths(pair))

  def outputs(self, entered: 'Entered', out):
    """``out`` as it leaves the function: an input Variable among it is
    the Duplicate error, and so is a Variable found twice in tree mode
    (``graph=False``); with ``out_check_trace`` a Variable created outside
    the trace is an error."""
    varflow.check_no_aliases(entered.paths, out, self._transform_text())
    if not self.graph:
      varflow.check_unique_out(out, self._transform_text())
    if self.out_check_trace:
      common.check_created_here(
        jax.tree_util.tree_leaves(out, is_leaf=common._is_variable),
        self._transform_text(),
      )
    return extract.to_tree(out) if self._out_via_graph else out

  def _transform_text(self) -> str:
    return f'nnx.{self.name}'


@dataclasses.dataclass(eq=False)
class SimpleFn(PytreeMode):
  """Pytree-mode callable run inside a JAX transform: calls ``f`` on fresh
  objects and returns its output with the new values of the argument
  Variables (see :class:`PytreeMode`)."""

  __signature__ = CallSignature()
  __wrapped__ = UserFunction()

  f: tp.Callable[..., tp.Any]
  graph: bool

  def __call__(self, *args, **kwargs):
    (args, kwargs), entered = self.enter((args, kwargs))
    out = self.f(*args, **kwargs)
    return self.outputs(entered, out), entered.values()
