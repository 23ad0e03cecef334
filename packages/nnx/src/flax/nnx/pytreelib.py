"""Pytree: the base of NNX objects (Modules, Rngs, Optimizers).

A Pytree is a regular mutable Python object with reference semantics. In
graph mode NNX traverses its attributes (sorted by name); in tree mode it is
also a JAX pytree whose children are its *data* attributes (Variables,
arrays, other Pytrees) and whose other attributes are static.

Every attribute gets a status, data or static, the first time it is set:
``nnx.data(...)`` / ``nnx.static(...)`` on assignment, a class annotation
(``nnx.Data[...]`` / ``nnx.Static[...]``), a dataclass field with
``metadata={'static': ...}``, or else the value itself (:func:`is_data`).
The status sticks until the attribute is deleted. A static attribute may not
hold data: assigning an array to it, or a list holding arrays, raises a
``ValueError`` (use ``nnx.data``, ``nnx.List`` or ``nnx.Dict``).

>>> from flax import nnx
>>> import jax, jax.numpy as jnp
>>> class Foo(nnx.Pytree):
...   def __init__(self):
...     self.w = nnx.Param(jnp.ones(2))
...     self.name = 'foo'
>>> jax.tree.map(lambda x: x * 2, Foo()).w[...].tolist()
[2.0, 2.0]
"""

import dataclasses
import operator
import threading
import typing as tp
import warnings

import jax
import numpy as np

from flax.nnx import _hijax_graph, reprlib, tracers, variablelib
from flax.nnx import visualization
from flax.nnx._common import EPOCH, MISSING, GraphNodeBase, Missing
from flax.nnx._common import trace_context_error, trace_state
from flax.nnx._variable_tree import is_ref
from flax.nnx.variablelib import Variable as Variable
from flax.typing import HashableMapping
from flax.typing import SizeBytes as SizeBytes
from flax import config as flax_config
import copy

A = tp.TypeVar('A')
T = tp.TypeVar('T')

#: Annotation of a class attribute that is always data: ``x: nnx.Data[int]``.
Data = tp.Annotated[A, '__data__']
#: Annotation of a class attribute that is always static.
Static = tp.Annotated[A, '__static__']


class AttributeStatus(tp.NamedTuple):
  """Whether an attribute is data, and whether that was set explicitly."""

  is_data: bool
  explicit: bool


# -- data / static markers -----------------------------------------------------


def _field(value, static: bool, kwargs):
  metadata = dict(kwargs.pop('metadata', None) or {})
  metadata['nnx_value'] = value
  metadata['static'] = static
  return dataclasses.field(metadata=metadata, **kwargs)


def data(value: tp.Any = MISSING, /, **kwargs) -> tp.Any:
  """Marks an attribute as data (a pytree child in tree mode).

  Wrap a value on assignment (``self.x = nnx.data(3)``), or use it as a class
  attribute / dataclass field default (``x: int = nnx.data()``; keyword
  arguments go to :func:`dataclasses.field`).

  >>> from flax import nnx
  >>> import jax
  >>> class Counter(nnx.Pytree):
  ...   def __init__(self):
  ...     self.count = nnx.data(0)
  >>> jax.tree.leaves(Counter())
  [0]
  """
  return _field(value, False, kwargs)


def static(value: tp.Any = MISSING, /, **kwargs) -> tp.Any:
  """Marks an attribute as static (pytree aux data in tree mode).

  >>> from flax import nnx
  >>> import jax
  >>> class Foo(nnx.Pytree):
  ...   def __init__(self):
  ...     self.sizes = nnx.static((1, 2))
  >>> jax.tree.leaves(Foo())
  []
  """
  return _field(value, True, kwargs)


def _marker(value):
  """``(is_static, wrapped value)`` of an ``nnx.data``/``nnx.static`` marker,
  else None."""
  if type(value) is dataclasses.Field:
    md = value.metadata
    if 'nnx_value' in md:
      return md['static'], md['nnx_value']
  return None


def _is_marker(value) -> bool:
  return type(value) is dataclasses.Field and 'nnx_value' in value.metadata


def _tag(marker) -> str:
  return 'static' if marker.metadata['static'] else 'data'


