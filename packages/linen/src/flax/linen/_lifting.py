"""Linen side of lifting: turning Modules into scopes and back.

A lifted transform (``flax.core.lift``) works on scopes. To transform a
Module method we collect the scopes of the Module, of the Modules held in
its fields and of Modules or Variables passed as arguments, hand them to
the core transform, and inside it rebuild clones of the Modules bound to
the lifted scopes.
"""

import dataclasses
import functools
import typing

import jax

from flax import errors
from flax.core.scope import Scope
from flax.core.scope import Variable
from flax.linen import module as module_lib
from flax.linen.module import Module


class _Placeholder:
  """Stands for a Module or Variable argument while it is lifted."""

  __slots__ = ('index',)

  def __init__(self, index):
    self.index = index

  def __repr__(self):
    return f'_Placeholder({self.index})'


jax.tree_util.register_pytree_node(
  _Placeholder, lambda p: ((), p.index), lambda index, _: _Placeholder(index)
)


def _is_stateful(x) -> bool:
  return isinstance(x, (Module, Variable)) and isinstance(x.scope, Scope)


def _is_leaf(x) -> bool:
  return isinstance(x, (Module, Variable, _Placeholder))


def _module_attrs(module) -> dict:
  return {
    f.name: getattr(module, f.name)
    for f in dataclasses.fields(module)
    if f.name != 'parent' and f.init
  }


def get_module_scopes(module, args=None, kwargs=None):
  """Returns ``(scopes, args, kwargs, arg_objects)`` for lifting ``module``.

  Module/Variable arguments are replaced by placeholders; their scopes come
  first, then those of the field submodules (depth first), then the
  Module's own scope.
  """
  scopes = []
  arg_objects = []

  def arg_scope(x):
    if _is_stateful(x):
      if isinstance(x, Module):
        x._try_setup(shallow=True)
      scopes.append(x.scope)
      arg_objects.append(x)
      return _Placeholder(len(arg_objects) - 1)
    return x

  args, kwargs = jax.tree_util.tree_map(
    arg_scope, (tuple(args or ()), dict(kwargs or {})), is_leaf=_is_leaf
  )

  def visit(mdl):
    mdl._try_setup(shallow=True)
    for leaf in jax.tree_util.tree_leaves(_module_attrs(mdl), is_leaf=_is_leaf):
      if _is_stateful(leaf):
        if isinstance(leaf, Module):
          visit(leaf)
        else:
          scopes.append(leaf.scope)
    scopes.append(mdl.scope)

  visit(module)
  return scopes, args, kwargs, arg_objects


def set_module_scopes(module, args, kwargs, scopes, arg_objects):
  """Inverse of ``get_module_scopes``: clones bound to ``scopes``.

  A Module or Variable met several times (as an argument and a field, or
  in two fields) becomes one clone, so its uses share the variables.
  """
  index = 0
  rebuilt = {}

  def take():
    nonlocal index
    scope = scopes[index]
    index += 1
    return scope

  def once(original, clone):
    return rebuilt.setdefault(id(original), (original, clone))[1]

  def rebuild(x, scope):
    if isinstance(x, Variable):
      return once(x, Variable(scope, x.collection, x.name, unbox=x.unbox))
    return once(x, x.clone(parent=scope))

  def set_arg(x):
    if isinstance(x, _Placeholder):
      return rebuild(arg_objects[x.index], take())
    return x

  args, kwargs = jax.tree_util.tree_map(
    set_arg, (args, kwargs), is_leaf=_is_leaf
  )

  def visit(mdl):
    def set_leaf(x):
      if _is_stateful(x):
        if isinstance(x, Module):
          return visit(x)
        return rebuild(x, take())
      return x

    attrs = jax.tree_util.tree_map(
      set_leaf, _module_attrs(mdl), is_leaf=_is_leaf
    )
    return once(mdl, mdl.clone(parent=take(), **attrs))

  return visit(module), args, kwargs


def check_return_value(result, fn_name):
  leaves = jax.tree_util.tree_leaves(
    result, is_leaf=lambda x: isinstance(x, (Module, Variable))
  )
  if any(isinstance(x, (Module, Variable)) for x in leaves):
    raise errors.TransformedMethodReturnValueError(fn_name)


def is_module_class(target) -> bool:
  return isinstance(target, type) and issubclass(target, Module)


class PartialModuleClass(typing.NamedTuple):
  """A ``functools.partial`` (nested ones flattened) of a Module class."""

  module_class: type
  args: tuple
  keywords: dict

  def rewrap(self, lifted_class):
    """The same partial application of ``lifted_class``."""
    return functools.partial(lifted_class, *self.args, **self.keywords)


def partial_module_class(target) -> PartialModuleClass | None:
  """Unwraps ``functools.partial(ModuleClass, ...)``: lifted transforms
  lift the class and apply the same arguments to the lifted class."""
  if not isinstance(target, functools.partial):
    return None
  args, keywords = (), {}
  while isinstance(target, functools.partial):
    # inner positional arguments come first; outer keywords win
    args = target.args + args
    keywords = {**target.keywords, **keywords}
    target = target.func
  if not is_module_class(target):
    return None
  return PartialModuleClass(target, args, keywords)


def _method_specs(module_class, methods, trafo_kwargs):
  if methods is None:
    methods = ['__call__']
  if isinstance(methods, dict):
    return {
      name: {**trafo_kwargs, **dict(kw or {})} for name, kw in methods.items()
    }
  if isinstance(methods, str):
    methods = [methods]
  return {name: dict(trafo_kwargs) for name in methods}


