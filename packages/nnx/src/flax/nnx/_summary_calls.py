"""Recording the method calls of an NNX graph for :func:`nnx.tabulate`.

The object is copied and run under ``jax.eval_shape``; while it runs, the
methods of the classes of its graph nodes are wrapped so that every call
on a node of the graph is recorded with its inputs and outputs (and,
when asked, XLA's flop estimates of the call).
"""

from __future__ import annotations

import dataclasses
import contextlib
import inspect
import threading
import types
import typing as tp

import jax
import jax.numpy as jnp
import numpy as np

from flax.core.flops import lowered_flops, self_cotangent
from jax.extend.core import jaxpr_as_fun
from flax.nnx import graphlib
from flax.nnx._common import trace_state
from flax.nnx.pytreelib import Pytree
from flax.nnx.variablelib import Variable
from flax import typing

_LOCK = threading.RLock()


@dataclasses.dataclass
class CallInfo:
  """One recorded method call of an object of the tabulated graph
  (``flax.nnx.summary.CallInfo``)."""

  call_order: int
  object_id: int
  type: type
  path: tuple[typing.Key, ...]
  inputs_repr: str
  outputs: tp.Any
  flops: int | None
  vjp_flops: int | None


CallInfo.__module__ = 'flax.nnx.summary'  # its public home


def _is_array(x) -> bool:
  return hasattr(x, 'shape') and hasattr(x, 'dtype')


def array_markup(x) -> str:
  """``[dim]float32[/dim][2,3]`` for an array-like ``x``."""
  shape = ','.join(
    map(str, np.shape(x) if not hasattr(x, 'shape') else x.shape)
  )
  return f'[dim]{x.dtype}[/dim][{shape}]'


def _scalar(x, arrays=None) -> str:
  if _is_array(x):
    return (arrays or array_markup)(x)
  if x is None or isinstance(x, bool):
    return str(x)
  if isinstance(x, (int, float, str)):
    return str(x)
  return repr(x)


def _is_block(x) -> bool:
  return isinstance(x, (dict, list, tuple)) and not _is_array(x)


def _block_lines(x, arrays=None) -> list[str]:
  """The lines of ``x`` in block YAML style (sorted mapping keys)."""
  if isinstance(x, dict):
    if not x:
      return ['{}']
    lines = []
    for k in sorted(x, key=str):
      v = x[k]
      if _is_block(v) and v:
        sub = _block_lines(v, arrays)
        indent = '' if isinstance(v, (list, tuple)) else '  '
        lines.append(f'{k}:')
        lines.extend(indent + line for line in sub)
      else:
        lines.append(f'{k}: {_value_markup(v, arrays)}')
    return lines
  if not x:
    return ['[]']
  lines = []
  for v in x:
    if _is_block(v) and v:
      sub = _block_lines(v, arrays)
      lines.append('- ' + sub[0])
      lines.extend('  ' + line for line in sub[1:])
    else:
      lines.append(f'- {_value_markup(v, arrays)}')
  return lines


def _value_markup(x, arrays=None) -> str:
  if _is_block(x):
    return '\n'.join(_block_lines(x, arrays))
  return _scalar(x, arrays)


def _has_leaves(x) -> bool:
  """Whether ``x`` (plain dicts, lists and leaves) holds any leaf."""
  if isinstance(x, dict):
    return any(_has_leaves(v) for v in x.values())
  if isinstance(x, (list, tuple)) and not _is_array(x):
    return any(_has_leaves(v) for v in x)
  return x is not None


def _hollow(x):
  """What stands for a part without leaves between parts with leaves:
  an empty container of its kind, or None."""
  if isinstance(x, dict):
    return {}
  if isinstance(x, (list, tuple)):
    return []
  return x


def _prune(x):
  """``x`` with the parts that hold no leaf left out: mapping entries
  are dropped, a sequence ends at its last part with leaves, and an
  earlier part without leaves is shown hollow."""
  if isinstance(x, dict):
    return {k: _prune(v) for k, v in x.items() if _has_leaves(v)}
  if isinstance(x, (list, tuple)) and not _is_array(x):
    keep = [_has_leaves(v) for v in x]
    end = max((i + 1 for i, k in enumerate(keep) if k), default=0)
    return [_prune(v) if k else _hollow(v) for v, k in zip(x[:end], keep)]
  return x


