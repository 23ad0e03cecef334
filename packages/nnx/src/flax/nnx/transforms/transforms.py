"""Transforms that return something other than the function's outputs
(``make_jaxpr``, ``checkify``), the branch/shape transforms, and
``resolve_kwargs``; all run on the lifting of :mod:`.general`."""

import abc
import dataclasses
import functools
import typing as tp

import jax
from jax.experimental import checkify as checkify_lib

from flax.nnx import variablelib
from flax.nnx._common import MISSING, Missing, graph_updates_default
from flax.nnx.extract import labeled as labeled
from flax.nnx.module import Module as Module
from flax.nnx.proxy_caller import CallableProxy as CallableProxy
from flax.nnx.proxy_caller import DelayedAccessor as DelayedAccessor
from flax.nnx.transforms.engine import _fns, common, varflow
from flax.nnx.transforms.general import SimpleCondFn as SimpleCondFn
from flax.nnx.transforms.general import SimpleEvalShapeFn as SimpleEvalShapeFn
from flax.nnx.transforms.general import cond as cond
from flax.nnx.transforms.general import eval_shape as eval_shape
from flax.nnx.transforms.general import graph_with_updates, lift
from flax.nnx.transforms.general import switch as switch

M = tp.TypeVar('M', bound=Module)

__all__ = [
  'CallableProxy',
  'CheckifyFn',
  'DelayedAccessor',
  'LiftedModule',
  'Missing',
  'Module',
  'SimpleCheckifyFn',
  'SimpleCondFn',
  'SimpleEvalShapeFn',
  'SimpleMakeJaxprFn',
  'ValueMetadata',
  'checkify',
  'labeled',
  'cond',
  'eval_shape',
  'make_jaxpr',
  'resolve_kwargs',
  'switch',
]


def resolve_kwargs(fun=MISSING, args=MISSING, kwargs=MISSING):
  """Turns keyword arguments into positional ones (defaults filled in).

  With ``fun``, ``args`` and ``kwargs`` it returns the positional tuple;
  with no arguments it is a decorator whose function receives only
  positional arguments.

  >>> from flax.nnx.transforms.transforms import resolve_kwargs
  >>> def f(a, b=2, c=3):
  ...   return a, b, c
  >>> resolve_kwargs(f, (1,), {'c': 5})
  (1, 2, 5)
  """
  if isinstance(fun, Missing):

    def decorator(f):
      @functools.wraps(f)
      def wrapper(*a, **kw):
        return f(*resolve_kwargs(f, a, kw))

      return wrapper

    return decorator
  if isinstance(args, Missing):
    args = ()
  if isinstance(kwargs, Missing):
    kwargs = {}
  return varflow.positional_args(fun, args, kwargs, defaults=True)


def _split_static(args, static_argnums):
  statics = {i: args[i] for i in static_argnums if i < len(args)}
  dynamic = tuple(None if i in statics else a for i, a in enumerate(args))
  return statics, dynamic


def _with_statics(f, statics):
  def g(*a, **kw):
    return f(*(statics.get(i, x) for i, x in enumerate(a)), **kw)

  return g


@dataclasses.dataclass(eq=False)
class SimpleMakeJaxprFn(_fns.SimpleFn):
  """The function :func:`make_jaxpr` traces with ``graph=False``: the
  function's output only (nothing is written back); shared Variables are
  refused, as in tree mode."""

  name: tp.ClassVar[str] = 'make_jaxpr'
  shares: tp.ClassVar[bool] = False

  def __call__(self, *args, **kwargs):
    (args, kwargs), entered = self.enter((args, kwargs))
    return self.outputs(entered, self.f(*args, **kwargs))


@dataclasses.dataclass(eq=False)
class CheckifyFn(_fns.InnerFn):
  """The function :func:`checkify` checks in graph mode with graph
  updates: rebuilds the graph nodes of the arguments, calls ``f`` and
  returns the output leaves with the updates of the inputs."""

  def __call__(self, *pure_args, **pure_kwargs):
    return super().__call__(*pure_args, **pure_kwargs)


@dataclasses.dataclass(eq=False)
class SimpleCheckifyFn(_fns.SimpleFn):
  """The function :func:`checkify` checks when graph nodes travel as
  pytrees (``graph=False`` or ``graph_updates=False``)."""

  name: tp.ClassVar[str] = 'checkify'

  def __call__(self, *args, **kwargs):
    return super().__call__(*args, **kwargs)


def make_jaxpr(f=MISSING, *, graph=None, graph_updates=None, static_argnums=()):
  """``jax.make_jaxpr`` for functions taking graph nodes.

  The jaxpr takes the leaves of the arguments (the Variables of graph
  nodes, in graph order) and returns the leaves of the outputs. Variable
  updates made by the function are not applied, so this transform needs
  ``graph_updates=False``.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> class M(nnx.Module):
  ...   def __init__(self):
  ...     self.w = nnx.Param(jnp.ones(2))
  >>> jaxpr = nnx.make_jaxpr(lambda m: m.w * 2, graph_updates=False)(M())
  >>> len(jaxpr.jaxpr.invars)
  1
  """
  if isinstance(f, Missing):
    # Used as ``@nnx.make_jaxpr(...)``: the settings wait for ``f``.
    settings = dict(graph=graph, graph_updates=graph_updates)
    return functools.partial(
      make_jaxpr, static_argnums=static_argnums, **settings
    )
  if isinstance(static_argnums, int):
    static_argnums = (static_argnums,)

  @functools.wraps(f)
  def wrapper(*args, **kwargs):
    updates = (
      graph_updates_default() if graph_updates is None else graph_updates
    )
    if updates:
      raise ValueError(
        'nnx.make_jaxpr does not support graph_updates=True: the jaxpr '
        'cannot apply Variable or structure updates. Pass '
        'graph_updates=False.'
      )
    statics, dynamic = _split_static(args, static_argnums)
    g = _with_statics(f, statics)
    cell = {}

    def transform(fn):
      # fn: a SimpleMakeJaxprFn (returns the outputs only)
      def run(*a, **kw):
        cell['jaxpr'] = jax.make_jaxpr(lambda p: fn(*p[0], **p[1]))((a, kw))
        return jax.eval_shape(fn, *a, **kw)

      return run

    lift(
      transform,
      g,
      dynamic,
      kwargs,
      graph=False,
      write_back=False,
      simple_fn=SimpleMakeJaxprFn,
      user_graph=graph,
    )
    return cell['jaxpr']

  return wrapper


