"""Errors raised by Flax.

Every error is a subclass of :class:`FlaxError`. Its message says what went
wrong and ends with the place in this project's documentation (the
``flax.errors`` page of the API reference, ``api/errors.html`` of the site
that ``nox -s docs`` builds) that explains the error and how to fix it:

>>> from flax import errors
>>> e = errors.ScopeParamNotFoundError('kernel', '/Dense_0')
>>> str(e)
'Could not find parameter named "kernel" in scope "/Dense_0". (docs: api/errors.html#flax.errors.ScopeParamNotFoundError)'
>>> e.message
'Could not find parameter named "kernel" in scope "/Dense_0".'
>>> isinstance(e, errors.FlaxError)
True
"""

# The page of this project's documentation site that documents every error
# (docs/api/errors.md), relative to the site's root.
_ERROR_PAGE = 'api/errors.html'


class FlaxError(Exception):
  """Base class of the errors that Flax raises.

  The message is followed by the place in the documentation that explains
  the concrete error class.
  """

  def __init__(self, message):
    self.message = message
    name = type(self).__name__
    super().__init__(f'{message} (docs: {_ERROR_PAGE}#flax.errors.{name})')

  def __reduce__(self):
    # Errors are rebuilt from their final text, so they pickle (e.g. across
    # processes) even though subclasses take structured arguments.
    return (_rebuild, (type(self), self.message))


def _rebuild(cls, message):
  error = cls.__new__(cls)
  FlaxError.__init__(error, message)
  return error


# ---------------------------------------------------------------------------
# Initialization and application of variables (flax.core.scope).


class LazyInitError(FlaxError):
  """Lazy init met a value that depends on the data of the inputs.

  ``Module.lazy_init`` only works when the variables can be created from the
  shapes of the inputs (e.g. ``jax.ShapeDtypeStruct``); compute initial values
  that do not depend on input values, or use ``init``.
  """

  def __init__(self, partial_val):
    super().__init__(
      'Lazy init encountered a value that could with '
      f'the given inputs (shape: {partial_val}).'
    )


class TraceContextError(FlaxError):
  """A Flax object was modified inside a different JAX trace level.

  State held by a Module or Scope may only be changed inside the transform in
  which it was created; use Flax's lifted transforms rather than raw JAX
  transforms over Flax objects.
  """

  def __init__(self, message):
    super().__init__(message)


class ApplyScopeInvalidVariablesTypeError(FlaxError):
  """The first argument of ``apply`` is not a dict of collections.

  Pass ``{'params': params, ...}`` (a dict whose keys are collection names),
  not the parameters themselves.
  """

  def __init__(self):
    message = (
      'The first argument passed to an apply function should be a dictionary '
      'of collections. Each collection should be a dictionary with string '
      'keys.'
    )
    super().__init__(message)


class ApplyScopeInvalidVariablesStructureError(FlaxError):
  """The variables passed to ``apply`` have an extra ``'params'`` level.

  This happens with ``apply({'params': variables}, ...)`` where ``variables``
  already is ``{'params': ...}``; pass ``variables`` itself.
  """

  def __init__(self, variables):
    super().__init__(
      'Expect the `variables` (first argument) passed to apply() '
      'to be a dict with the structure {"params": ...}, but got a dict '
      'with an extra params layer, i.e.  {"params": {"params": ... } }. '
      'You should instead pass in your dict\'s ["params"].'
    )


class ScopeParamNotFoundError(FlaxError):
  """A parameter is missing from the ``params`` collection at apply time.

  The collection exists but has no entry of that name in this scope, usually
  because the variables come from a different model (or model version) than
  the one being applied.
  """

  def __init__(self, param_name, scope_path):
    super().__init__(
      f'Could not find parameter named "{param_name}" in scope "{scope_path}".'
    )


class ScopeCollectionNotFound(FlaxError):
  """A variable was read from a collection that the variables lack.

  Pass the collection to ``apply`` (e.g. ``{'params': ..., 'batch_stats':
  ...}``), or make it mutable so that it is initialized.
  """

  def __init__(self, col_name, var_name, scope_path):
    super().__init__(
      f'Tried to access "{var_name}" from collection "{col_name}" in '
      f'"{scope_path}" but the collection is empty.'
    )