def _nested_tags(value) -> set:
  """The tags (``'data'``, ``'static'``) of the ``nnx.data``/``nnx.static``
  markers in the pytree ``value`` (graph nodes are not looked into)."""
  if _is_marker(value):
    return {_tag(value)}
  if isinstance(value, _SCALARS) or is_data(value) or callable(value):
    return set()
  leaves = jax.tree_util.tree_leaves(value, is_leaf=is_data)
  return {_tag(x) for x in leaves if _is_marker(x)}


def _unexpected_tags_error(obj, name, value, tags):
  return ValueError(
    f"Found unexpected tags {tags} on attribute '{type(obj).__name__}."
    f"{name}'. Values from nnx.data(...) and\nnnx.static(...) should be "
    'assigned to nnx.Pytree attributes directly, they should not be inside '
    f"other structures. Got value of type '{type(value)}' on Pytree of type "
    f"'{type(obj)}'."
  )


# -- what counts as data --------------------------------------------------------

_DATA_TYPES: list = [jax.Array, np.ndarray, jax.Ref, GraphNodeBase]
# what ``isinstance`` is asked; a ``jax.Ref`` is told apart by ``is_ref``
# (its metaclass check is slow, and most values set are not data)
_data_types = tuple(t for t in _DATA_TYPES if t is not jax.Ref)

# Exact types whose values hold no data and carry no ``nnx.data`` /
# ``nnx.static`` marker (a subclass may be anything); a type registered as
# data leaves the set, with those below it.
_PLAIN_TYPES = {str, int, float, bool, complex, type(None), bytes}


def register_data_type(type_: T, /) -> T:
  """Registers ``type_`` so that its instances count as data.

  Can be used as a class decorator.

  >>> from flax import nnx
  >>> @nnx.register_data_type
  ... class MyArray:
  ...   pass
  >>> nnx.is_data(MyArray())
  True
  """
  global _data_types
  if type_ not in _DATA_TYPES:
    _DATA_TYPES.append(type_)
    _data_types = tuple(t for t in _DATA_TYPES if t is not jax.Ref)
    for plain in [t for t in _PLAIN_TYPES if issubclass(t, type_)]:
      _PLAIN_TYPES.discard(plain)
  return type_


def is_data(value: tp.Any, /) -> bool:
  """Whether ``value`` itself is data: a JAX or NumPy array, a Variable, a
  Pytree (Module, Rngs, ...) or an instance of a registered data type.

  Containers are not data themselves (see :func:`has_data`).

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> nnx.is_data(jnp.ones(2)), nnx.is_data([jnp.ones(2)]), nnx.is_data(1)
  (True, False, False)
  """
  return isinstance(value, _data_types) or is_ref(value)


_SCALARS = (str, int, float, bool, complex, type(None), type, bytes)


def has_data(value: tp.Any, /) -> list:
  """The data (see :func:`is_data`) found in the pytree ``value``.

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> nnx.has_data([1, 'a', jnp.zeros(2)])
  [Array([0., 0.], dtype=float32)]
  """
  if isinstance(value, _SCALARS) or callable(value) and not is_data(value):
    return []
  leaves = jax.tree_util.tree_leaves(value, is_leaf=is_data)
  return [x for x in leaves if is_data(x)]


# -- errors ---------------------------------------------------------------------


def _annotate_option(cls, name, value) -> str:
  base = cls.__bases__[0].__name__
  return (
    f'  class {cls.__name__}({base}):\n'
    f'    {name}: {type(value).__name__} = nnx.data()\n\n'
  )


def _no_pytree_option(cls) -> str:
  base = cls.__bases__[0].__name__
  return f'  class {cls.__name__}({base}, pytree=False):\n\n'


