"""``nn.jit``: Linen methods compiled once per Module configuration.

Every jitted method keeps one ``flax.core.lift.jit`` function per
*fingerprint*: the class and field values of the Module (recursively
through the Modules it holds), its call state, and the Modules or
Variables passed as arguments. The lifted function always runs the
current call's body when JAX traces it, so a Module instance built for
one ``apply`` never leaks into another. Scope paths, mutability, flags and
the variables' shapes are part of ``lift.jit``'s own cache key.

A cached call does not run the Python body, so its effects on the Module's
call state (the automatic-name cursor) are recorded when the body is
traced and replayed on later calls with the same fingerprint.
"""

import dataclasses
import functools
import weakref

from flax.core import lift
from flax.core import state_dict
from flax.core.frozen_dict import FrozenDict
from flax.core.scope import Variable
from flax.linen import _lifting
from flax.linen import module as module_lib
from flax.linen.module import Module

_CACHE_SIZE = 64


class _Identity:
  """Hashes and compares an unhashable value by identity (keeps it alive)."""

  __slots__ = ('value',)

  def __init__(self, value):
    self.value = value

  def __hash__(self):
    return id(self.value)

  def __eq__(self, other):
    return isinstance(other, _Identity) and other.value is self.value


def _state_key(state) -> tuple:
  # Whether ``setup`` already ran outside does not matter: the clone that
  # runs inside always runs it (on its own lifted scope).
  return (
    state.in_compact_method,
    state.in_setup,
    state.is_initialized,
    tuple(sorted(state.autoname_cursor.items())),
  )


def _fingerprint(x):
  """A hashable value that is equal for equally configured objects."""
  if isinstance(x, Module):
    cls = type(x)
    return (
      cls,
      tuple(
        _fingerprint(getattr(x, name))
        for name in module_lib._config_field_names(cls)
      ),
    )
  if isinstance(x, Variable):
    return (Variable, x.collection, x.name, x.unbox)
  if isinstance(x, (list, tuple)):
    return (type(x), tuple(_fingerprint(v) for v in x))
  if isinstance(x, (dict, FrozenDict)):
    items = tuple((k, _fingerprint(v)) for k, v in x.items())
    try:
      items = tuple(sorted(items, key=lambda kv: repr(kv[0])))
    except TypeError:
      pass
    return (type(x), items)
  if not dataclasses.is_dataclass(x) and state_dict.is_serializable(x):
    # Objects with state-dict handlers (dataclasses aside: their static
    # fields count too) compare by their state, without being hashed.
    return (type(x), _fingerprint(state_dict.to_state_dict(x)))
  try:
    hash(x)
  except TypeError:
    return _Identity(x)
  # The type keeps 1, 1.0 and True apart (they trace differently).
  return (type(x), x)


@dataclasses.dataclass(frozen=True)
class _HashableProxy:
  """A weak handle on a Module that hashes and compares by its
  configuration (the fingerprint above), so it can be a static argument
  of ``jax.jit``: equally configured Modules share one compilation.

  >>> from flax import linen as nn
  >>> from flax.linen.transforms import _HashableProxy
  >>> class Layer(nn.Module):
  ...   features: int
  >>> layer = Layer(10)
  >>> proxy = _HashableProxy.from_module(layer)
  >>> proxy == _HashableProxy.from_module(Layer(10)), proxy.module is layer
  (True, True)
  >>> proxy == _HashableProxy.from_module(Layer(20))
  False
  """

  module_ref: weakref.ReferenceType = dataclasses.field(compare=False)
  hash_key: int

  @classmethod
  def from_module(cls, module: Module) -> '_HashableProxy':
    return cls(weakref.ref(module), hash(_fingerprint(module)))

  @property
  def module(self):
    """The Module (None once it is garbage collected)."""
    return self.module_ref()


def _cache_key(module, arg_objects) -> tuple:
  return (
    _fingerprint(module),
    _state_key(module._state),
    tuple(_fingerprint(obj) for obj in arg_objects),
  )


class _JitCache:
  """The lifted functions of one jitted method, one per fingerprint."""

  def __init__(self, trafo_kwargs):
    self.trafo_kwargs = trafo_kwargs
    self.entries = {}

  def call(self, module, args, kwargs, make_body):
    """Runs ``make_body(arg_objects)`` under the cached lifted ``jit``.

    ``make_body(arg_objects)`` returns ``body(scopes, *args, **kwargs)``
    (the current call's body) which returns ``(result, exit_state)``.
    """
    scopes, args, kwargs, arg_objects = _lifting.get_module_scopes(
      module, args, kwargs
    )
    key = _cache_key(module, arg_objects)
    entry = self.entries.get(key)
    if entry is None:
      entry = _Entry(self.trafo_kwargs)
      if len(self.entries) >= _CACHE_SIZE:
        self.entries.clear()
      self.entries[key] = entry
    return entry.run(module, make_body(arg_objects), scopes, args, kwargs)


