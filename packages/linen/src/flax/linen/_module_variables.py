"""The variable and PRNG API of Linen Modules (a mixin of ``Module``).

These methods only need the Module's ``scope`` and ``_state``; ``Module``
inherits them.
"""

from typing import Callable

import jax

from flax import errors


def _sow_init():
  return ()


def _sow_reduce(xs, x):
  return (*xs, x)


class UnboundDeclarationError(ValueError, AssertionError):
  """``param``/``variable`` called on a Module bound to no variables.

  Both a ValueError and an AssertionError (what Flax 0.12.8 raises here).
  """


class VariableMethods:
  """``param``, ``variable``, ``make_rng``, ``sow``, ... of ``Module``."""

  # -- variables ---------------------------------------------------------------

  @property
  def variables(self):
    """The variables of this Module, ``{collection: {...}}``."""
    if self.scope is None:
      raise ValueError("Can't access variables on unbound modules")
    return self.scope.variables()

  @property
  def path(self):
    """The path of this Module from the root, a tuple of names."""
    if self.scope is None:
      raise ValueError("Can't access module paths on unbound modules.")
    return self.scope.path

  def _require_scope(self, what, error=ValueError):
    if self.scope is None:
      raise error(f"Can't {what} on unbound modules")
    return self.scope

  def variable(
    self,
    col: str,
    name: str,
    init_fn=None,
    *init_args,
    unbox: bool = True,
    **init_kwargs,
  ):
    """Declares and returns a ``Variable`` of collection ``col``.

    ``init_fn(*init_args)`` gives the initial value (no PRNG key is passed;
    call ``self.make_rng`` in it if needed). ``.value`` reads and writes.
    """
    if not self._initialization_allowed:
      raise ValueError(
        'Variables must be initialized in `setup()` or in a method '
        'wrapped in `@compact`'
      )
    scope = self._require_scope('declare variables', UnboundDeclarationError)
    if self._name_taken(name, col):
      raise errors.NameInUseError('variable', name, type(self).__name__)
    v = scope.variable(
      col, name, init_fn, *init_args, unbox=unbox, **init_kwargs
    )
    self._state.children[name] = col
    return v

  def param(
    self,
    name: str,
    init_fn: Callable,
    *init_args,
    unbox: bool = True,
    **init_kwargs,
  ):
    """Declares and returns a parameter (collection ``'params'``).

    On first use the value is ``init_fn(self.make_rng('params'),
    *init_args)``; later the stored value is returned (after checking that
    its shape matches what ``init_fn`` would give).
    """
    if not self._initialization_allowed:
      raise ValueError(
        'Parameters must be initialized in `setup()` or in a method '
        'wrapped in `@compact`'
      )
    scope = self._require_scope('declare parameters', UnboundDeclarationError)
    if self._name_taken(name, 'params'):
      raise errors.NameInUseError('param', name, type(self).__name__)
    v = scope.param(name, init_fn, *init_args, unbox=unbox, **init_kwargs)
    self._state.children[name] = 'params'
    return v

  def has_variable(self, col: str, name: str) -> bool:
    """Whether variable ``name`` of collection ``col`` exists."""
    return self._require_scope('access variables').has_variable(col, name)

  def is_mutable_collection(self, col: str) -> bool:
    """Whether collection ``col`` may be changed in this call."""
    return self._require_scope('check mutability').is_mutable_collection(col)

  def has_rng(self, name: str) -> bool:
    """Whether PRNG stream ``name`` is available."""
    return self._require_scope('query for RNGs').has_rng(name)

  def make_rng(self, name: str = 'params'):
    """Returns a new PRNG key from stream ``name``.

    Every call gives a different key, derived deterministically from the
    stream's root key, the Module path and a per-Module counter.
    """
    return self._require_scope('use RNGs').make_rng(name)

  def is_initializing(self) -> bool:
    """True while running under ``init``."""
    scope = self._require_scope('check if running under init()')
    return scope.get_flag('initializing', False)

  def get_variable(self, col: str, name: str, default=None):
    """Returns the value of a variable, or ``default`` if it is missing."""
    return self._require_scope('access variables').get_variable(
      col, name, default
    )

  def put_variable(self, col: str, name: str, value) -> None:
    """Sets the value of a variable (its collection must be mutable)."""
    scope = self._require_scope('access variables')
    scope.put_variable(col, name, value)

  def sow(
    self, col: str, name: str, value, reduce_fn=_sow_reduce, init_fn=_sow_init
  ) -> bool:
    """Stores an intermediate value in collection ``col``.

    By default the values of repeated calls accumulate in a tuple. Nothing
    is stored (and ``False`` is returned) when ``col`` is not mutable.

    >>> import jax, jax.numpy as jnp
    >>> from flax import linen as nn
    >>> class M(nn.Module):
    ...   def __call__(self, x):
    ...     self.sow('intermediates', 'h', x * 2)
    ...     return x
    >>> _, state = M().apply({}, jnp.ones(2), mutable=['intermediates'])
    >>> state['intermediates']['h']
    (Array([2., 2.], dtype=float32),)
    """
    if self.scope is None:
      raise ValueError("Can't store variables on unbound modules")
    scope = self.scope
    if not scope.is_mutable_collection(col):
      return False
    if scope.has_variable(col, name):
      xs = scope.get_variable(col, name)
    else:
      scope.reserve(name, col)
      self._state.children[name] = col
      xs = init_fn()
    scope.put_variable(col, name, reduce_fn(xs, value))
    return True

  def perturb(self, name: str, value, collection: str = 'perturbations'):
    """Adds a zero-valued variable to ``value`` so that its gradient can be
    taken (the gradient of the intermediate ``value``)."""
    if self.scope is None:
      raise ValueError("Can't store variables on unbound modules")
    scope = self.scope
    if scope.is_mutable_collection(collection):
      if not scope.has_variable(collection, name):
        scope.reserve(name, collection)
        self._state.children[name] = collection
        zeros = jax.tree_util.tree_map(jax.numpy.zeros_like, value)
        scope.put_variable(collection, name, zeros)
    if collection in scope.root.variables():
      if not scope.has_variable(collection, name):
        raise ValueError(
          f'Perturbation collection {collection} present, but missing '
          f'perturbation variable {name}'
        )
      old = scope.get_variable(collection, name)
      value = jax.tree_util.tree_map(jax.numpy.add, value, old)
    return value