def _data_on_static_error(obj, name, value, found):
  cls = type(obj)
  kinds = ', '.join(dict.fromkeys(type(x).__name__ for x in found))
  return ValueError(
    f"Found data on value of type '{type(value)}' assigned to static "
    f"attribute '{name}' of Pytree type '{cls}'. Static attributes should "
    'not contain data values. Consider one of the following options:\n\n'
    '1. If the attribute is meant to be static, remove the data values of '
    f'type(s):\n\n  {kinds}\n\n'
    '2. If the attribute is meant to be data, wrap the value with nnx.data '
    f' on assignment:\n\n  _.{name} = nnx.data(...)\n\n'
    '3. Alternatively, annotate the class attribute with nnx.data:\n\n'
    + _annotate_option(cls, name, value)
    + '4. If the container is a list or dict, try using nnx.List(...) or '
    'nnx.Dict(...) instead.\n\n'
    '5. Disable pytree for this class:\n\n' + _no_pytree_option(cls)
  )


def _unexpected_data_error(obj, name, value):
  cls = type(obj)
  return ValueError(
    f'Found unexpected data on value of type {type(value)} in static '
    f"attribute '{name}' of Pytree type '{cls}'. This is an error starting "
    'from Flax version 0.12.0.\nConsider one of the following options:\n\n'
    '1. If the attribute is meant to be static, either remove the data '
    'value or wrap it in a static container.\n'
    f'2. Wrap the value with nnx.data on assignment:\n\n'
    f'  _.{name} = nnx.data(...)\n\n'
    '3. Annotate the class attribute with nnx.data:\n\n'
    + _annotate_option(cls, name, value)
    + '4. If the container is a list or dict, try using nnx.List(...) or '
    'nnx.Dict(...) instead.\n'
    '5. Disable pytree for this class:\n\n' + _no_pytree_option(cls)
  )


# -- class-level status -------------------------------------------------------------


def _annotation_status(annotation):
  meta = getattr(annotation, '__metadata__', None)
  if meta:
    if '__data__' in meta:
      return True
    if '__static__' in meta:
      return False
  elif isinstance(annotation, str):
    text = annotation.replace(' ', '')
    for prefix in ('Data[', 'nnx.Data['):
      if text.startswith(prefix):
        return True
    for prefix in ('Static[', 'nnx.Static['):
      if text.startswith(prefix):
        return False
  return None


def _class_status(cls) -> dict:
  """``{name: is_data}`` for the attributes whose status the class fixes
  (annotations, ``nnx.data()``/``nnx.static()`` class attributes, dataclass
  fields with ``metadata={'static': ...}``)."""
  status = cls.__dict__.get('_pytree__cstatus')
  if status is not None:
    return status
  status = {}
  for klass in reversed(cls.__mro__):
    for name, ann in klass.__dict__.get('__annotations__', {}).items():
      s = _annotation_status(ann)
      if s is not None:
        status[name] = s
    for name, attr in list(klass.__dict__.items()):
      if type(attr) is dataclasses.Field and 'static' in attr.metadata:
        status[name] = not attr.metadata['static']
  if dataclasses.is_dataclass(cls):
    for f in dataclasses.fields(cls):
      if 'static' in f.metadata:
        status[f.name] = not f.metadata['static']
  type.__setattr__(cls, '_pytree__cstatus', status)
  return status


# Bumped whenever an attribute of a Pytree class is set or deleted: the
# cached attribute tables of every class are then computed again.
_CLASS_EPOCH = [0]

# What ``_class_table`` maps a name to when its class attribute is a data
# descriptor.
_DESCRIPTOR = 'descriptor'


def _class_table(cls) -> dict:
  """``{name: what assigning it means}`` for the names whose class fixes it:
  ``_DESCRIPTOR`` for names whose class attribute (anywhere in the MRO,
  ``object`` included) is a data descriptor (``__class__``, ``__dict__``,
  properties with setters, slots: assigning them goes through the
  descriptor), else whether the attribute is data (see
  :func:`_class_status`). Names not in the table are free."""
  cached = cls.__dict__.get('_pytree__table')
  if cached is not None and cached[0] == _CLASS_EPOCH[0]:
    return cached[1]
  table = dict(_class_status(cls))
  for klass in cls.__mro__:
    for name, attr in vars(klass).items():
      if hasattr(type(attr), '__set__'):
        table[name] = _DESCRIPTOR
  type.__setattr__(cls, '_pytree__table', (_CLASS_EPOCH[0], table))
  return table


