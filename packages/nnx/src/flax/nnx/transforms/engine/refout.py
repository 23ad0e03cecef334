"""``jax.Ref`` outputs of a graph-mode ``nnx.jit``.

A compiled function cannot return a mutable array reference. In graph mode
a Ref the function got as an argument and returns comes back as the very
object that was passed, and a Ref made inside the function comes back as a
new Ref holding its final value. While tracing, :func:`take` replaces each
such Ref among the outputs by a marker (an input's position, or the Ref's
value); after the call :func:`give` turns the markers back into Refs. A Ref
captured from outside (not an argument, not made inside) is left alone:
JAX refuses to return it.

A Ref may also reach a graph-mode transform more than once (the same Ref
passed as two arguments, or as an argument and as an attribute of a
Module argument). JAX takes each Ref once: :func:`find_aliases` finds the
repeated ones (only for calls whose argument types include a Ref), the
transform passes an :class:`Alias` marker in their place and
:func:`resolve` puts the Ref it stands for back inside.

Example:
  >>> import jax, jax.numpy as jnp
  >>> from flax import nnx
  >>> r = jax.new_ref(jnp.array(1.0))
  >>> @nnx.jit
  ... def bump(r):
  ...   r[...] += 1.0
  ...   return r, jax.new_ref(jnp.array(10.0))
  >>> same, new = bump(r)
  >>> same is r, float(r[...]), float(new[...])
  (True, 2.0, 10.0)
"""

import jax

from flax.nnx import graphlib
from flax.nnx._common import is_graph_node_leaf

_Tracer = jax.core.Tracer


class InputRef:
  """Marks the output Ref that was argument leaf ``pos``."""

  __slots__ = ('pos',)

  def __init__(self, pos):
    self.pos = pos


class NewRef:
  """Marks an output Ref made inside the function; ``value`` its value."""

  __slots__ = ('value',)

  def __init__(self, value):
    self.value = value


jax.tree_util.register_pytree_node(
  InputRef, lambda m: ((), m.pos), lambda pos, _: InputRef(pos)
)
jax.tree_util.register_pytree_node(
  NewRef, lambda m: ((m.value,), None), lambda _, c: NewRef(c[0])
)


class Alias:
  """Stands in the arguments of a transform for a Ref reached before:
  ``src`` is ``('l', position)`` (an earlier plain argument leaf) or
  ``('s', root, slot)`` (a leaf of a graph root)."""

  __slots__ = ('src',)

  def __init__(self, src):
    self.src = src


jax.tree_util.register_pytree_node(
  Alias, lambda a: ((), a.src), lambda src, _: Alias(src)
)


def find_aliases(leaves, positions, roots) -> dict | None:
  """``{position: source}`` of the plain Ref leaves (at ``positions`` of
  ``leaves``) reached before, as an earlier plain leaf or as a leaf of one
  of ``roots`` (objects with ``slots``); None if there are none."""
  seen: dict = {}
  in_roots = None
  out = {}
  for p in positions:
    x = leaves[p]
    src = seen.get(id(x))
    if src is None and roots:
      if in_roots is None:
        in_roots = {}
        for k, r in enumerate(roots):
          for i, s in enumerate(r.slots):
            in_roots.setdefault(id(s._raw_value), ('s', k, i))
      src = in_roots.get(id(x))
    if src is None:
      seen[id(x)] = ('l', p)
    else:
      out[p] = src
  return out or None


def aliased(leaves, positions, variables, views) -> bool:
  """Whether a plain Ref leaf (at ``positions``) is reached twice among
  the arguments: as another plain leaf, as the value of one of the
  standalone ``variables`` or as an object of one of the flat ``views``."""
  ids = set()
  for p in positions:
    ids.add(id(leaves[p]))
  if len(ids) != len(positions):
    return True
  for v in variables:
    if id(v._raw_value) in ids:
      return True
  for view in views:
    if not ids.isdisjoint(graphlib.view_ids(view)):
      return True
  return False


def resolve(leaves, in_values) -> None:
  """Replaces the :class:`Alias` markers among ``leaves`` (in place) by
  the Refs they stand for (``in_values``: per root, its leaf values)."""
  for p, x in enumerate(leaves):
    if type(x) is Alias:
      src = x.src
      if src[0] == 'l':
        leaves[p] = leaves[src[1]]
      else:
        leaves[p] = in_values[src[1]][src[2]]


def _is_marker(x) -> bool:
  return type(x) is InputRef or type(x) is NewRef or is_graph_node_leaf(x)


def _is_ref_or_node(x) -> bool:
  return isinstance(x, jax.Ref) or is_graph_node_leaf(x)


def take(out, inputs, new_ok=True):
  """``(out, found)``: ``out`` with its traced Refs replaced by markers
  (``inputs``: the traced argument leaves); ``found`` tells whether
  there were any. Graph nodes are not entered (their Refs travel with
  them). Without ``new_ok`` (no argument is a graph node or a Ref) a Ref
  made inside is left as it is: JAX refuses to return it."""
  leaves, treedef = jax.tree_util.tree_flatten(out, is_leaf=_is_ref_or_node)
  found = False
  positions = None
  for i, x in enumerate(leaves):
    if not isinstance(x, jax.Ref) or not isinstance(x, _Tracer):
      continue
    if positions is None:
      positions = {id(a): j for j, a in enumerate(inputs)}
    j = positions.get(id(x))
    if j is None and not new_ok:
      continue
    leaves[i] = NewRef(x[...]) if j is None else InputRef(j)
    found = True
  if not found:
    return out, False
  return treedef.unflatten(leaves), True


def _give_one(x, inputs, new):
  if type(x) is InputRef:
    return inputs[x.pos]
  if type(x) is NewRef:
    return new(x.value)
  return x


def give(out, inputs, new=jax.new_ref):
  """``out`` with the markers of :func:`take` turned back into Refs
  (``inputs``: the plain argument leaves of the call; ``new`` makes the
  Ref of a value made inside, identity for abstract values)."""
  return jax.tree_util.tree_map(
    lambda x: _give_one(x, inputs, new), out, is_leaf=_is_marker
  )