class ScopeParamShapeError(FlaxError):
  """An existing parameter has a different shape than its initializer makes.

  Usually the inputs have a different shape than at ``init``, or a submodule
  name is reused for layers of different sizes.
  """

  def __init__(self, param_name, scope_path, value_shape, init_shape):
    where = f'For parameter "{param_name}" in "{scope_path}"'
    message = (
      f'{where}, the given initializer is expected to generate shape '
      f'{init_shape}, but the existing parameter it received has shape '
      f'{value_shape}.'
    )
    super().__init__(message)


class ScopeVariableNotFoundError(FlaxError):
  """A variable was requested that does not exist and cannot be created.

  Either the variable was never initialized, or its collection is immutable
  here so it cannot be created now; pass it in, or make it mutable.
  """

  def __init__(self, name, col, scope_path):
    super().__init__(
      f'No Variable named "{name}" for collection "{col}" '
      f'exists in "{scope_path}".'
    )


class InvalidFilterError(FlaxError):
  """A collection filter is not of a supported kind.

  A filter is a bool, a collection name, a sequence of names, or a
  ``DenyList``.
  """

  def __init__(self, filter_like):
    super().__init__(f'Invalid Filter: "{filter_like}"')


class InvalidScopeError(FlaxError):
  """A temporary scope was used after its context ended."""

  def __init__(self, scope_name):
    super().__init__(f'The scope "{scope_name}" is no longer valid.')


class ModifyScopeVariableError(FlaxError):
  """A variable of an immutable collection was assigned a new value.

  Make the collection mutable, e.g. ``apply(variables, x,
  mutable=['batch_stats'])``, which then returns ``(output, updates)``.
  """

  def __init__(self, col, variable_name, scope_path):
    super().__init__(
      f'Cannot update variable "{variable_name}" in "{scope_path}" because '
      f'collection "{col}" is immutable.'
    )


class JaxTransformError(FlaxError):
  """A raw JAX transform was used across Flax Module or Scope state.

  Use the lifted transforms (``nn.vmap``, ``nn.scan``, ``nn.jit``, ...) so
  that variables and PRNG streams are handled correctly.
  """

  def __init__(self):
    super().__init__('Jax transforms and Flax models cannot be mixed.')


class PartitioningUnspecifiedError(FlaxError):
  """A transform adds an axis to a ``Partitioned`` variable but has no name.

  Pass ``metadata_params={nn.PARTITION_NAME: 'layers'}`` (or ``None`` for an
  unsharded axis) to ``nn.scan`` / ``nn.vmap``.
  """

  def __init__(self, target):
    super().__init__(
      'Trying to transform a Partitioned variable but "partition_name" '
      f'is not specified in metadata_params: {target}'
    )


class InvalidRngError(FlaxError):
  """A PRNG stream was requested that was not given, or a bad key was given.

  Pass the stream to ``init``/``apply``, e.g. ``rngs={'dropout': key}``
  (``init(key, ...)`` stands for ``rngs={'params': key}``).
  """

  def __init__(self, msg):
    super().__init__(msg)


# ---------------------------------------------------------------------------
# Linen Modules (flax.linen.module).


class ApplyModuleInvalidMethodError(FlaxError):
  """``apply(method=...)`` got something that is not a usable method.

  ``method`` must be a method of the Module, the name of one, or a function
  taking the Module as its first argument.
  """

  def __init__(self, method):
    super().__init__(
      f'Cannot call apply(): {method} is not a valid function for apply().'
    )


class CallCompactUnboundModuleError(FlaxError):
  """A ``@compact`` method was called on a Module that is not bound.

  Use ``module.init(...)`` / ``module.apply(...)``, or ``module.bind(...)``,
  to call it with variables.
  """

  def __init__(self):
    super().__init__("Can't call compact methods on unbound modules")


class CallSetupUnboundModuleError(FlaxError):
  """``setup()`` was called by hand on a Module that is not bound.

  Setup runs by itself when a bound Module is used; bind it first (e.g.
  ``module.bind(variables)``) or go through ``init``/``apply``.
  """

  def __init__(self):
    super().__init__("Can't call compact methods on unbound modules")