class PytreeMeta(type):
  """Metaclass of Pytree: after ``__init__`` it checks that no static
  attribute holds data (for classes registered as pytrees)."""

  def __init__(cls, name, bases, namespace, /, **kwargs):
    super().__init__(name, bases, namespace)

  def __call__(cls, *args, **kwargs):
    obj = super().__call__(*args, **kwargs)
    if cls._pytree__is_pytree:
      check_pytree(obj)
    return obj

  def __setattr__(cls, name, value):
    # ``@dataclasses.dataclass`` on a Pytree class sets its generated
    # ``__repr__`` (a wrapped function) after ``__dataclass_fields__``: the
    # class keeps the Pytree repr instead.
    if (
      name == '__repr__'
      and '__dataclass_fields__' in cls.__dict__
      and hasattr(value, '__wrapped__')
    ):
      value = _pytree_repr
    super().__setattr__(name, value)
    if name != '_pytree__table':
      _CLASS_EPOCH[0] += 1

  def __delattr__(cls, name):
    super().__delattr__(name)
    _CLASS_EPOCH[0] += 1


def _pytree_repr(self):
  return Pytree.__repr__(self)


ObjectMeta = PytreeMeta


def check_pytree(pytree) -> None:
  """Raises a ``ValueError`` if a static attribute of ``pytree`` holds data
  (e.g. a list that had an array appended after assignment).

  >>> from flax import nnx
  >>> import jax.numpy as jnp
  >>> class Foo(nnx.Pytree):
  ...   def __init__(self):
  ...     self.xs = []
  >>> foo = Foo()
  >>> foo.xs.append(jnp.ones(1))
  >>> nnx.check_pytree(foo)
  Traceback (most recent call last):
    ...
  ValueError: Found unexpected data on value of type <class 'list'> in static attribute 'xs' ...
  """
  data_set = pytree._pytree__m.data
  for name, value in vars(pytree).items():
    if name in data_set or isinstance(value, _SCALARS):
      continue
    if has_data(value):
      raise _unexpected_data_error(pytree, name, value)


# -- bookkeeping records ----------------------------------------------------------

config = flax_config
ArrayRepr = reprlib.ArrayRepr
MutableArrayRepr = reprlib.MutableArrayRepr
VariableRepr = reprlib.VariableRepr


@dataclasses.dataclass
class ObjectContext(threading.local):
  """Per-thread state of a repr in progress: the objects already shown and
  their Variable statistics."""

  seen_modules_repr: tp.Optional[set[int]] = None
  node_stats: tp.Optional[dict[int, dict[type[Variable], SizeBytes]]] = None


OBJECT_CONTEXT = ObjectContext()


class PytreeState(reprlib.Representable):
  """Construction state of a Pytree: the JAX trace it was created in, and
  whether it is being initialized (``bridge.lazy_init``, a bridge Module's
  ``init``) and has run its ``setup`` (bridge Modules).

  The two flags travel with the object: through split/merge (graph and
  tree mode), transforms, copies and pickling.
  """

  __slots__ = ('_initializing', '_is_setup', '_trace_state')

  def __init__(self, initializing: bool = False, is_setup: bool = False):
    self._initializing, self._is_setup = initializing, is_setup
    self._trace_state = tracers.TraceState()

  # Read-only views of the construction state.
  initializing = property(operator.attrgetter('_initializing'))
  is_setup = property(operator.attrgetter('_is_setup'))
  trace_state = property(operator.attrgetter('_trace_state'))

  def __nnx_repr__(self):
    yield reprlib.Object(type=type(self))
    yield reprlib.Attr('trace_state', self._trace_state)


# -- Pytree -----------------------------------------------------------------------


