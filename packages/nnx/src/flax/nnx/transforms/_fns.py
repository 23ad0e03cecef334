"""The functions NNX transforms hand to JAX transforms.

Each lifted transform wraps the user's function in one of two callables:

* :class:`InnerFn` (graph mode with graph updates): receives the arguments
  with graph nodes replaced by ``NodeStates`` (see :mod:`.common`),
  rebuilds fresh objects, calls the function, and returns the output
  leaves together with the new values of the inputs; the output structure
  and the structure changes of the inputs stay on the instance
  (``out_static``) for the caller to apply outside.
* :class:`SimpleFn` (``graph=False`` or ``graph_updates=False``): graph
  nodes travel as pytrees; it calls the function and returns its output
  with the values of the argument Variables, which the caller writes back.

The public classes (``CheckifyFn``, ``SimpleCondFn``, ``VmapFn``, ...)
are these, with the fields of their transform.
"""

import dataclasses
import typing as tp

import jax

from flax.nnx.transforms import common


@dataclasses.dataclass(eq=False)
class InnerFn:
  """Graph-mode callable run inside a JAX transform (see module doc)."""

  f: tp.Callable[..., tp.Any]
  graph_args: tp.Any = dataclasses.field(default=None, kw_only=True, repr=False)
  out_static: tp.Any = dataclasses.field(default=None, init=False, repr=False)

  def rebuild(self, pure_args, pure_kwargs=None):
    """Fresh graph nodes from the pure arguments: an ``InnerGraph``."""
    ga = self.graph_args
    if ga is None:
      raise ValueError(
        f'{type(self).__name__} was called without the graph structure of '
        'its arguments (graph_args=); it is built by the NNX transform.'
      )
    return common.InnerGraph(
      ga.static, ga.masks(), (pure_args, pure_kwargs or {})
    )

  def __call__(self, *pure_args, **pure_kwargs):
    ig = self.rebuild(pure_args, pure_kwargs)
    args, kwargs = ig.args
    out = self.f(*args, **kwargs)
    changed, values = ig.updates()
    out_static, out_leaves = ig.flatten_out(out)
    self.out_static = (out_static, changed)
    return out_leaves, values


def mode_text(graph: bool) -> str:
  return 'graph_updates=False' if graph else 'tree mode (graph=False)'


@dataclasses.dataclass(eq=False)
class SimpleFn:
  """Pytree-mode callable run inside a JAX transform (see module doc).

  ``graph`` tells which setting of the transform chose pytree mode
  (``graph=True`` with ``graph_updates=False``, or ``graph=False``); errors
  about shared Variables name it.
  """

  f: tp.Callable[..., tp.Any]
  graph: bool

  def variables(self, tree, where='arguments'):
    """The Variables of ``tree`` (each once; sharing raises)."""
    return common.tree_variables(tree, where, mode_text(self.graph))

  def values(self, tree):
    return [v._raw_value for v in self.variables(tree)]

  @staticmethod
  def fresh(tree):
    """``tree`` with its graph nodes and Variables rebuilt (inside the
    trace of the transform, whatever the transform passed in)."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return treedef.unflatten(leaves)

  def __call__(self, *args, **kwargs):
    args, kwargs = self.fresh((args, kwargs))
    out = self.f(*args, **kwargs)
    return out, self.values((args, kwargs))