class CallShareScopeOnUnboundModuleError(FlaxError):
  """``nn.share_scope`` was called with a Module that is not bound."""

  def __init__(self):
    super().__init__("Can't call `share_scope` on unbound modules")


class CallUnbindOnUnboundModuleError(FlaxError):
  """``unbind()`` was called on a Module that is not bound."""

  def __init__(self):
    super().__init__("Can't call `unbind()` on unbound modules")


class InvalidInstanceModuleError(FlaxError):
  """``init``/``apply`` was called on a Module class instead of an instance.

  Construct the Module first: ``MyModule(...).init(key, x)``.
  """

  def __init__(self):
    super().__init__(
      'Can only call init, init_with_output or apply methods on an instance '
      'of the Module class, not the Module class itself'
    )


class IncorrectPostInitOverrideError(FlaxError):
  """A Module subclass overrides ``__post_init__`` without calling super.

  Call ``super().__post_init__()`` in the override.
  """

  def __init__(self):
    super().__init__(
      'Overrode `.__post_init__()` without calling `super().__post_init__()`'
    )


class DescriptorAttributeError(FlaxError):
  """A property of a Module raised ``AttributeError``.

  A property (or other descriptor) read an attribute that does not exist.
  """

  def __init__(self):
    super().__init__(
      'Trying to access a property that is accessing a non-existent attribute.'
    )


class NameInUseError(FlaxError):
  """A name is used twice in one Module.

  Submodules, parameters and variables of a Module share one namespace; give
  each a distinct name.
  """

  def __init__(self, key_type, value, module_name):
    super().__init__(
      f'Could not create {key_type} "{value}" in Module {module_name}: '
      'Name in use.'
    )


class AssignSubModuleError(FlaxError):
  """A submodule was created outside ``setup`` or a ``@compact`` method.

  Define submodules in ``setup()``, or decorate the method that creates them
  with ``@nn.compact``.
  """

  def __init__(self, cls):
    super().__init__(
      f'Submodule {cls} must be defined in `setup()` or in a method wrapped '
      'in `@compact`'
    )


class SetAttributeInModuleSetupError(FlaxError):
  """A dataclass field of a Module was reassigned inside ``setup``.

  Construction attributes are fixed; store derived values under a new
  attribute name.
  """

  def __init__(self):
    super().__init__('Module construction attributes are frozen.')


class SetAttributeFrozenModuleError(FlaxError):
  """An attribute of a Module was set outside its ``setup`` method.

  Modules are frozen after setup; use ``module.clone(attr=value)`` to get a
  changed copy.
  """

  def __init__(self, module_cls, attr_name, attr_val):
    super().__init__(
      f"Can't set {attr_name}={attr_val} for Module of type {module_cls}: "
      'Module instance is frozen outside of setup method.'
    )


class MultipleMethodsCompactError(FlaxError):
  """More than one method of a Module class is decorated ``@compact``.

  Kept for code that raises or catches it: Linen itself allows several
  compact methods (as Flax 0.12.8 does) and never raises it.
  """

  def __init__(self):
    super().__init__('Only one method per class can be @compact')


class ReservedModuleAttributeError(FlaxError):
  """A Module subclass declares a field named ``parent`` or ``name``."""

  def __init__(self, annotations):
    super().__init__(
      f'properties `parent` and `name` are reserved: {annotations}'
    )


class TransformedMethodReturnValueError(FlaxError):
  """A transformed Module method returned Modules or Variables.

  Return arrays (or pytrees of arrays) from transformed methods.
  """

  def __init__(self, name):
    super().__init__(
      f'Transformed module method {name} cannot return Modules or Variables.'
    )


class TransformTargetError(FlaxError):
  """A lifted transform was given a Module instance or a non-callable.

  Transform the Module class (``nn.vmap(nn.Dense, ...)(3)``) or a function
  taking a Module as its first argument.
  """

  def __init__(self, target):
    super().__init__(
      'Linen transformations must be applied to Modules classes or functions '
      'taking a Module instance as the first argument. The provided target '
      f'is not a Module class or callable: {target}'
    )


# ---------------------------------------------------------------------------
# NNX Variables.


class ImmutableVariableError(FlaxError):
  """An immutable Variable was modified."""

  def __init__(self, message):
    super().__init__(message)