class Pytree(GraphNodeBase, reprlib.Representable, metaclass=PytreeMeta):
  """Base class of NNX objects with reference semantics.

  Subclasses are registered as JAX pytrees (pass ``pytree=False`` in the
  class statement to opt out; the object is then a pytree leaf and its
  attributes are unchecked).
  """

  # ``_pytree__m`` holds NNX's bookkeeping in one record (one slot write
  # per new object): see ``PytreeRecord``.
  __slots__ = ('_pytree__m', '__dict__', '__weakref__')
  _pytree__is_pytree = True
  # How tree-mode keys are built from attribute names.
  _pytree__key = jax.tree_util.GetAttrKey

  def __init_subclass__(cls, pytree: bool | None = None, **kwargs):
    super().__init_subclass__(**kwargs)
    if pytree is None:  # inherited: subclasses of nnx.Object stay leaves
      pytree = cls._pytree__is_pytree
    cls._pytree__is_pytree = bool(pytree)
    if pytree:
      jax.tree_util.register_pytree_with_keys(
        cls,
        _pytree_flatten_with_keys,
        _make_unflatten(cls),
        _pytree_flatten,
      )

  def __new__(cls, *args, **kwargs):
    return _new_object(cls)

  def __setattr__(self, name, value):
    # Sets attribute ``name``, tracking its data/static status (see the
    # module docstring); ``setattr`` runs this function itself.
    m = self._pytree__m
    if m.trace is not None and m.trace != trace_state():
      raise trace_context_error(f'{type(self).__name__!r}', node=True)
    d = vars(self)
    data_set = m.data
    check = self._pytree__is_pytree
    if type(value) in _PLAIN_TYPES:
      # The common case while a module is built (sizes, flags, names): no
      # marker, no data, nothing to look into.
      marker = None
      data = container = False
    else:
      marker = _marker(value)
      if marker is not None:
        is_static, value = marker
      data = is_data(value)
      # Containers are looked into (for markers, and for data on a static
      # attribute); data, scalars and functions hold neither.
      container = not (data or isinstance(value, _SCALARS) or callable(value))
      if check and container:
        # markers belong on the attribute itself, not inside its value
        tags = _nested_tags(value)
        if tags:
          raise _unexpected_tags_error(self, name, value, tags)
    if marker is not None:
      if is_static:
        if check and (data or container and has_data(value)):
          raise ValueError(
            f"Found data in value of type '{type(value)}' annotated with "
            f"nnx.static(...) when setting attribute '{name}' of Pytree type "
            f"'{type(self)}'."
          )
        m.drop_data(name)
      else:
        m.add_data(name)
    elif name in data_set:
      pass
    elif name in d:
      # an existing static attribute stays static
      if check and (data or container):
        if data:
          raise ValueError(
            f"Cannot assign data value of type '{type(value)}' to static "
            f"attribute '{name}' of Pytree type '{type(self)}'. To override "
            'the status explicitly wrap the value with nnx.data on '
            f'assignment:\n\n  _.{name} = nnx.data(...)\n\n'
          )
        found = has_data(value)
        if found:
          raise _data_on_static_error(self, name, value, found)
    else:
      how = _class_table(type(self)).get(name)
      if how is _DESCRIPTOR:
        # ``__class__``, properties with setters, slots: Python's own
        # assignment runs (the value is not an attribute of the Pytree).
        object.__setattr__(self, name, value)
        return
      if how is None:
        if data:
          m.add_data(name)
        elif check and container:
          found = has_data(value)
          if found:
            raise _data_on_static_error(self, name, value, found)
      elif how:
        m.add_data(name)
    d[name] = value
    m.version += 1
    EPOCH.value += 1

  def __delattr__(self, name):
    d = vars(self)
    if name not in d:
      # a property deleter, ``__class__`` (TypeError) or a missing name
      object.__delattr__(self, name)
      return
    # (deleting an attribute is not checked against the trace level, as in
    # Flax 0.12.8)
    del d[name]
    m = self._pytree__m
    m.drop_data(name)
    m.version += 1
    EPOCH.value += 1

  @property
  def _pytree__state(self) -> PytreeState:
    """The construction state of this object (the trace it was created at)."""
    m = self._pytree__m
    state = m.state
    if state is None:
      state = m.state = PytreeState()
      state._trace_state = tracers.TraceState.at(m.trace)
    elif state._trace_state._jax_trace != m.trace:
      # a new trace state, the flags kept
      state = m.state = PytreeState(state._initializing, state._is_setup)
      state._trace_state = tracers.TraceState.at(m.trace)
    return state

  @property
  def _pytree__nodes(self) -> HashableMapping[str, bool]:
    """Each attribute's name mapped to whether it is data (a node)."""
    data = self._pytree__m.data
    return HashableMapping({name: name in data for name in vars(self)})

  @property
  def _object__state(self) -> PytreeState:
    warnings.warn(
      "'_object__state' is deprecated, use '_pytree__state' instead.",
      DeprecationWarning,
      stacklevel=2,
    )
    return self._pytree__state

  @property
  def _object__nodes(self) -> HashableMapping[str, bool]:
    warnings.warn(
      "'_object__nodes' is deprecated, use '_pytree__nodes' instead.",
      DeprecationWarning,
      stacklevel=2,
    )
    return self._pytree__nodes

  def __getstate__(self):
    state = {
      'attrs': dict(vars(self)),
      'data': set(self._pytree__m.data),
    }
    flags = state_flags(self)
    if flags is not None:
      state['flags'] = flags
    return state

  def __setstate__(self, state):
    vars(self).update(state['attrs'])
    object.__setattr__(self, '_pytree__m', PytreeRecord(state['data']))
    if state.get('flags') is not None:
      set_state_flags(self, state['flags'])

  def __reduce_ex__(self, protocol):
    return (_reconstruct, (type(self),), self.__getstate__())

  def __deepcopy__(self, memo):

    new = _new_object(type(self))
    memo[id(self)] = new
    new.__setstate__(copy.deepcopy(self.__getstate__(), memo))
    return new

  def __copy__(self):
    new = _new_object(type(self))
    new.__setstate__(self.__getstate__())
    return new

  def __repr__(self):
    if type(self).__nnx_repr__ is not reprlib.Representable.__nnx_repr__:
      return reprlib.get_repr(self)
    return reprlib.object_repr(
      self, object_attributes(self), object_comment(self)
    )

  def _repr_pretty_(self, p, cycle):
    p.text(repr(self))

  def __treescope_repr__(self, path, subtree_renderer):
    attributes = {str(k): v for k, v in object_attributes(self)}
    return visualization.render_object(
      self, attributes, object_comment(self), path, subtree_renderer
    )


