"""Lifted ``jax.jit``: one compiled function per static configuration.

The body of a jitted function is traced once per *static* configuration of
its scopes (their paths, mutable collections and flags) and per structure,
shapes and dtypes of the variables, PRNG keys and arguments. PRNG keys are
traced data, and so are the PRNG counters: the body draws keys from fresh
counters, and the number of keys it drew (recorded at trace time) is added
to the outer counters after every call, so a cached call advances them
like a traced one.

Two calls of the same jitted scope inside one ``apply`` must not reuse the
same keys. When a scope's counters are not all zero on entry, the running
total of its counters is folded into its keys as a traced number; the
first entry (all counters zero) uses the keys unchanged, as Flax does.
"""

import functools
from collections.abc import Iterable, Mapping
from typing import Any, Callable

import jax
import numpy as np

from flax.core._filters import CollectionFilter, PRNGSequenceFilter
from flax.core._pack import pack
from flax.core._rng import LazyRng


def _hashable(x):
  if isinstance(x, Mapping):
    return tuple(sorted((str(k), _hashable(v)) for k, v in x.items()))
  if isinstance(x, (set, frozenset)):
    return ('set', tuple(sorted(map(str, x))))
  if isinstance(x, (list, tuple)):
    return tuple(_hashable(v) for v in x)
  try:
    hash(x)
  except TypeError:
    return ('id', id(x))
  return x


def _is_lazy_rng(x) -> bool:
  return isinstance(x, LazyRng)


def _materialize_rngs(rng_groups):
  return jax.tree_util.tree_map(
    lambda r: r.clear_suffix() if isinstance(r, LazyRng) else r,
    rng_groups,
    is_leaf=_is_lazy_rng,
  )


def _counter_total(counters: dict) -> int:
  total = 0
  for value in counters.values():
    total += _counter_total(value) if isinstance(value, dict) else value
  return total


def _copy_counters(counters: dict) -> dict:
  return {
    k: _copy_counters(v) if isinstance(v, dict) else v
    for k, v in counters.items()
  }


def _add_counters(target: dict, delta: dict) -> None:
  # In place: child scopes hold references to the nested dicts.
  for key, value in delta.items():
    if isinstance(value, dict):
      _add_counters(target.setdefault(key, {}), value)
    elif value:
      target[key] = target.get(key, 0) + value


def _fold_epochs(rng_groups, epochs):
  """Folds ``epochs[i]`` (if not None) into every key of scope ``i``."""

  def fold(rng, epoch):
    return LazyRng(jax.random.fold_in(rng.rng, epoch), ())

  return tuple(
    tuple(
      group
      if epoch is None
      else {name: fold(rng, epoch) for name, rng in group.items()}
      for group, epoch in zip(groups, epochs)
    )
    for groups in rng_groups
  )


def _fresh_counters(rng_groups, n: int) -> list:
  counters = [{} for _ in range(n)]
  for groups in rng_groups:
    for i, group in enumerate(groups):
      for name in group:
        counters[i][name] = 0
  return counters


def _fingerprint(scope_fn) -> tuple:
  roots = tuple(
    (
      s.path,
      _hashable(s.root.mutable),
      _hashable(s.flags),
    )
    for s in scope_fn.roots
  )
  return roots, tuple(s.path for s in scope_fn.leaves)


def jit(
  fn: Callable[..., Any],
  variables: CollectionFilter = True,
  rngs: PRNGSequenceFilter = True,
  static_argnums=(),
  static_argnames=(),
  donate_argnums=(),
  device=None,
  backend=None,
) -> Callable[..., Any]:
  """Lifted ``jax.jit``.

  ``static_argnums`` and ``donate_argnums`` count the scope as argument 0.
  ``fn`` is traced once per static configuration of the scopes (paths,
  mutable collections, flags) and per structure, shape and dtype of the
  variables, keys and arguments; PRNG keys and counters are traced data.

  >>> import jax, jax.numpy as jnp
  >>> from flax.core import init, lift
  >>> f = lambda scope, x: x * scope.param('s', jax.nn.initializers.ones, ())
  >>> y, _ = init(lift.jit(f))(jax.random.key(0), jnp.arange(3.0))
  >>> y.tolist()
  [0.0, 1.0, 2.0]
  """
  if not isinstance(static_argnums, Iterable):
    static_argnums = (static_argnums,)
  if not isinstance(donate_argnums, Iterable):
    donate_argnums = (donate_argnums,)
  jit_static = (0,) + tuple(i + 3 for i in static_argnums if i > 0)
  jit_donate = tuple(i + 3 for i in donate_argnums if i > 0)
  context = []  # stack of (scope_fn, repack_fn) while tracing
  counter_deltas = {}  # fingerprint -> keys drawn per scope, per trace

  @functools.partial(
    jax.jit,
    static_argnums=jit_static,
    static_argnames=static_argnames,
    donate_argnums=jit_donate,
    device=device,
    backend=backend,
  )
  def jitted(fingerprint, variable_groups, rng_groups, epochs, *args, **kw):
    scope_fn, repack_fn = context[-1]
    rng_groups = _fold_epochs(_materialize_rngs(rng_groups), epochs)
    counters = _fresh_counters(rng_groups, len(epochs))
    scope = scope_fn(variable_groups, rng_groups, rng_counters=counters)
    y = fn(scope, *args, **kw)
    out = repack_fn(scope)
    counter_deltas[fingerprint] = [_copy_counters(c) for c in counters]
    return y, out

  def inner(scope_fn, repack_fn, variable_groups, rng_groups, *args, **kwargs):
    fingerprint = _fingerprint(scope_fn)
    outer_counters = [s.rng_counters for s in scope_fn.roots]
    epochs = []
    for counters in outer_counters:
      total = _counter_total(counters)
      epochs.append(np.uint32(total) if total else None)
    context.append((scope_fn, repack_fn))
    try:
      result = jitted(
        fingerprint, variable_groups, rng_groups, tuple(epochs), *args, **kwargs
      )
    finally:
      context.pop()
    for counters, delta in zip(outer_counters, counter_deltas[fingerprint]):
      _add_counters(counters, delta)
    return result

  return pack(
    inner, (variables,), (variables,), (rngs,), name='jit', enable_kwargs=True
  )