def checkify(
  f,
  errors=checkify_lib.user_checks,
  graph=None,
  graph_updates=None,
):
  """``jax.experimental.checkify.checkify`` for functions taking graph
  nodes: returns ``(error, out)``; Variable updates flow back to the
  arguments.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> from jax.experimental import checkify
  >>> class M(nnx.Module):
  ...   def __init__(self):
  ...     self.w = nnx.Param(jnp.ones(2))
  >>> def f(m, x):
  ...   checkify.check(x > 0, 'x must be positive')
  ...   return m.w * x
  >>> err, out = nnx.checkify(f)(M(), -1.0)
  >>> err.get()
  'x must be positive (`check` failed)'
  """
  common.check_not_bound_method(f, 'checkify')
  # the modes in force now are the function's
  graph, graph_updates = common.modes_now(graph, graph_updates)

  @functools.wraps(f)
  def wrapper(*args, **kwargs):
    cell = {}

    def transform(fn):
      checked = checkify_lib.checkify(fn, errors=errors)

      def run(*a, **kw):
        err, result = checked(*a, **kw)
        cell['error'] = err
        return result

      return run

    out = lift(
      transform,
      f,
      args,
      kwargs,
      graph=graph_with_updates(graph, graph_updates),
      inner_fn=CheckifyFn,
      simple_fn=SimpleCheckifyFn,
      user_graph=graph,
    )
    return cell['error'], out

  return wrapper


# -- lifted modules and Variable metadata ---------------------------------------


class _LiftedModuleMeta(type(Module), abc.ABCMeta):
  """Module metaclass that also enforces abstract methods."""


class LiftedModule(tp.Generic[M], Module, metaclass=_LiftedModuleMeta):
  """Base of Modules that run a wrapped submodule through a transform.

  Subclasses give the wrapped module (``_submodule``) and ``_call(accessor,
  *args, **kwargs)``, which receives a :class:`DelayedAccessor` naming the
  method reached through :attr:`call` and runs it. Calling the module
  calls the submodule's ``__call__`` that way.

  >>> import jax.numpy as jnp
  >>> from flax import nnx
  >>> from flax.nnx.transforms.transforms import LiftedModule
  >>> class Doubled(LiftedModule):
  ...   def __init__(self, module):
  ...     self.module = module
  ...   @property
  ...   def _submodule(self):
  ...     return self.module
  ...   def _call(self, accessor, *args, **kwargs):
  ...     return 2 * accessor(self.module)(*args, **kwargs)
  >>> class Lin(nnx.Module):
  ...   def __init__(self):
  ...     self.w = nnx.Param(jnp.ones(2))
  ...   def __call__(self, x):
  ...     return self.w * x
  ...   def half(self, x):
  ...     return self.w * x / 2
  >>> m = Doubled(Lin())
  >>> m(1.0).tolist(), m.call.half(1.0).tolist()
  ([2.0, 2.0], [1.0, 1.0])
  """

  @abc.abstractmethod
  def _call(self, accessor: DelayedAccessor, *args, **kwargs) -> tp.Any:
    """Runs the method of the submodule that ``accessor`` reaches."""

  @property
  @abc.abstractmethod
  def _submodule(self) -> M:
    """The wrapped module."""

  @property
  def call(self) -> tp.Any:
    """A proxy: ``self.call.method(*args)`` calls ``self._call`` with an
    accessor for ``method``."""
    return CallableProxy(self._call, DelayedAccessor())

  def __call__(self, *args, **kwargs) -> tp.Any:
    return self.call(*args, **kwargs)


@dataclasses.dataclass(frozen=True)
class ValueMetadata:
  """A Variable taken apart: its type, its value (the only pytree leaf)
  and its metadata (auxiliary data, compared by value).

  >>> import jax
  >>> import jax.numpy as jnp
  >>> from flax import nnx
  >>> from flax.nnx.transforms.transforms import ValueMetadata
  >>> vm = ValueMetadata(nnx.Param, jnp.ones(2), {'tag': 'w'})
  >>> jax.tree.map(lambda x: x + 1, vm).value.tolist()
  [2.0, 2.0]
  """

  var_type: type[variablelib.Variable]
  value: tp.Any
  metadata: dict[str, tp.Any]


jax.tree_util.register_pytree_node(
  ValueMetadata,
  lambda vm: ((vm.value,), (vm.var_type, tuple(vm.metadata.items()))),
  lambda aux, children: ValueMetadata(aux[0], children[0], dict(aux[1])),
)
