"""``jax.Ref`` outputs of a graph-mode ``nnx.jit``.

A compiled function cannot return a mutable array reference. In graph mode
a Ref the function got as an argument and returns comes back as the very
object that was passed, and a Ref made inside the function comes back as a
new Ref holding its final value. While tracing, :func:`take` replaces each
such Ref among the outputs by a marker (an input's position, or the Ref's
value); after the call :func:`give` turns the markers back into Refs. A Ref
captured from outside (not an argument, not made inside) is left alone:
JAX refuses to return it.

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


def _is_marker(x) -> bool:
  return type(x) is InputRef or type(x) is NewRef or is_graph_node_leaf(x)


def _is_ref_or_node(x) -> bool:
  return isinstance(x, jax.Ref) or is_graph_node_leaf(x)


def take(out, inputs):
  """``(out, found)``: ``out`` with its traced Refs replaced by markers
  (``inputs``: the traced plain argument leaves); ``found`` tells whether
  there were any. Graph nodes are not entered (their Refs travel with
  them)."""
  leaves, treedef = jax.tree_util.tree_flatten(out, is_leaf=_is_ref_or_node)
  found = False
  positions = None
  for i, x in enumerate(leaves):
    if not isinstance(x, jax.Ref) or not isinstance(x, _Tracer):
      continue
    if positions is None:
      positions = {id(a): j for j, a in enumerate(inputs)}
    j = positions.get(id(x))
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