class _Entry:
  __slots__ = ('body', 'exit_state', 'lifted', 'traced')

  def __init__(self, trafo_kwargs):
    self.body = None
    self.exit_state = None
    self.traced = False

    def core_fn(scopes, *args, **kwargs):
      self.traced = True
      result, self.exit_state = self.body(scopes, *args, **kwargs)
      return result

    self.lifted = lift.jit(core_fn, **trafo_kwargs)

  def run(self, module, body, scopes, args, kwargs):
    outer_body, self.body, self.traced = self.body, body, False
    try:
      result = self.lifted(scopes, *args, **kwargs)
    finally:
      self.body = outer_body
    if not self.traced and self.exit_state is not None:
      module._state.reimport(self.exit_state)
    return result


def _run_body(fn, module, cloned, state, fn_name, args, kwargs):
  object.__setattr__(cloned, '_state', state.export())
  result = fn(cloned, *args, **kwargs)
  exit_state = cloned._state.export()
  module._state.reimport(cloned._state)
  _lifting.check_return_value(result, fn_name)
  return result, exit_state


_transformed = {}


def _memoized(build, target, methods, trafo_kwargs):
  """Returns the same transformed class or function for the same request.

  ``nn.jit(Cls)`` is often written inside a compact method, so it runs on
  every call; handing back the same object keeps its compiled functions.
  """
  try:
    key = (build, target, methods, tuple(trafo_kwargs.items()))
    hash(key)
  except TypeError:
    key = (
      build,
      _Identity(target),
      _fingerprint(methods),
      _fingerprint(trafo_kwargs),
    )
  result = _transformed.get(key)
  if result is None:
    if len(_transformed) >= _CACHE_SIZE * 4:
      _transformed.clear()
    result = _transformed[key] = build(target, methods, trafo_kwargs)
  return result


def module_class_jit(module_class, methods=None, **trafo_kwargs):
  """Returns ``Jit<Name>``, a subclass whose ``methods`` are jitted."""
  return _memoized(_build_class, module_class, methods, trafo_kwargs)


def method_jit(class_fn, **trafo_kwargs):
  """Jits a method (or a function taking a Module first)."""
  return _memoized(_build_method, class_fn, None, trafo_kwargs)


def _build_class(module_class, methods, trafo_kwargs):
  specs = _lifting._method_specs(module_class, methods, trafo_kwargs)

  def create(fn_name, kwargs):
    fn = getattr(module_class, fn_name)
    cache = _JitCache(kwargs)

    @functools.wraps(fn)
    def wrapped_fn(self, *args, **call_kwargs):
      state = self._state.export()

      def make_body(arg_objects):
        def body(scopes, *args, **call_kwargs):
          attrs = {
            n: getattr(self, n)
            for n in module_lib._config_field_names(type(self))
          }
          carrier = module_class(parent=None, name=self.name, **attrs)
          cloned, args, call_kwargs = _lifting.set_module_scopes(
            carrier, args, call_kwargs, scopes, arg_objects
          )
          return _run_body(fn, self, cloned, state, fn_name, args, call_kwargs)

        return body

      return cache.call(self, args, call_kwargs, make_body)

    return wrapped_fn

  namespace = {name: create(name, kw) for name, kw in specs.items()}
  namespace['__module__'] = 'flax.linen.transforms'
  namespace['__qualname__'] = f'Jit{module_class.__name__}'
  return type(f'Jit{module_class.__name__}', (module_class,), namespace)


def _build_method(class_fn, methods, trafo_kwargs):
  del methods
  prewrapped = module_lib.wrap_method_once(class_fn)
  fn_name = getattr(class_fn, '__name__', None)
  cache = _JitCache(trafo_kwargs)

  @functools.wraps(prewrapped)
  def wrapped_fn(self, *args, **kwargs):
    state = self._state.export()

    def make_body(arg_objects):
      def body(scopes, *args, **kwargs):
        cloned, args, kwargs = _lifting.set_module_scopes(
          self, args, kwargs, scopes, arg_objects
        )
        return _run_body(prewrapped, self, cloned, state, fn_name, args, kwargs)

      return body

    return cache.call(self, args, kwargs, make_body)

  return wrapped_fn
