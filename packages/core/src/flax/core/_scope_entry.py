"""Entry points that build a root :class:`~flax.core.scope.Scope`:
:func:`bind`, :func:`apply`, :func:`init` and :func:`lazy_init`
(re-exported by :mod:`flax.core.scope`)."""

import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Optional

from flax import errors
from flax.core._filters import CollectionFilter, in_filter
from flax.core._rng import is_valid_rng, is_valid_rngs

if TYPE_CHECKING:
  from flax.core.scope import Scope

VariableDict = Mapping[str, Any]
_Flags = Optional[Mapping]
_ScopeFn = Callable[..., Any]


def _scope_class():
  # Imported on use: flax.core.scope imports this module at its end.
  from flax.core.scope import Scope

  return Scope


def _is_valid_variables(variables: Any) -> bool:
  if not isinstance(variables, Mapping):
    return False
  for name, col in variables.items():
    if not isinstance(name, str) or not isinstance(col, Mapping):
      return False
    if not all(isinstance(k, str) for k in col.keys()):
      return False
  return True


def _unfreeze_variables(variables, mutable):
  from flax.core.frozen_dict import unfreeze

  return {
    key: unfreeze(value) if in_filter(mutable, key) else value
    for key, value in variables.items()
  }


def _check_rngs(rngs):
  if rngs is not None and not is_valid_rngs(rngs):
    raise errors.InvalidRngError(
      'rngs should be a dictionary mapping strings to `jax.PRNGKey`.'
    )


def _rngs_dict(rngs, what: str) -> Mapping:
  """``rngs`` as a dict of streams (a bare key is ``{'params': key}``);
  anything else is a ValueError that starts with ``what``."""
  if not isinstance(rngs, Mapping) and is_valid_rng(rngs):
    return {'params': rngs}
  if not is_valid_rngs(rngs):
    raise ValueError(
      f'{what} function should be a ``jax.PRNGKey`` or a dictionary mapping '
      'strings to ``jax.PRNGKey``.'
    )
  return rngs


def bind(
  variables: VariableDict,
  rngs: Optional[Mapping] = None,
  mutable: CollectionFilter = False,
  flags: Optional[Mapping] = None,
) -> 'Scope':
  """Returns a root scope over ``variables`` with an unlimited lifetime.

  >>> import jax.numpy as jnp
  >>> from flax.core import bind
  >>> scope = bind({'params': {'w': jnp.ones(2)}})
  >>> scope.get_variable('params', 'w').tolist()
  [1.0, 1.0]

  Raises:
    ApplyScopeInvalidVariablesTypeError: ``variables`` is not a dict of
      collections.
    InvalidRngError: ``rngs`` is not a dict of PRNG keys.
  """
  if not _is_valid_variables(variables):
    raise errors.ApplyScopeInvalidVariablesTypeError()
  _check_rngs(rngs)
  return _scope_class()(
    _unfreeze_variables(variables, mutable),
    rngs=rngs,
    mutable=mutable,
    flags=flags,
  )


def apply(
  fn: Callable[..., Any],
  mutable: CollectionFilter = False,
  flags: Optional[Mapping] = None,
) -> Callable[..., Any]:
  """Turns ``fn(scope, *args)`` into ``f(variables, *args, rngs=None)``.

  The returned function gives ``fn``'s output, or ``(output, mutated)`` when
  ``mutable`` is not False, where ``mutated`` holds the mutable collections.

  >>> import jax.numpy as jnp
  >>> from flax.core import apply
  >>> def count(scope):
  ...   n = scope.variable('state', 'n', jnp.zeros, ())
  ...   n.value += 1
  >>> _, state = apply(count, mutable='state')({'state': {'n': 1.0}})
  >>> float(state['state']['n'])
  2.0
  """

  @functools.wraps(fn)
  def wrapper(variables, *args, rngs=None, **kwargs):
    if not _is_valid_variables(variables):
      raise errors.ApplyScopeInvalidVariablesTypeError()
    if rngs is not None:
      rngs = _rngs_dict(rngs, 'The ``rngs`` argument passed to an apply')
    params = variables.get('params')
    if isinstance(params, Mapping) and 'params' in params:
      raise errors.ApplyScopeInvalidVariablesStructureError(variables)
    bound = bind(variables, rngs=rngs, mutable=mutable, flags=flags)
    with bound.temporary() as root:
      y = fn(root, *args, **kwargs)
      # Read while the scope is still valid.
      return y if mutable is False else (y, root.mutable_variables())

  return wrapper


def init(
  fn: _ScopeFn,
  mutable: CollectionFilter = True,
  flags: _Flags = None,
) -> Callable[..., Any]:
  """Turns ``fn(scope, *args)`` into ``f(rngs, *args) -> (out, variables)``.

  ``rngs`` is a PRNG key (meaning ``{'params': key}``) or a dict of keys.

  >>> import jax, jax.numpy as jnp
  >>> from flax.core import init
  >>> def f(scope):
  ...   return scope.param('b', jax.nn.initializers.zeros, (3,))
  >>> out, variables = init(f)(jax.random.key(0))
  >>> variables['params']['b'].shape
  (3,)
  """

  @functools.wraps(fn)
  def wrapper(rngs, *args, **kwargs):
    keys = _rngs_dict(rngs, 'First argument passed to an init')
    # An init is an apply to no variables, flagged as initializing.
    initializing = apply(
      fn, mutable=mutable, flags={**(flags or {}), 'initializing': True}
    )
    return initializing({}, *args, rngs=keys, **kwargs)

  return wrapper


def lazy_init(
  fn: _ScopeFn,
  mutable: CollectionFilter = True,
  flags: _Flags = None,
) -> Callable[..., Any]:
  """Like :func:`init` but only runs the computation needed for variables.

  Arguments may be ``jax.ShapeDtypeStruct``. Returns the variables; a
  variable whose value depends on the input data raises ``LazyInitError``.

  >>> import jax, jax.numpy as jnp
  >>> from flax.core import lazy_init
  >>> def f(scope, x):
  ...   return x @ scope.param('w', jax.nn.initializers.ones, (3, 2))
  >>> x = jax.ShapeDtypeStruct((1, 3), jnp.float32)
  >>> lazy_init(f)(jax.random.key(0), x)['params']['w'].shape
  (3, 2)
  """
  from flax.core import partial_eval

  def init_variables(*args, **kwargs):
    return init(fn, mutable=mutable, flags=flags)(*args, **kwargs)[1]

  return partial_eval.lazy_init(init_variables)
