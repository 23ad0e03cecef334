"""Operations on all the Variables of a graph: ``nnx.set_metadata`` and
``nnx.with_vars`` (and its deprecated alias ``nnx.vars_as``).

>>> from flax import nnx
>>> import jax.numpy as jnp
>>> class Model(nnx.Module):
...   def __init__(self):
...     self.w = nnx.Param(jnp.ones(2))
>>> model = Model()
>>> nnx.set_metadata(model, tag='encoder')
>>> model.w.tag
'encoder'
>>> nnx.with_vars(model, ref=True).w.ref
True
"""

from flax.nnx.pytreelib import Pytree
from flax.nnx.module import _copy_graph
from flax.nnx.pytreelib import _sort_key
import typing as tp
import warnings

from flax.nnx import filterlib, variablelib
from flax.nnx.variablelib import Variable, is_array_ref

A = tp.TypeVar('A')


def _walk_variables(node, path, seen):

  if isinstance(node, Variable):
    if id(node) not in seen:
      seen.add(id(node))
      yield path, node
    return
  if isinstance(node, Pytree):
    if id(node) in seen:
      return
    seen.add(id(node))
    d = vars(node)
    for k in sorted(d, key=_sort_key):
      yield from _walk_variables(d[k], (*path, k), seen)
  elif type(node) in (list, tuple):
    for i, v in enumerate(node):
      yield from _walk_variables(v, (*path, i), seen)
  elif type(node) is dict:
    for k in sorted(node, key=_sort_key):
      yield from _walk_variables(node[k], (*path, k), seen)


def set_metadata(
  node: tp.Any, /, *, only: filterlib.Filter = Variable, **metadata: tp.Any
) -> None:
  """Sets ``metadata`` on every Variable of ``node`` matching ``only``."""
  predicate = filterlib.to_predicate(only)
  for path, var in list(_walk_variables(node, (), set())):
    if predicate(path, var):
      var.set_metadata(**metadata)


# A conversion asked for (True / False), or None to keep the current one.
_Choice = bool | None


def with_vars(
  node: A,
  /,
  *,
  hijax: _Choice = None,
  ref: _Choice = None,
  mutable: _Choice = None,
  only: filterlib.Filter = ...,
  allow_duplicates: bool = False,
) -> A:
  """A copy of ``node`` whose Variables (those matching ``only``) are new
  Variables converted as asked: ``ref=True`` keeps each value in a mutable
  ``jax.Ref``, ``ref=False`` in a plain array. The other Variables are
  shared with ``node``.

  Args:
    node: a graph node (Module, Pytree, container of them).
    hijax: convert to (True) or from (False) hijax Variables
      (:class:`~flax.nnx.variablelib.HijaxVariable`, Variables that are JAX
      values).
    ref: convert to (True) or from (False) ``jax.Ref``-backed Variables.
    mutable: for hijax Variables: recorded as their ``mutable`` metadata
      (every hijax Variable can be updated inside JAX transforms).
    only: filter of the Variables to convert.
    allow_duplicates: allow a Variable reachable through several paths
      (otherwise that raises a ``ValueError``).
  """

  if mutable is not None and hijax is False:
    raise ValueError(
      'with_vars(mutable=...) applies to hijax Variables; it cannot be '
      'combined with hijax=False.'
    )
  if not allow_duplicates:
    paths: dict = {}
    _check_duplicates(node, (), paths, set())
  predicate = filterlib.to_predicate(only)

  def convert(path, var):
    if not predicate(path, var):
      return var
    if hijax or mutable is not None or var.hijax:
      return _convert_hijax(var, hijax, ref, mutable, path)
    raw = var.get_raw_value()
    if ref is None:
      return var.copy(_copy_ref=False)
    if ref and not is_array_ref(raw):
      return var.copy(ref=True)
    if not ref and is_array_ref(raw):
      return var.copy(ref=False)
    return var.copy(_copy_ref=False)

  return _copy_graph(node, {}, convert)


def _convert_hijax(var, hijax, ref, mutable, path):
  """``with_vars`` for a Variable that is, or is to become, hijax."""

  was_hijax = var.hijax
  if was_hijax and hijax is None and ref is None and mutable is None:
    return var  # unchanged: shared, like any Variable left as it is
  if not was_hijax and not hijax:
    raise ValueError(
      f'with_vars(mutable=...): the Variable at {path} is not a hijax '
      'Variable; pass hijax=True to convert it.'
    )
  plain = (
    variablelib.to_variable(var) if was_hijax else var.copy(_copy_ref=False)
  )
  raw = plain.get_raw_value()
  if ref and not is_array_ref(raw):
    plain = plain.copy(ref=True)
  elif ref is False and is_array_ref(raw):
    plain = plain.copy(ref=False)
  if hijax is False:
    return plain
  if mutable is None and was_hijax:
    mutable = var.get_metadata('mutable', None)
  return variablelib.from_variable(plain, mutable=mutable)


def _check_duplicates(node, path, paths, seen_nodes):

  if isinstance(node, Variable):
    if id(node) in paths:
      raise ValueError(
        f'Found duplicate at paths: {paths[id(node)]} and {path} (a shared '
        'Variable); pass allow_duplicates=True to convert shared Variables.'
      )
    paths[id(node)] = path
    return
  if isinstance(node, Pytree):
    if id(node) in seen_nodes:
      return
    seen_nodes.add(id(node))
    items = vars(node).items()
  elif type(node) in (list, tuple):
    items = enumerate(node)
  elif type(node) is dict:
    items = node.items()
  else:
    return
  for k, v in items:
    _check_duplicates(v, (*path, k), paths, seen_nodes)


def vars_as(
  node: A,
  /,
  *,
  hijax: _Choice = None,
  ref: _Choice = None,
  mutable: _Choice = None,
  only: filterlib.Filter = ...,
  allow_duplicates: bool = False,
) -> A:
  """Deprecated: :func:`with_vars` under its former name (same arguments)."""
  warnings.warn(
    'nnx.vars_as is deprecated. Use with_vars instead.',
    DeprecationWarning,
    stacklevel=2,
  )
  return with_vars(
    node,
    hijax=hijax,
    ref=ref,
    mutable=mutable,
    only=only,
    allow_duplicates=allow_duplicates,
  )
