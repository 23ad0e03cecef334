"""Views of Modules: copies of the Module graph that share its Variables
but differ in attributes (``nnx.view``, ``nnx.with_attributes``), and
``nnx.capture`` of the intermediates a call sows.

>>> from flax import nnx
>>> import jax.numpy as jnp
>>> class Noisy(nnx.Module):
...   def __init__(self):
...     self.w = nnx.Param(jnp.ones(2))
...     self.deterministic = False
...   def set_view(self, deterministic: bool | None = None):
...     if deterministic is not None:
...       self.deterministic = deterministic
>>> model = Noisy()
>>> eval_model = nnx.view(model, deterministic=True)
>>> eval_model.deterministic, model.deterministic
(True, False)
>>> eval_model.w is model.w
True
"""

import functools
import inspect
import typing as tp

from flax.nnx import _capture, filterlib
from flax.nnx.module import Module, iter_modules
from flax.nnx.pytreelib import Pytree, _new_object, _sort_key
from flax.nnx.statelib import State

A = tp.TypeVar('A')


def _copy_graph(node, memo, var_fn=None, path=()):
  """Copies the Pytrees of ``node`` (and the plain containers holding
  them); Variables are shared, or replaced by ``var_fn(path, variable)``
  (once per Variable); arrays and other values are shared."""
  from flax.nnx.variablelib import Variable

  if isinstance(node, Pytree):
    new = memo.get(id(node))
    if new is None:
      new = _new_object(type(node), node._pytree__m.data)
      memo[id(node)] = new
      d = vars(new)
      # The copy lists its attributes (and dict entries) sorted by name, as
      # a graph rebuilt from its flat state does.
      for k, v in _sorted_items(vars(node)):
        d[k] = _copy_graph(v, memo, var_fn, (*path, k))
    return new
  if var_fn is not None and isinstance(node, Variable):
    new = memo.get(id(node))
    if new is None:
      new = memo[id(node)] = var_fn(path, node)
    return new
  t = type(node)
  if t is State:  # e.g. the params of nnx.split given to nnx.with_vars
    return State(_copy_graph(node._mapping, memo, var_fn, path), _copy=False)
  if t is list or t is tuple:
    return t(
      _copy_graph(v, memo, var_fn, (*path, i)) for i, v in enumerate(node)
    )
  if t is dict:
    return {
      k: _copy_graph(v, memo, var_fn, (*path, k))
      for k, v in _sorted_items(node)
    }
  return node


def _sorted_items(d: dict) -> list:
  try:
    return sorted(d.items(), key=lambda kv: _sort_key(kv[0]))
  except TypeError:  # keys that do not compare: kept in their order
    return list(d.items())


def _selected(node, only, graph):
  predicate = filterlib.to_predicate(only)
  for path, module in iter_modules(node, graph=graph):
    if predicate(path, module):
      yield path, module


_GraphMode = bool | None


def view(
  node: A,
  /,
  *,
  only: filterlib.Filter = ...,
  raise_if_not_found: bool = True,
  graph: _GraphMode = None,
  **kwargs,
) -> A:
  """A copy of ``node`` whose Modules had ``set_view(**kwargs)`` called.

  Each Module (matching ``only``) that defines ``set_view`` gets the keyword
  arguments its ``set_view`` accepts; the copy shares every Variable with
  ``node``. A keyword that no ``set_view`` accepts raises a ``ValueError``
  unless ``raise_if_not_found=False``. :func:`view_info` lists the
  accepted keywords.
  """
  new = _copy_graph(node, {})
  used = set()
  for _, module in _selected(new, only, graph):
    set_view = getattr(type(module), 'set_view', None)
    if set_view is None:
      continue
    params = inspect.signature(set_view).parameters
    takes_all = any(p.kind is p.VAR_KEYWORD for p in params.values())
    accepted = {k: v for k, v in kwargs.items() if takes_all or k in params}
    if accepted:
      used.update(accepted)
      module.set_view(**accepted)
  unused = sorted(set(kwargs) - used)
  if unused and raise_if_not_found:
    raise ValueError(
      f'Unused keys found in nnx.view: {unused}. No selected Module has a '
      'set_view method taking them; see nnx.view_info(node).'
    )
  return new