def shown(x):
  """The part of an input, output or Variable that a cell shows.

  A value without leaves is shown as it is. Otherwise its parts without
  leaves are pruned (see :func:`_prune`), except that a top-level
  sequence keeps its trailing parts as they are.
  """
  if not _has_leaves(x):
    return x
  out = _prune(x)
  if isinstance(x, (list, tuple)) and not _is_array(x):
    out = out + list(x[len(out) :])
  return out


def _node_dict(node) -> dict:
  """A graph node as nested dicts of its Variables (``{'value': array}``)."""
  out: dict = {}
  for path, value in graphlib.iter_graph(node):
    if isinstance(value, Variable) and path:
      d = out
      for k in path[:-1]:
        d = d.setdefault(k, {})
      d[path[-1]] = {'value': value.get_raw_value()}
  return out


def _plain(x):
  """``x`` with NNX objects and mappings as dicts, sequences as lists."""
  if isinstance(x, Variable):
    return {'value': x.get_raw_value()}
  if isinstance(x, Pytree):
    return _node_dict(x)
  if isinstance(x, dict) or hasattr(x, 'items') and hasattr(x, 'keys'):
    try:
      return {k: _plain(v) for k, v in x.items()}
    except Exception:
      return x
  if isinstance(x, (list, tuple)):
    return [_plain(v) for v in x]
  return x


def structure_markup(x, arrays=None) -> str:
  """The text of an input, output or Variable (YAML-like block style).

  ``arrays`` formats the arrays in it (default: ``float32[2,3]``). An
  empty value (None, ``{}``, ``[]``) gives an empty text.
  """
  x = shown(_plain(x))
  if x is None or _is_block(x) and not x:
    return ''
  return _value_markup(x, arrays)


def inputs_markup(args, kwargs) -> str:
  """The ``inputs`` cell: one value alone, else a list then a mapping."""
  if len(args) == 1 and not kwargs:
    return structure_markup(args[0])
  lines = []
  if args:
    lines += _block_lines(shown([_plain(a) for a in args]))
  if kwargs:
    lines += _block_lines(shown({k: _plain(v) for k, v in kwargs.items()}))
  return '\n'.join(lines)


def _abstract_outputs(x):
  def leaf(v):
    if isinstance(v, (bool, int, float, complex)) or _is_array(v):
      return jax.ShapeDtypeStruct(np.shape(v), jnp.result_type(v))
    return v

  return jax.tree.map(leaf, _plain(x))


def _methods(cls) -> list[str]:
  """Methods of ``cls`` whose calls are recorded."""
  names = []
  for name in dir(cls):
    if name.startswith('_') and name != '__call__':
      continue
    attr = inspect.getattr_static(cls, name, None)
    if not isinstance(attr, types.FunctionType):
      continue
    owner = next(c for c in cls.__mro__ if name in vars(c))
    if owner.__module__.startswith('flax.nnx.') and name != '__call__':
      continue  # framework methods (train, eval, sow, ...)
    names.append(name)
  return names


class _Trace(tp.NamedTuple):
  """One traced method call, replayed for later calls that match it."""

  fun: tp.Callable  # flat (state, array inputs) -> (outputs, new state)
  n_out: int
  out_def: tp.Any
  out_static: list
  new_def: tp.Any
  new_static: list
  flops: int | None


