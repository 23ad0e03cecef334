"""Transforms that return something other than the function's outputs
(``make_jaxpr``, ``checkify``), the branch/shape transforms, and
``resolve_kwargs``; all run on the lifting of :mod:`.general`."""

import functools
import inspect

import jax
from jax.experimental import checkify as checkify_lib

from flax.nnx._common import MISSING, Missing, graph_updates_default
from flax.nnx.module import Module as Module
from flax.nnx.transforms.general import cond as cond
from flax.nnx.transforms.general import eval_shape as eval_shape
from flax.nnx.transforms.general import graph_with_updates, lift
from flax.nnx.transforms.general import switch as switch

__all__ = [
  'Missing',
  'Module',
  'checkify',
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
  signature = inspect.signature(fun)
  for p in signature.parameters.values():
    if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
      if kwargs:
        raise TypeError(
          'keyword arguments could not be resolved to positions: '
          f'{fun!r} has a parameter {p.name!r} that cannot be given '
          'positionally.'
        )
  bound = signature.bind(*args, **kwargs)
  bound.apply_defaults()
  return bound.args


def _split_static(args, static_argnums):
  statics = {i: args[i] for i in static_argnums if i < len(args)}
  dynamic = tuple(None if i in statics else a for i, a in enumerate(args))
  return statics, dynamic


def _with_statics(f, statics):
  def g(*a, **kw):
    return f(*(statics.get(i, x) for i, x in enumerate(a)), **kw)

  return g


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
    return functools.partial(
      make_jaxpr,
      graph=graph,
      graph_updates=graph_updates,
      static_argnums=static_argnums,
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

    def transform(pure_f):
      def run(pure):
        def outputs_only(pure):
          out_leaves, _ = pure_f(pure)
          return out_leaves

        cell['jaxpr'] = jax.make_jaxpr(outputs_only)(pure)
        return jax.eval_shape(pure_f, pure)

      return run

    lift(
      transform,
      g,
      dynamic,
      kwargs,
      graph=graph_with_updates(graph, True),
      write_back=False,
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

  @functools.wraps(f)
  def wrapper(*args, **kwargs):
    cell = {}

    def transform(pure_f):
      checked = checkify_lib.checkify(pure_f, errors=errors)

      def run(pure):
        err, result = checked(pure)
        cell['error'] = err
        return result

      return run

    out = lift(
      transform,
      f,
      args,
      kwargs,
      graph=graph_with_updates(graph, graph_updates),
    )
    return cell['error'], out

  return wrapper
