"""Lifted ``jax.jit``: one compiled function per static configuration.

The body of a jitted function is traced once per *static* configuration of
its scopes (their paths, mutable collections, flags and PRNG counters) and
per structure, shapes and dtypes of the variables, PRNG keys and arguments.

Keys follow Flax 0.12.8: on entry, every PRNG stream of a jitted scope
draws one key as ``make_rng`` would (advancing the outer counter); the body
derives its keys from that key, counting on from the outer counter, and the
counters it ends with (recorded at trace time) are written back to the
outer scope after every call. Two calls inside one ``apply`` therefore get
different keys.
"""

from collections.abc import Iterable, Mapping
from typing import Any, Callable

import jax

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


def _counters_key(counters: dict) -> tuple:
  """A hashable form of PRNG counters; unused streams and children drop out.

  A child scope that drew no key leaves an empty entry behind, and a
  stream's count of 0 is the same as no count: neither changes the keys.
  """
  items = []
  for key, value in counters.items():
    if isinstance(value, dict):
      value = _counters_key(value)
      if value:
        items.append((str(key), value))
    elif value:
      items.append((str(key), value))
  return tuple(sorted(items))


def _copy_counters(counters: dict) -> dict:
  return {
    k: _copy_counters(v) if isinstance(v, dict) else v
    for k, v in counters.items()
  }


def _set_counters(target: dict, source: dict) -> None:
  # In place: child scopes hold references to the nested dicts.
  for key, value in source.items():
    if isinstance(value, dict):
      _set_counters(target.setdefault(key, {}), value)
    else:
      target[key] = value


def _fork_rngs(rng_groups, outer_counters):
  """Draws one key per stream and scope, as ``make_rng`` would.

  Each stream's counter in the outer scope is incremented and the key of
  that count is handed to the jitted body, whose scope then counts on from
  there (Flax 0.12.8's key derivation for jitted scopes).
  """
  forked = []
  for groups in rng_groups:
    new_groups = []
    for rngs, counters in zip(groups, outer_counters):
      keys = {}
      for name, rng in rngs.items():
        counters[name] = counters.get(name, 0) + 1
        keys[name] = LazyRng.create(rng, counters[name]).as_jax_rng()
      new_groups.append(keys)
    forked.append(tuple(new_groups))
  return tuple(forked)


def _wrap_keys(key_groups):
  return tuple(
    tuple({name: LazyRng(key, ()) for name, key in keys.items()} for keys in g)
    for g in key_groups
  )


def forked_rng_groups(scope_fn, rng_groups):
  """The keys and counters of a scope that forks its PRNG streams.

  Returns ``(keys, outer_counters, inner_counters)``: the keys to build the
  inner scopes with (one drawn per stream, see :func:`_fork_rngs`), the
  outer scopes' counters (already advanced) and copies of them for the
  inner scopes to count on from. Write the inner counters back with
  :func:`write_back_counters` once the inner scopes are done.
  """
  outer_counters = [s.rng_counters for s in scope_fn.roots]
  keys = _wrap_keys(_fork_rngs(rng_groups, outer_counters))
  return keys, outer_counters, [_copy_counters(c) for c in outer_counters]


def write_back_counters(outer_counters, inner_counters) -> None:
  """Sets the outer scopes' counters to the inner scopes' ones."""
  for counters, after in zip(outer_counters, inner_counters):
    _set_counters(counters, after)


def _fingerprint(scope_fn) -> tuple:
  # Where the scopes sit does not change the traced computation (keys are
  # derived outside from the full path), so equally configured scopes at
  # different paths share a trace; only the leaves' places relative to
  # their roots count.
  roots = scope_fn.roots
  root_keys = tuple(
    (_hashable(s.root.mutable), _hashable(s.flags)) for s in roots
  )
  leaves = []
  for leaf in scope_fn.leaves:
    for i, root in enumerate(roots):
      n = len(root.path)
      if leaf.path[:n] == root.path:
        leaves.append((i, leaf.path[n:]))
        break
  return root_keys, tuple(leaves)


def _shifted(argnums) -> tuple:
  """``argnums`` of ``fn`` (an int or several; the scope is 0) as positions
  of the jitted function."""
  if not isinstance(argnums, Iterable):
    argnums = (argnums,)
  return tuple(i + 2 for i in argnums if i > 0)


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
  # jitted(fingerprint, variables, keys, *args): argument i >= 1 of ``fn``
  # (after the scope) sits at position i + 2
  jit_static = (0, *_shifted(static_argnums))
  jit_donate = _shifted(donate_argnums)
  context = []  # stack of (scope_fn, repack_fn, counters) while tracing
  counters_after = {}  # fingerprint -> the counters at the end of a trace

  placement = dict(device=device, backend=backend)

  def traced(fingerprint, variable_groups, key_groups, *args, **kw):
    scope_fn, repack_fn, counters = context[-1]
    counters = [_copy_counters(c) for c in counters]
    scope = scope_fn(
      variable_groups, _wrap_keys(key_groups), rng_counters=counters
    )
    y = fn(scope, *args, **kw)
    out = repack_fn(scope)
    counters_after[fingerprint] = [_copy_counters(c) for c in counters]
    return y, out

  jitted = jax.jit(
    traced,
    static_argnums=jit_static,
    donate_argnums=jit_donate,
    static_argnames=static_argnames,
    **placement,
  )

  def inner(scope_fn, repack_fn, variable_groups, rng_groups, *args, **kwargs):
    outer_counters = [s.rng_counters for s in scope_fn.roots]
    key_groups = _fork_rngs(rng_groups, outer_counters)
    # The counters are static: they fix the keys drawn inside.
    fingerprint = (
      _fingerprint(scope_fn),
      tuple(_counters_key(c) for c in outer_counters),
    )
    context.append((scope_fn, repack_fn, outer_counters))
    try:
      result = jitted(fingerprint, variable_groups, key_groups, *args, **kwargs)
    finally:
      context.pop()
    for counters, after in zip(outer_counters, counters_after[fingerprint]):
      _set_counters(counters, after)
    return result

  return pack(
    inner, (variables,), (variables,), (rngs,), name='jit', enable_kwargs=True
  )