def with_attributes(
  node: A,
  /,
  *,
  only: filterlib.Filter = ...,
  raise_if_not_found: bool = True,
  graph: _GraphMode = None,
  **attributes: tp.Any,
) -> A:
  """A copy of ``node`` (sharing its Variables) with ``attributes`` set on
  the Modules matching ``only`` that have them."""
  new = _copy_graph(node, {})
  remaining = set(attributes)
  for _, module in _selected(new, only, graph):
    for name, value in attributes.items():
      if hasattr(module, name):
        remaining.discard(name)
        setattr(module, name, value)
  if remaining and raise_if_not_found:
    raise ValueError(
      'Could not find at least one instance of the following attributes: '
      f'{sorted(remaining)}. No selected Module has them; check the '
      'spelling, or pass raise_if_not_found=False.'
    )
  return new


def _arg_docs(doc: str) -> dict:
  """``{name: description lines}`` of the ``Args:`` section of a Google
  style docstring."""
  lines = inspect.cleandoc(doc or '').splitlines()
  out: dict = {}
  in_args = False
  current = None
  base = None
  section = 0  # indent of the ``Args:`` line; its entries sit deeper
  for line in lines:
    stripped = line.strip()
    indent = len(line) - len(line.lstrip())
    if not in_args:
      in_args = stripped in ('Args:', 'Arguments:')
      section = indent
      continue
    if not stripped:
      current = None
      continue
    if base is None:
      base = indent
    if indent < base or indent <= section:
      break
    if indent == base and ':' in stripped:
      name, _, rest = stripped.partition(':')
      name = name.split('(')[0].strip()
      current = out.setdefault(name, [])
      if rest.strip():
        current.append(rest.strip())
    elif current is not None:
      current.append(stripped)
  return out


def view_info(
  node: Module, /, *, only: filterlib.Filter = ..., graph: bool | None = None
) -> str:
  """Describes the ``set_view`` keywords of the Module types in ``node``
  (the keywords :func:`view` accepts), one block per type, sorted by
  qualified class name (``make.<locals>.Block`` for a class defined in a
  function). Each keyword shows its annotation and default as ``str``
  does and the lines of its ``Args:`` entry; an undocumented ``set_view``
  shows its signature.

  Raises:
    KeyError: (the keyword) when a documented ``set_view`` leaves a
      keyword out of its ``Args:`` section.
  """
  by_type: dict = {}
  for _, module in _selected(node, only, graph):
    set_view = getattr(type(module), 'set_view', None)
    if set_view is not None:
      # Blocks are named (and sorted) by qualified class name, so a class
      # defined in a function reads ``make.<locals>.Block``.
      by_type.setdefault(type(module).__qualname__, set_view)
  blocks = []
  for name in sorted(by_type):
    set_view = by_type[name]
    lines = [f'{name}:']
    if set_view.__doc__ is None:  # undocumented: its signature instead
      lines.append(f'  set_view{inspect.signature(set_view)}')
      blocks.append('\n'.join(lines))
      continue
    docs = _arg_docs(set_view.__doc__)
    for pname, p in inspect.signature(set_view).parameters.items():
      if pname == 'self' or p.kind == p.VAR_POSITIONAL:
        continue
      if pname not in docs:
        # A documented set_view documents every keyword it takes.
        raise KeyError(pname)
      # Annotations and defaults as ``str`` shows them: ``<class 'bool'>``,
      # ``bool | None``, and ``<class 'inspect._empty'>`` for none.
      text = f'  {pname}: {p.annotation}'
      if p.default is not p.empty:
        text += f' = {p.default}'
      lines.append(text)
      lines.extend(f'    {d}' for d in docs[pname])
    blocks.append('\n'.join(lines))
  return '\n'.join(blocks)


# -- capture ----------------------------------------------------------------------


_CAPTURE_TYPES: dict = {}


def _capturing_type(cls, var_type):
  key = (cls, var_type)
  sub = _CAPTURE_TYPES.get(key)
  if sub is None:
    call = cls.__call__

    @functools.wraps(call)
    def __call__(self, *args, **kwargs):
      out = call(self, *args, **kwargs)
      self.sow(var_type, '__call__', out)
      return out

    sub = type(cls.__name__, (cls,), {'__call__': __call__})
    sub.__qualname__ = cls.__qualname__
    _CAPTURE_TYPES[key] = sub
  return sub


