"""Display of NNX objects: interactive treescope views in notebooks when
the optional ``treescope`` package is installed, text reprs otherwise.

>>> from flax import nnx
>>> from flax.nnx import visualization
>>> visualization.display(nnx.Dict(a=1))
Dict({
  'a': 1
})
"""

import typing as tp


def _treescope():
  try:
    import treescope
  except ImportError:
    return None
  return treescope


def _in_notebook() -> bool:
  import sys

  ipython = sys.modules.get('IPython')
  if ipython is None:
    return False
  try:
    shell = ipython.get_ipython()
  except Exception:
    return False
  return shell is not None and hasattr(shell, 'kernel')


def display(*args):
  """Shows each argument: with treescope inside a notebook (if installed),
  else printed with its repr."""
  treescope = _treescope()
  if treescope is not None and _in_notebook():
    for x in args:
      treescope.display(x, ignore_exceptions=True)
    return
  for x in args:
    print(repr(x))


def render_object_constructor(
  object_type: type[tp.Any],
  attributes: tp.Mapping[str, tp.Any],
  path: str | None,
  subtree_renderer,
  roundtrippable: bool = False,
  color: str | None = None,
  first_line_annotation=None,
):
  """Renders an object as ``Type(attr=value, ...)`` in a treescope tree
  (for ``__treescope_repr__`` methods). Requires ``treescope``."""
  treescope = _treescope()
  if treescope is None:
    raise ImportError(
      'render_object_constructor needs the optional treescope package: '
      'pip install treescope'
    )
  return treescope.repr_lib.render_object_constructor(
    object_type=object_type,
    attributes=attributes,
    path=path,
    subtree_renderer=subtree_renderer,
    roundtrippable=roundtrippable,
    color=color,
    first_line_annotation=first_line_annotation,
  )