def _class_prefix(transform) -> str:
  """``'Vmap'`` for ``lift.vmap``: the transform's name, capitalized."""
  return getattr(transform, '__name__', 'Transform').capitalize()


def module_class_lift_transform(
  transform, module_class, *trafo_args, methods=None, **trafo_kwargs
):
  """Returns a subclass of ``module_class`` whose ``methods`` are lifted.

  The subclass is named after the transform and the class (``VmapMLP``
  for ``lift.vmap``), so instances get automatic names such as
  ``VmapMLP_0``.
  """
  prefix = _class_prefix(transform)
  specs = _method_specs(module_class, methods, trafo_kwargs)

  def create(fn_name, kwargs):
    fn = getattr(module_class, fn_name)

    @functools.wraps(fn)
    def wrapped_fn(self, *args, **call_kwargs):
      state = self._state.export()

      def core_fn(scopes, *args, **call_kwargs):
        attrs = _module_attrs(self)
        carrier = module_class(parent=None, **attrs)
        cloned, args, call_kwargs = set_module_scopes(
          carrier, args, call_kwargs, scopes, arg_objects
        )
        object.__setattr__(cloned, '_state', state.export())
        result = fn(cloned, *args, **call_kwargs)
        self._state.reimport(cloned._state)
        check_return_value(result, fn_name)
        return result

      scopes, args, call_kwargs, arg_objects = get_module_scopes(
        self, args, call_kwargs
      )
      trafo_fn = transform(core_fn, *trafo_args, **kwargs)
      return trafo_fn(scopes, *args, **call_kwargs)

    return wrapped_fn

  namespace = {name: create(name, kw) for name, kw in specs.items()}
  # Transformed classes live in ``flax.linen.transforms`` (as in Flax).
  namespace['__module__'] = 'flax.linen.transforms'
  namespace['__qualname__'] = f'{prefix}{module_class.__name__}'
  return type(f'{prefix}{module_class.__name__}', (module_class,), namespace)


def decorator_lift_transform(
  transform, class_fn, *trafo_args, multi_scope=True, **trafo_kwargs
):
  """Lifts a method (or functions taking a Module first).

  ``class_fn`` is one function or a tuple of them; ``transform`` receives
  one scope function per target, followed by ``trafo_args``.
  """
  class_fns = class_fn if isinstance(class_fn, tuple) else (class_fn,)
  prewrapped = [module_lib.wrap_method_once(f) for f in class_fns]

  @functools.wraps(prewrapped[0])
  def wrapped_fn(self, *args, **kwargs):
    state = self._state.export()

    def make_core_fn(prewrapped_fn, fn):
      def core_fn(scopes, *args, **kwargs):
        if not multi_scope:
          scopes = [scopes]
        cloned, args, kwargs = set_module_scopes(
          self, args, kwargs, scopes, arg_objects
        )
        object.__setattr__(cloned, '_state', state.export())
        result = prewrapped_fn(cloned, *args, **kwargs)
        self._state.reimport(cloned._state)
        check_return_value(result, getattr(fn, '__name__', None))
        return result

      return core_fn

    core_fns = [make_core_fn(p, f) for p, f in zip(prewrapped, class_fns)]
    trafo_fn = transform(*core_fns, *trafo_args, **trafo_kwargs)
    scopes, args, kwargs, arg_objects = get_module_scopes(self, args, kwargs)
    if not multi_scope:
      if len(scopes) != 1:
        raise TypeError(
          'nn.jvp and nn.custom_vjp lift one Module only, but this call reaches '
          f'{len(scopes)} bound Modules (Modules held as attributes of, or '
          'passed as arguments to, the transformed function). Create the '
          'inner Modules inside the transformed Module instead.'
        )
      scopes = scopes[0]
    return trafo_fn(scopes, *args, **kwargs)

  return wrapped_fn


def lift_transform(
  transform, target, *trafo_args, methods=None, **trafo_kwargs
):
  """Applies a core lifted transform to a Module class or a method.

  ``transform`` is a function of ``flax.core.lift`` (or one with the same
  calling convention: the scope function first, then ``trafo_args`` and
  ``trafo_kwargs``).
  """
  if is_module_class(target):
    return module_class_lift_transform(
      transform,
      target,
      *trafo_args,
      methods=methods,
      **trafo_kwargs,
    )
  partial = partial_module_class(target)
  if partial is not None:
    return partial.rewrap(
      lift_transform(
        transform,
        partial.module_class,
        *trafo_args,
        methods=methods,
        **trafo_kwargs,
      )
    )
  if callable(target) and not isinstance(target, Module):
    if methods is not None:
      raise ValueError(
        'Methods should not be provided when transforming a function.'
      )
    return decorator_lift_transform(
      transform, target, *trafo_args, **trafo_kwargs
    )
  raise errors.TransformTargetError(target)


def lift_direct_transform(
  transform, targets, mdl, *args, multi_scope=True, name='transform', **kwargs
):
  """Runs a lifted transform of functions ``fn(module, ...)`` right away."""
  for target in targets:
    if is_module_class(target):
      raise ValueError(f'The {name} transform does not support Module classes.')
    if not callable(target):
      raise ValueError('transform target must be callable')
  targets = tuple(module_lib._get_unbound_fn(t) for t in targets)

  def aug_transform(*fns):
    return functools.partial(transform, *fns)

  return decorator_lift_transform(
    aug_transform, targets, multi_scope=multi_scope
  )(mdl, *args, **kwargs)
