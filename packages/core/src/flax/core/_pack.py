"""``pack``: the one lifting primitive under every lifted transform.

``pack`` takes the variables and PRNG streams out of one or more scopes,
hands them to a transform as plain pytrees, rebuilds scopes from them inside
the transform, collects the updated variables, and writes them back into
the original scopes. See the design note "Lifted transformations".
"""

import functools
import itertools
import warnings
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Optional

import jax

from flax.core._filters import (
  CollectionFilter,
  PRNGSequenceFilter,
  group_collections,
  in_filter,
  intersect_filters,
  union_filters,
)
from flax.core.scope import Scope


def _transpose(xs):
  return tuple(zip(*xs))


def _unzip2(xs):
  xs = tuple(xs)
  return tuple(x for x, _ in xs), tuple(y for _, y in xs)


def split_in_out_axes(variable_axes):
  """Splits ``{filter: axis}`` into input filters, output filters and axes.

  An ``flax.typing.In(axis)`` entry only goes into a transform (its output
  filter is False), an ``Out(axis)`` entry only comes out; a plain axis
  does both.
  """
  from flax.typing import In, Out

  # (marker, goes in, comes out); a bare axis goes both ways.
  directions = ((In, True, False), (Out, False, True))
  rows = []
  for col, axis in variable_axes.items():
    goes_in = comes_out = True
    for marker, goes_in, comes_out in directions:
      if isinstance(axis, marker):
        axis = axis.axis
        break
    else:
      goes_in = comes_out = True
    rows.append((col if goes_in else False, col if comes_out else False, axis))
  if not rows:
    return (), (), ()
  return tuple(map(tuple, zip(*rows)))


def mapped_size(sizes, given, mismatch, missing):
  """The one size of a mapped axis.

  ``sizes`` are the sizes found on the mapped inputs; ``given`` is the size
  the user passed (``None`` if none). Different found sizes raise
  ``ValueError(mismatch.format(found))``; no size at all raises
  ``ValueError(missing)``.
  """
  found = set(sizes)
  if len(found) > 1:
    raise ValueError(mismatch.format(found))
  if given is not None:
    return given
  if not found:
    raise ValueError(missing)
  return found.pop()


def axis_subtrees(axes, values, is_unmapped):
  """Yields ``(axis, subtree)`` for each leaf of the prefix tree ``axes``
  over ``values``; ``is_unmapped(axis)`` marks axes kept as leaves."""
  treedef = jax.tree_util.tree_structure(axes, is_leaf=is_unmapped)
  leaves = jax.tree_util.tree_leaves(axes, is_leaf=is_unmapped)
  return zip(leaves, treedef.flatten_up_to(values))


def _dedup_scopes(scopes):
  """Keeps the scopes that have no ancestor among ``scopes``.

  Returns:
    ``(roots, paths)`` where ``paths[i] = (root, names)`` rebuilds
    ``scopes[i]`` by pushing ``names`` onto ``root``.
  """
  members = set(scopes)
  paths = []
  for scope in scopes:
    lineage = [scope]  # the scope, its parent, its grandparent, ...
    while lineage[-1].parent is not None:
      lineage.append(lineage[-1].parent)
    top = max(i for i, s in enumerate(lineage) if s in members)
    names = tuple(s.name for s in reversed(lineage[:top]))
    paths.append((lineage[top], names))
  roots = tuple(
    dict.fromkeys(s for s, (root, _) in zip(scopes, paths) if root is s)
  )
  return roots, tuple(paths)


def _dup_scopes(orig_roots, new_roots, paths):
  """The scopes at ``paths`` below the new roots standing for the old."""
  new_root_of = dict(zip(orig_roots, new_roots))

  def descend(root, names):
    scope = new_root_of[root]
    for name in names:
      scope = scope.push(name, reuse=True)
    return scope

  return [descend(root, names) for root, names in paths]


def _debug_path_in(debug_path, name):
  """``debug_path`` inside transform ``name``: ``(..., 'name(last)')``."""
  if not name:
    return debug_path
  *outer, last = debug_path or ('',)
  return (*outer, f'{name}({last})')