class Object(Pytree, pytree=False):
  """A Pytree that is not registered as a JAX pytree: JAX sees it as a
  leaf, and its attributes may mix data and static values freely."""


# (``nnx.List`` / ``nnx.Dict`` set their items through it)
_set_attribute = Pytree.__setattr__


def _reconstruct(cls):
  return _new_object(cls)


class PytreeRecord:
  """NNX's bookkeeping for one Pytree object (its ``_pytree__m`` slot).

  Attributes:
    data: the names of the data attributes (a shared frozenset until the
      first change through add_data / drop_data, then a set of its own).
    version: bumped on every attribute set or delete.
    view: the cached flat view of the object's graph (graph mode).
    aux: the cached pytree aux data (tree mode).
    trace: the trace level the object was created at (by its constructor,
      a copy or NNX's rebuilding); setting an attribute from another trace
      level is a TraceContextError.
    state: the object's ``PytreeState``, built on first access.
  """

  __slots__ = ('data', 'version', 'view', 'aux', 'trace', 'state')

  def __init__(self, data=frozenset()):
    # Copy on write: a record starts with a frozenset that may be shared
    # (objects nnx.merge builds from one GraphDef node share one), and gets
    # a set of its own on its first change.
    self.data = frozenset(data)
    self.version = 0
    self.view = None
    self.aux = None
    self.trace = trace_state()
    self.state = None

  def add_data(self, name):
    data = self.data
    if name not in data:
      if type(data) is frozenset:
        data = self.data = set(data)
      data.add(name)

  def drop_data(self, name):
    data = self.data
    if name in data:
      if type(data) is frozenset:
        data = self.data = set(data)
      data.discard(name)

  def __repr__(self):
    return (
      f'PytreeRecord(data={self.data!r}, version={self.version}, '
      f'trace={self.trace!r})'
    )


def _new_object(cls, data=frozenset()):
  obj = object.__new__(cls)
  object.__setattr__(obj, '_pytree__m', PytreeRecord(data))
  return obj