class _Recorder:
  """Records the calls of the methods it wraps.

  Each call is traced once into a jaxpr, kept under the object, method,
  graph structure and the shapes/dtypes (or values, for other leaves) of
  its state and inputs: a later call that matches replays the jaxpr and
  does not run the method again. A method whose call makes a row and
  ``backward`` is set runs once more, traced with its VJP. The methods of
  the model thus run as often as in Flax 0.12.8.
  """

  def __init__(self, paths, forward, backward):
    self.paths = paths  # id -> path of the nodes of the traced graph
    self.ids = {path: i for i, path in paths.items()}
    self.calls = []
    self.finished = []  # the calls in the order they returned
    self.stack = []
    self.active = True
    self.replaying = False  # inside a VJP estimate: replay, record nothing
    self.forward = forward
    self.backward = backward
    self.traces: dict[tp.Hashable, _Trace] = {}
    self.rows: set[tuple[int, str]] = set()  # (object id, inputs) seen

  def wrap(self, fn, name):
    recorder = self

    def wrapper(obj, *args, **kwargs):
      node = recorder.node_id(obj)
      if (
        not recorder.active
        or node is None
        or (recorder.stack and recorder.stack[-1] == (node, name))
      ):
        return fn(obj, *args, **kwargs)
      path = recorder.paths[node]
      if recorder.replaying:
        return recorder.call(fn, name, node, obj, args, kwargs, None)
      info = CallInfo(
        len(recorder.calls),
        node,
        type(obj),
        path + ((name,) if name != '__call__' else ()),
        inputs_markup(args, kwargs),
        None,
        None,
        None,
      )
      recorder.calls.append(info)
      recorder.stack.append((node, name))
      try:
        out = recorder.call(fn, name, node, obj, args, kwargs, info)
      finally:
        recorder.stack.pop()
      info.outputs = _abstract_outputs(out)
      recorder.finished.append(info)
      return out

    wrapper.__wrapped__ = fn
    return wrapper

  def node_id(self, obj) -> int | None:
    """The id of the node of the traced graph that ``obj`` is: ``obj``
    itself, or its copy inside a transform (found by the path it keeps
    as a static attribute); None for other objects."""
    if id(obj) in self.paths:
      return id(obj)
    path = getattr(obj, '__dict__', {}).get(PATH_ATTRIBUTE)
    return None if path is None else self.ids.get(path)

  def call(self, fn, name, node, obj, args, kwargs, info):
    """``fn(obj, *args, **kwargs)`` through its (cached) trace; fills the
    flop estimates of ``info`` when one is given.

    A node holding leaves that are no arrays (or Refs) is called
    directly, and estimated with :meth:`flops`.
    """
    graphdef, state = graphlib.split(obj)
    state_leaves, state_def = jax.tree.flatten(state)
    if not all(map(_is_plain_array, state_leaves)):
      if info is not None and (self.forward or self.backward):
        info.flops, info.vjp_flops = self.flops(fn, obj, args, kwargs)
      return fn(obj, *args, **kwargs)
    leaves, treedef = jax.tree.flatten((args, kwargs))
    dyn = [i for i, v in enumerate(leaves) if _is_array(v)]
    flat_in = [*state_leaves, *(leaves[i] for i in dyn)]
    key = _trace_key(node, name, graphdef, state_def, treedef, leaves)
    trace = self.traces.get(key) if key is not None else None
    if trace is None:
      if self.replaying:
        return fn(obj, *args, **kwargs)
      trace = self.trace(fn, obj, leaves, treedef, dyn, state_def, flat_in)
      if key is not None:
        self.traces[key] = trace
    results = trace.fun(*flat_in)
    out = _fill(trace.out_def, trace.out_static, results[: trace.n_out])
    graphlib.update(
      obj, _fill(trace.new_def, trace.new_static, results[trace.n_out :])
    )
    if info is not None:
      info.flops = trace.flops
      row = (node, info.inputs_repr)
      if self.backward and row not in self.rows:
        info.vjp_flops = self.vjp_flops(
          fn, name, node, obj, leaves, treedef, dyn, state_def, flat_in
        )
      self.rows.add(row)
    return out

  def trace(self, fn, obj, leaves, treedef, dyn, state_def, flat_in):
    """Runs ``fn`` once as a jaxpr of the state and array inputs that
    gives the outputs and the new state (and its forward flop estimate)."""
    n_state = len(flat_in) - len(dyn)
    box: dict[str, tp.Any] = {}

    def call(*flat):
      graphlib.update(obj, jax.tree.unflatten(state_def, flat[:n_state]))
      a, k = _inputs(leaves, treedef, dyn, flat[n_state:])
      with _adopted(obj):
        out = fn(obj, *a, **k)
      out_leaves, box['out_def'] = jax.tree.flatten(out)
      box['out_static'] = [None if _is_array(v) else v for v in out_leaves]
      new_leaves, box['new_def'] = jax.tree.flatten(graphlib.state(obj))
      box['new_static'] = [None if _is_array(v) else v for v in new_leaves]
      return (
        [v for v in out_leaves if _is_array(v)],
        [v for v in new_leaves if _is_array(v)],
      )

    closed = jax.make_jaxpr(call)(*flat_in)
    fun = jaxpr_as_fun(closed)
    n_out = sum(v is None for v in box['out_static'])
    flops = None
    if self.forward:
      # The estimate covers the method's outputs (not the state updates).
      self.active = False
      try:
        flops = lowered_flops(
          lambda *flat: fun(*flat)[:n_out], *map(_abstract, flat_in)
        )
      finally:
        self.active = True
    return _Trace(
      fun,
      n_out,
      box['out_def'],
      box['out_static'],
      box['new_def'],
      box['new_static'],
      flops,
    )

  def vjp_flops(
    self, fn, name, node, obj, leaves, treedef, dyn, state_def, flat_in
  ):
    """XLA's estimate of ``fn`` and its VJP: ``fn`` runs once more (from
    the state it started from), the calls inside it replaying their
    traces.

    The VJP is taken with respect to ``obj`` flattened as a pytree: a
    Variable reached by two paths is two inputs, each with its own
    gradient (as in Flax 0.12.8), so ``fn`` runs on such a copy.
    """
    n_state = len(flat_in) - len(dyn)
    # The state of ``obj`` after the call, put back once estimated.
    after, after_def = jax.tree.flatten(graphlib.state(obj))
    graphlib.update(obj, jax.tree.unflatten(state_def, flat_in[:n_state]))
    tree_leaves, tree_def = jax.tree.flatten(obj)
    graphlib.update(obj, jax.tree.unflatten(after_def, after))
    if not all(map(_is_plain_array, tree_leaves)):
      return None
    n_tree = len(tree_leaves)

    def outputs(*flat):
      copy = jax.tree.unflatten(tree_def, flat[:n_tree])
      a, k = _inputs(leaves, treedef, dyn, flat[n_tree:])
      return [v for v in jax.tree.leaves(fn(copy, *a, **k)) if _is_array(v)]

    inputs = [*tree_leaves, *flat_in[n_state:]]
    self.replaying = True
    self.stack.append((node, name))
    try:
      return lowered_flops(_flat_vjp(outputs), *map(_abstract, inputs))
    finally:
      self.stack.pop()
      self.replaying = False

  def flops(self, fn, obj, args, kwargs):
    """XLA's flop estimates of ``fn(obj, *args, **kwargs)`` (and its VJP)."""
    graphdef, state = graphlib.split(obj)
    abstract = lambda t: jax.tree.map(  # noqa: E731
      lambda v: _abstract(v) if _is_array(v) else v, t
    )
    leaves, treedef = jax.tree.flatten((args, kwargs))
    dyn = [i for i, v in enumerate(leaves) if _is_array(v)]

    def call(state, dyn_leaves):
      a, k = _inputs(leaves, treedef, dyn, dyn_leaves)
      return fn(graphlib.merge(graphdef, state), *a, **k)

    abs_state = abstract(state)
    abs_dyn = [abstract(leaves[i]) for i in dyn]
    self.active = False
    try:
      flops = vjp_flops = None
      if self.forward:
        flops = lowered_flops(call, abs_state, abs_dyn)
      if self.backward:
        vjp_flops = lowered_flops(_with_vjp(call), abs_state, abs_dyn)
    finally:
      self.active = True
    return flops, vjp_flops