# ---------------------------------------------------------------------------
# Checkpointing (flax.training.checkpoints).


class AlreadyExistsError(FlaxError):
  """A copy would overwrite an existing file; pass ``overwrite=True``."""

  def __init__(self, path):
    super().__init__(f'Trying overwrite an existing file: "{path}".')


class InvalidCheckpointError(FlaxError):
  """A checkpoint is older than one already saved.

  Saving at a step that is not newer than the latest checkpoint needs
  ``overwrite=True``.
  """

  def __init__(self, path, step):
    super().__init__(
      f'Trying to save an outdated checkpoint at step: "{step}" and path: '
      f'"{path}".'
    )


def _checkpoint_failure(step, where, *details):
  """The text of the multiprocess-array checkpoint errors: which step and
  place failed, then what went wrong (``details`` joined by spaces)."""
  return f'{where[0]} at step: "{step}" {where[1]}: ' + ' '.join(details)


class MPACheckpointingRequiredError(FlaxError):
  """A multiprocess array was saved without an async checkpoint manager."""

  def __init__(self, path, step):
    super().__init__(
      _checkpoint_failure(
        step,
        ('Checkpoint failed', f'and path: "{path}"'),
        'Target contains a multiprocess array should be saved/restored',
        'with a GlobalAsyncCheckpointManager.',
      )
    )


class MPARestoreTargetRequiredError(FlaxError):
  """A multiprocess array was restored without a target of real arrays."""

  def __init__(self, path, step, key=None):
    super().__init__(
      _checkpoint_failure(
        step,
        ('Restore checkpoint failed', f'and path: "{path}"'),
        'Checkpoints containing a multiprocess array need to be restored',
        'with a target with pre-created arrays. If you cannot provide a full',
        'valid target, consider ``allow_partial_mpa_restoration=True``.',
        f'This error fired when trying to restore array at {key}.'
        if key
        else '',
      )
    )


class MPARestoreDataCorruptedError(FlaxError):
  """A saved multiprocess array has no ``commit_success.txt`` marker."""

  def __init__(self, step, path):
    super().__init__(
      _checkpoint_failure(
        step,
        ('Restore checkpoint failed', f'on multiprocess array at  "{path}"'),
        'No "commit_success.txt" found on this "_gda" directory. Was its',
        'save halted before completion?',
      )
    )


class MPARestoreTypeNotMatchError(FlaxError):
  """A multiprocess array's type does not match the target's (legacy)."""

  def __init__(self, step, gda_path):
    super().__init__(
      _checkpoint_failure(
        step,
        (
          'Restore checkpoint failed',
          f'on multiprocess array at  "{gda_path}"',
        ),
        'The array type provided by the target does not match the JAX',
        'global configuration, namely the jax.config.jax_array.',
      )
    )


# ---------------------------------------------------------------------------
# Utilities (flax.cursor, flax.traverse_util).


class CursorFindError(FlaxError):
  """``Cursor.find`` found no match, or more than one."""

  def __init__(self, cursor=None, cursor2=None):
    # Cursors are truthy as their values' lengths are (an empty container
    # reads as no match; a scalar has no length: TypeError).
    message = 'No object found given the conditions of the cond_fn.'
    if cursor and cursor2:
      paths = f'{_cursor_path(cursor)} and {_cursor_path(cursor2)}'
      message = (
        'More than one object found given the conditions of the cond_fn. '
        f'The first two objects found have the following paths: {paths}'
      )
    super().__init__(message)


def _cursor_path(cursor) -> str:
  """``['a'][0].b``: how the cursor was reached from its root."""
  path = getattr(cursor, '_path', '')
  return path if isinstance(path, str) else ''


class TraverseTreeError(FlaxError):
  """``Cursor.apply_update`` was given neither ``update_fn`` nor ``cond_fn``."""

  def __init__(self, update_fn, cond_fn):
    if update_fn is None and cond_fn is None:
      super().__init__(
        'Both update_fn and cond_fn are None. Exactly one of them must be None.'
      )
    else:
      super().__init__(
        'Both update_fn and cond_fn are not None. Exactly one of them must '
        'be not None.'
      )


__all__ = [
  name
  for name, value in dict(globals()).items()
  if isinstance(value, type) and issubclass(value, FlaxError)
]