def state_flags(obj) -> tuple[bool, bool] | None:
  """``(initializing, is_setup)`` of the ``PytreeState`` of Pytree ``obj``
  when either is set, else None (the common case, checked without building
  the state)."""
  state = obj._pytree__m.state
  if state is None or not (state._initializing or state._is_setup):
    return None
  return (state._initializing, state._is_setup)


def set_state_flags(obj, flags: tuple[bool, bool] | None) -> None:
  """Sets ``(initializing, is_setup)`` of Pytree ``obj`` (None: both False).

  A change counts as a structure change: cached flattenings (graphdefs,
  pytree aux data) of graphs holding ``obj`` are rebuilt, since they carry
  the flags.
  """
  new = (False, False) if flags is None else (bool(flags[0]), bool(flags[1]))
  if (state_flags(obj) or (False, False)) == new:
    return
  state = obj._pytree__state
  state._initializing, state._is_setup = new
  m = obj._pytree__m
  m.version += 1
  EPOCH.value += 1


def set_initializing(obj, value: bool) -> None:
  """Sets whether Pytree ``obj`` is being initialized (its ``setup`` flag
  kept)."""
  flags = state_flags(obj)
  set_state_flags(obj, (value, False if flags is None else flags[1]))


def set_is_setup(obj, value: bool) -> None:
  """Sets whether Pytree ``obj`` has run its ``setup`` (its initializing
  flag kept)."""
  flags = state_flags(obj)
  set_state_flags(obj, (False if flags is None else flags[0], value))


def data_names(obj) -> set:
  """The names of the data attributes of a Pytree (its pytree children in
  tree mode)."""
  return obj._pytree__m.data


def object_attributes(obj) -> tp.Iterator[tuple[str, tp.Any]]:
  """The public attributes of a Pytree, in insertion order."""
  for key, value in vars(obj).items():
    if not (isinstance(key, str) and key.startswith('_')):
      yield key, value


# A Pytree attribute holding a traced hijax Variable is data: registered
# at the first hijax Variable (see ``variablelib.FIRST_HIJAX_HOOKS``), so
# that programs without any keep the shorter data checks.
variablelib.FIRST_HIJAX_HOOKS.append(
  lambda: register_data_type(_hijax_graph.TracedHijaxVariable)
)


# A Pytree's reprs total the Variables of its graph. The graph traversal
# lives on the graph floor, above this one: flax.nnx.graphwalk registers it
# here when it is imported (importing any part of flax.nnx imports it).
_graph_traversal: list[tp.Callable[[tp.Any], tp.Iterable]] = []


def register_graph_traversal(iter_graph) -> None:
  """Sets the ``iter_graph(node) -> ((path, value), ...)`` function that
  :func:`object_comment` walks a Pytree's graph with."""
  _graph_traversal[:] = [iter_graph]


def object_comment(obj) -> str:
  """``' # Param: 9 (36 B), ...'``: the Variable totals of a Pytree's graph
  by type, as its reprs show them after the type name ('' if none)."""
  (iter_graph,) = _graph_traversal
  counts: dict[str, tuple[int, int]] = {}
  for _, var in iter_graph(obj):
    if not isinstance(var, Variable):
      continue
    stats = reprlib._array_stats(var._raw_value)
    if stats is None:
      continue
    var_type = var.var_type
    name = var_type._repr_group or var_type.__name__
    size, nbytes = counts.get(name, (0, 0))
    counts[name] = (size + stats[0], nbytes + stats[1])
  return reprlib.counts_comment(counts)


# -- dataclasses ------------------------------------------------------------------