def _abstract(x):
  return jax.ShapeDtypeStruct(x.shape, x.dtype)


def _inputs_flat(leaves, dyn, dyn_leaves) -> list:
  full = list(leaves)
  for i, v in zip(dyn, dyn_leaves):
    full[i] = v
  return full


def _inputs(leaves, treedef, dyn, dyn_leaves):
  """``(args, kwargs)`` with the array leaves at ``dyn`` replaced by
  ``dyn_leaves``."""
  return jax.tree.unflatten(treedef, _inputs_flat(leaves, dyn, dyn_leaves))


def _trace_key(obj_id, name, graphdef, state_def, treedef, leaves):
  """What a call must share with a traced one to replay it, or None when
  it cannot be hashed."""
  try:
    key = (
      obj_id,
      name,
      graphdef,
      state_def,
      treedef,
      tuple(jax.typeof(v) if _is_array(v) else v for v in leaves),
    )
    hash(key)
  except TypeError:
    return None
  return key


# A static attribute naming a node's path in the traced graph, so that
# its copies made by transforms (nnx.scan, nnx.vmap, ...) are recognized.
PATH_ATTRIBUTE = '_nnx_tabulate_path'


def _mark_paths(root, infos):
  for _, node in graphlib.iter_graph(root):
    info = infos.get(id(node))
    if info is not None and isinstance(node, Pytree):
      try:
        setattr(node, PATH_ATTRIBUTE, info.path)
      except (AttributeError, TypeError, ValueError):
        pass  # a node refusing attributes is recorded outside transforms


def _is_plain_array(x) -> bool:
  return _is_array(x) and not isinstance(x, jax.Ref)


def _fill(treedef, static, arrays):
  """Unflattens ``treedef`` from ``static`` leaves (None where an array
  goes) and the ``arrays``, in order."""
  it = iter(arrays)
  return jax.tree.unflatten(
    treedef, [next(it) if v is None else v for v in static]
  )