def _lifted_groups(scope, filters):
  """Checks ``scope`` can be lifted and groups its collections."""
  scope._check_valid()
  scope._validate_trace_level()
  scope._populate_collections()
  return group_collections(scope._variables, filters)


def _repacked_groups(inner_scope, filters):
  """The mutable collections of a rebuilt scope, grouped by ``filters``.

  The last filter is ``True``: whatever it collects had no output group.
  """
  inner_scope.invalidate()
  inner_scope._validate_trace_level()
  can_write = functools.partial(in_filter, inner_scope.mutable)
  variables = inner_scope._variables
  writable = {col: variables[col] for col in variables if can_write(col)}
  *groups, unmapped = group_collections(writable, filters)
  if unmapped:
    raise ValueError(f'unmapped output variables: {tuple(unmapped.keys())}')
  return tuple(groups)


def _freeze(x):
  from flax.core.frozen_dict import freeze

  return freeze(x)


def _copy_tree(x):
  # Fresh containers (so inner scopes cannot write into shared dicts);
  # frozen collections stay frozen.
  return jax.tree_util.tree_map(lambda v: v, x)


def pack(
  fn: Callable[..., Any],
  in_variable_filters: Sequence[CollectionFilter],
  out_variable_filters: Sequence[CollectionFilter],
  rng_filters: Sequence[PRNGSequenceFilter],
  name: Optional[str] = None,
  enable_kwargs: bool = False,
) -> Callable[..., Any]:
  """Lifts ``fn`` so that it works on (a pytree of) scopes.

  ``fn(scope_fn, repack_fn, variable_groups, rng_groups, *args)`` receives

  * ``variable_groups``: one tuple per ``in_variable_filters`` entry, each
    holding one dict of collections per (de-duplicated) scope; a collection
    goes to the FIRST filter that matches it;
  * ``rng_groups``: likewise for the PRNG streams and ``rng_filters``;
  * ``scope_fn(variable_groups, rng_groups, mutable_filter=True,
    rng_counters=None)``, which rebuilds the scope tree from (transformed)
    groups. The rebuilt scopes share the PRNG counters of the original
    ones unless ``rng_counters`` gives one counter dict per de-duplicated
    scope (used by transforms whose body runs out of line, like ``jit``).
    ``scope_fn.roots`` holds the original de-duplicated scopes and
    ``scope_fn.leaves`` the original scopes in tree order;
  * ``repack_fn(scopes)``, which returns the mutable variables of rebuilt
    scopes grouped by ``out_variable_filters``.

  ``fn`` must return ``(y, repacked_variables)``; the variables are written
  back into the original scopes and the lifted function returns ``y``.

  >>> import jax, jax.numpy as jnp
  >>> from flax.core import init, lift
  >>> def double_params(fn):
  ...   def wrapper(scope_fn, repack_fn, variable_groups, rng_groups, *args):
  ...     scope = scope_fn(variable_groups, rng_groups)
  ...     return fn(scope, *args), repack_fn(scope)
  ...   return lift.pack(wrapper, (True,), (True,), (True,))
  >>> f = lambda scope: scope.param('w', jax.nn.initializers.ones, (2,))
  >>> y, variables = init(double_params(f))(jax.random.key(0))
  >>> variables['params']['w'].tolist()
  [1.0, 1.0]

  Args:
    fn: the transform-specific function described above.
    in_variable_filters: filters of the variable groups given to ``fn``.
    out_variable_filters: filters of the groups ``repack_fn`` returns;
      collections outside all of them are immutable inside ``fn``.
    rng_filters: filters of the PRNG-stream groups given to ``fn``.
    name: the transform's name, shown in debug paths (``vmap(Dense_0)``).
    enable_kwargs: pass keyword arguments through to ``fn``; otherwise
      they are dropped with a ``RuntimeWarning``.

  Returns:
    A function ``(scope_tree, *args, **kwargs) -> y``.
  """

  @functools.wraps(fn)
  def wrapper(scope_tree, *args, **kwargs):
    if not enable_kwargs and kwargs:
      # As in Flax 0.12.8: keyword arguments do not go through this
      # transform; they are dropped with a warning.
      warnings.warn(
        f'kwargs are not supported in {name}, so '
        f'"{", ".join(kwargs)}" is(are) ignored',
        RuntimeWarning,
        stacklevel=2,
      )
      kwargs = {}

    def _comes_out(col):
      return any(in_filter(f, col) for f in out_variable_filters)

    flat_scopes, treedef = jax.tree_util.tree_flatten(
      scope_tree, is_leaf=lambda x: isinstance(x, Scope)
    )
    scopes, paths = _dedup_scopes(flat_scopes)

    variable_groups_xs_t = _transpose(
      [_lifted_groups(scope, in_variable_filters) for scope in scopes]
    )
    # Collections that cannot come out again are frozen on the way in.
    for group in itertools.chain.from_iterable(variable_groups_xs_t):
      for col in [c for c in group if not _comes_out(c)]:
        group[col] = _freeze(group[col])

    rng_groups_xs = []
    inner_rng_counters = []
    for scope in scopes:
      rng_groups_xs.append(group_collections(scope.rngs, rng_filters))
      inner_rng_counters.append(scope.rng_counters)
    rng_groups_xs_t = _transpose(rng_groups_xs)

    mutable = False
    for out_filter in out_variable_filters:
      mutable = union_filters(mutable, out_filter)

    # Weak references: a transform's trace may end while this wrapper still
    # runs, and the inner scopes hold its traced variables; they must not
    # keep them alive (jax.check_tracer_leaks).
    inner_scopes = []

    def invalidate_inner_scopes():
      for ref in inner_scopes:
        inner_scope = ref()
        if inner_scope is not None:
          inner_scope.invalidate()

    def scope_fn(
      variable_groups_xs_t,
      rng_groups_xs_t,
      mutable_filter=True,
      rng_counters=None,
    ):
      nonlocal inner_scopes
      invalidate_inner_scopes()
      inner_scopes = []
      n = len(scopes)
      variable_groups_xs = _transpose(variable_groups_xs_t) or ((),) * n
      rng_groups_xs = _transpose(rng_groups_xs_t) or ((),) * n
      roots = []
      for variable_groups, rng_groups, scope, counters in zip(
        variable_groups_xs,
        rng_groups_xs,
        scopes,
        inner_rng_counters if rng_counters is None else rng_counters,
      ):
        variables = {}
        for group in variable_groups:
          variables.update(group)
        rngs = {}
        for group in rng_groups:
          rngs.update(group)
        variables = {k: _copy_tree(v) for k, v in variables.items()}
        scope_mutable = intersect_filters(
          intersect_filters(scope.root.mutable, mutable), mutable_filter
        )
        inner_scope = Scope(
          variables,
          rngs=rngs,
          parent=None,
          mutable=scope_mutable,
          debug_path=_debug_path_in(scope.debug_path, name),
          name=scope.name,
          path=scope.path,
          flags=scope.flags,
        )
        inner_scope.rng_counters = counters
        roots.append(inner_scope)
      inner_scopes = [weakref.ref(root) for root in roots]
      return jax.tree_util.tree_unflatten(
        treedef, _dup_scopes(scopes, roots, paths)
      )

    scope_fn.roots = scopes
    scope_fn.leaves = flat_scopes

    def repack_fn(inner_scope_tree):
      leaves = jax.tree_util.tree_leaves(
        inner_scope_tree, is_leaf=lambda x: isinstance(x, Scope)
      )
      filters = (*out_variable_filters, True)
      return _transpose(
        [_repacked_groups(s, filters) for s in _dedup_scopes(leaves)[0]]
      )

    lifted = (variable_groups_xs_t, rng_groups_xs_t)
    try:
      y, out_groups_xs_t = fn(scope_fn, repack_fn, *lifted, *args, **kwargs)
    finally:
      invalidate_inner_scopes()
    for scope, groups in zip(scopes, _transpose(out_groups_xs_t)):
      # Transforms like scan also hand back collections they only read.
      for col, collection in itertools.chain.from_iterable(
        g.items() for g in groups
      ):
        if scope.is_mutable_collection(col):
          for var_name, value in collection.items():
            scope.put_variable(col, var_name, value)
    return y

  return wrapper