def dataclass(
  cls=None,
  /,
  *,
  init=True,
  eq=True,
  order=False,
  unsafe_hash=False,
  match_args=True,
  kw_only=False,
  slots=False,
  weakref_slot=False,
) -> tp.Any:
  """:func:`dataclasses.dataclass` for Pytree subclasses.

  Fields take their data/static status from ``nnx.data()`` /
  ``nnx.static()`` defaults, ``nnx.Data``/``nnx.Static`` annotations or
  their values.

  >>> from flax import nnx
  >>> import jax, jax.numpy as jnp
  >>> @nnx.dataclass
  ... class Point(nnx.Pytree):
  ...   x: jax.Array
  ...   label: str = nnx.static(default='p')
  >>> p = Point(jnp.ones(2))
  >>> p.label, jax.tree.leaves(p)
  ('p', [Array([1., 1.], dtype=float32)])
  """
  # Every keyword goes on to dataclasses.dataclass as it is.
  options = {k: v for k, v in locals().items() if k != 'cls'}

  def wrap(klass):
    if not (isinstance(klass, type) and issubclass(klass, Pytree)):
      raise TypeError(
        f'nnx.dataclass expects a subclass of nnx.Pytree, got {klass!r}.'
      )
    if slots or weakref_slot:
      raise ValueError(
        'nnx.dataclass does not support slots=True or weakref_slot=True: '
        'Pytree instances keep their attributes in a __dict__.'
      )
    out = dataclasses.dataclass(klass, repr=False, **options)
    if '_pytree__cstatus' in out.__dict__:  # recomputed with the fields
      type.__delattr__(out, '_pytree__cstatus')
    return out

  return wrap if cls is None else wrap(cls)


# -- tree mode ----------------------------------------------------------------


class _StaticAux:
  """Static attributes of a Pytree as hashable pytree aux data."""

  __slots__ = ('type', 'names', 'static', 'flags', '_hash')

  def __init__(self, typ, names, static, flags=None):
    self.type = typ
    self.names = names  # data attributes, sorted
    self.static = static  # (name, value) of the others, sorted
    self.flags = flags  # see ``state_flags``
    self._hash = None

  def __repr__(self):
    # as a treedef shows it: (data names, static names, static values)
    keys = tuple(k for k, _ in self.static)
    values = tuple(v for _, v in self.static)
    return repr((self.names, keys, values))

  def __eq__(self, other):
    if type(other) is not _StaticAux:
      return False
    if (
      self.type is not other.type
      or self.names != other.names
      or self.flags != other.flags
    ):
      return False
    try:
      return bool(self.static == other.static)
    except Exception:
      return self.static is other.static

  def __hash__(self):
    h = self._hash
    if h is None:
      try:
        h = hash((self.type, self.names, self.static))
      except TypeError:
        h = hash((self.type, self.names, tuple(k for k, _ in self.static)))
      self._hash = h
    return h


def _sort_key(name):
  # int keys (nnx.List items) sort numerically, before str keys
  return (0, name, '') if type(name) is int else (1, 0, name)


def _aux_of(obj):
  """``(names of data attributes, aux)``, cached until the attributes of
  ``obj`` are set or deleted."""
  m = obj._pytree__m
  cached = m.aux
  version = m.version
  if cached is not None and cached[0] == version:
    return cached[1], cached[2]
  d = vars(obj)
  data = m.data
  names = tuple(sorted((n for n in d if n in data), key=_sort_key))
  static = tuple(
    sorted(((k, v) for k, v in d.items() if k not in data), key=_item_key)
  )
  aux = _StaticAux(type(obj), names, static, state_flags(obj))
  m.aux = (version, names, aux)
  return names, aux


def _item_key(item):
  return _sort_key(item[0])


def _pytree_flatten(obj):
  names, aux = _aux_of(obj)
  return tuple(map(vars(obj).__getitem__, names)), aux


def _pytree_flatten_with_keys(obj):
  names, aux = _aux_of(obj)
  d = vars(obj)
  key = obj._pytree__key
  return tuple((key(n), d[n]) for n in names), aux


def _make_unflatten(cls):
  def unflatten(aux, children):
    obj = _new_object(aux.type, aux.names)
    # data attributes first, then the static ones, each sorted (as Flax)
    attrs = vars(obj)
    attrs.update(zip(aux.names, children))
    attrs.update(aux.static)
    if aux.flags is not None:
      set_state_flags(obj, aux.flags)
    return obj

  return unflatten


__all__ = [
  'AttributeStatus',
  'Data',
  'MISSING',
  'Missing',
  'Object',
  'ObjectMeta',
  'Pytree',
  'PytreeMeta',
  'Static',
  'check_pytree',
  'data',
  'dataclass',
  'has_data',
  'is_data',
  'register_data_type',
  'static',
]