def _flat_vjp(outputs):
  """``outputs`` (flat array inputs to a list of arrays) followed by its
  VJP with respect to every float input."""

  def vjp_fn(*flat):
    diff = [i for i, v in enumerate(flat) if _inexact(v)]

    def partial(*diff_leaves):
      full = list(flat)
      for i, v in zip(diff, diff_leaves):
        full[i] = v
      return outputs(*full)

    out, pullback = jax.vjp(partial, *[flat[i] for i in diff])
    # Each output is its own cotangent (see flax.core.flops).
    return out, pullback(jax.tree.map(self_cotangent, out))

  return vjp_fn


def _inexact(x) -> bool:
  return _is_array(x) and jnp.issubdtype(x.dtype, jnp.inexact)


def _with_vjp(call):
  """``call`` followed by its VJP with respect to every float input."""

  def fn(state, dyn_leaves):
    flat, treedef = jax.tree.flatten((state, dyn_leaves))
    diff = [i for i, v in enumerate(flat) if _inexact(v)]

    def partial(diff_leaves):
      full = list(flat)
      for i, v in zip(diff, diff_leaves):
        full[i] = v
      out = call(*jax.tree.unflatten(treedef, full))
      return jax.tree.map(jnp.asarray, out)

    out, pullback = jax.vjp(partial, [flat[i] for i in diff])
    # Each output is its own cotangent (see flax.core.flops).
    return out, pullback(jax.tree.map(self_cotangent, out))

  return fn


@contextlib.contextmanager
def _adopted(obj):
  """Lets the objects of ``obj``'s graph be mutated from the current JAX
  trace (the method traced into a jaxpr is run on the traced copy itself),
  restoring the trace level each belongs to afterwards."""
  now = trace_state()
  saved = []
  for _, node in graphlib.iter_graph(obj):
    if isinstance(node, Variable):
      saved.append((node, '_trace_state', getattr(node, '_trace_state', None)))
      object.__setattr__(node, '_trace_state', now)
    elif isinstance(node, Pytree):
      saved.append((node._pytree__m, 'trace', node._pytree__m.trace))
      node._pytree__m.trace = now
  try:
    yield
  finally:
    for owner, slot, value in saved:
      object.__setattr__(owner, slot, value)


def record(obj, method, args, kwargs, forward, backward, object_infos):
  """Runs ``obj.method(*args, **kwargs)`` abstractly and records calls.

  Returns ``(calls, infos, groups)``: the :class:`CallInfo` list (in the
  order the calls returned; ``call_order`` is the order they began), the
  ``ObjectInfo`` of every node (by id of the traced copy) and the total
  size per Variable type, sorted by type name.
  """
  graphdef, state = graphlib.split(obj)
  leaves, treedef = jax.tree.flatten((args, kwargs))
  dyn = [i for i, v in enumerate(leaves) if _is_array(v)]
  result: dict[str, tp.Any] = {}

  def run(state, dyn_leaves):
    copy = graphlib.merge(graphdef, state)
    a, k = _inputs(leaves, treedef, dyn, dyn_leaves)
    infos = object_infos(copy)
    recorder = _Recorder(
      {i: info.path for i, info in infos.items()}, forward, backward
    )
    _mark_paths(copy, infos)
    classes = {type(n) for _, n in graphlib.iter_graph(copy)}
    classes = [c for c in classes if issubclass(c, Pytree)]
    with _LOCK:
      patched = []
      try:
        for cls in classes:
          for name in _methods(cls):
            had = name in vars(cls)
            original = vars(cls)[name] if had else None
            fn = inspect.getattr_static(cls, name)
            setattr(cls, name, recorder.wrap(fn, name))
            patched.append((cls, name, had, original))
        if method != '__call__':
          fn = getattr(type(copy), method)
          if getattr(fn, '__wrapped__', None) is None:
            fn = recorder.wrap(fn, method)
          fn(copy, *a, **k)
        else:
          if not callable(copy):
            raise TypeError(f'{type(obj).__name__} object is not callable')
          type(copy).__call__(copy, *a, **k)
      finally:
        for cls, name, had, original in reversed(patched):
          if had:
            setattr(cls, name, original)
          else:
            delattr(cls, name)
    result['calls'] = recorder.finished
    result['infos'] = infos
    return None

  jax.eval_shape(run, state, [leaves[i] for i in dyn])
  infos = result['infos']
  root = infos[next(iter(i for i, f in infos.items() if f.path == ()))]
  groups = dict(sorted(root.stats.items(), key=lambda kv: kv[0].__name__))
  return result['calls'], infos, groups