def capture(
  fn,
  *var_types,
  init=None,
  method_outputs=None,
):
  """Wraps ``fn`` to return ``(output, *captured)``: one State per type of
  ``var_types`` holding what :meth:`Module.sow` and
  :meth:`Module.perturb` recorded during the call.

  The Modules captured are those reachable from ``fn`` when it is a
  Module (or a method of one), else from its first positional argument; paths in the States are
  relative to it. While the call runs, their ``sow`` / ``perturb`` record
  into the capture (a value goes to the first of ``var_types`` it is an
  instance of, and is dropped if none) and the Modules are left as they
  are. ``init`` is a State of starting values (a ``sow`` reduces onto
  them; a ``perturb`` adds them instead of zeros, which is how gradients
  w.r.t. perturbations are taken). ``method_outputs=SomeVariableType``
  also sows the output of every captured Module's ``__call__`` as
  ``'__call__'``. Without ``var_types`` the call returns only the output.
  With a Variable type as first argument, ``capture`` returns a decorator.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> class Model(nnx.Module):
  ...   def __call__(self, x):
  ...     self.sow(nnx.Intermediate, 'h', x * 2)
  ...     return x + 1
  >>> y, inter = nnx.capture(Model(), nnx.Intermediate)(jnp.ones(1))
  >>> inter['h'].get_value()
  (Array([2.], dtype=float32),)
  """
  from flax.nnx import variablelib

  if isinstance(fn, type) and issubclass(fn, variablelib.Variable):
    types = (fn, *var_types)
    return lambda f: capture(
      f, *types, init=init, method_outputs=method_outputs
    )

  @functools.wraps(fn)
  def wrapper(*args, **kwargs):
    if isinstance(fn, Pytree):
      root = fn
    elif isinstance(getattr(fn, '__self__', None), Pytree):
      root = fn.__self__  # a method of a Module: that Module
    elif args:
      root = args[0]
    else:
      root = None
    init_values = _init_by_module(init)
    modules = _modules_of(root)
    for path, module in modules:
      own = init_values.get(path, {})
      setattr(module, _capture.ATTRIBUTE, _capture.new(var_types, own))
    swapped = []
    if method_outputs is not None:
      for _, module in modules:
        if type(module).__call__ is not object.__call__ and callable(module):
          swapped.append((module, type(module)))
          object.__setattr__(
            module, '__class__', _capturing_type(type(module), method_outputs)
          )
    stores = [{} for _ in var_types]
    try:
      out = fn(*args, **kwargs)
    finally:
      for module, cls in swapped:
        object.__setattr__(module, '__class__', cls)
      for path, module in modules:
        captures = _capture.of(module)
        if captures is None:  # a nested capture took it
          continue
        delattr(module, _capture.ATTRIBUTE)
        records = captures.get_raw_value()['records']
        for store, recorded in zip(stores, records):
          for name, var in recorded.items():
            store[(*path, name)] = var
    if not var_types:
      return out
    return (out, *map(_state_of, stores))

  return wrapper


def _modules_of(root) -> list:
  """``(path, module)`` for every Module reachable from ``root`` (its first
  path when reachable twice)."""
  if root is None:
    return []
  from flax.nnx import graphlib

  # iter_graph yields each object once, under the first path it meets
  return [
    (tuple(path), node)
    for path, node in graphlib.iter_graph(root, graph=True)
    if isinstance(node, Module)
  ]


def _init_by_module(state) -> dict:
  """``{module path: {name: raw value}}`` of a State (``init`` of
  :func:`capture`)."""
  if state is None:
    return {}
  from flax.nnx import variablelib

  flat = state.flat_state() if hasattr(state, 'flat_state') else state
  out: dict = {}
  for path, v in flat:
    if not path:
      continue
    value = v.get_value() if isinstance(v, variablelib.Variable) else v
    out.setdefault(tuple(path[:-1]), {})[path[-1]] = value
  return out


def _state_of(store: dict):
  from flax.nnx import statelib

  paths = sorted(store, key=lambda path: tuple(map(_sort_key, path)))
  return statelib.State._from_flat(paths, [store[p] for p in paths])
