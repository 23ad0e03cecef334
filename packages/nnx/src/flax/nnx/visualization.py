"""Display of NNX objects: interactive treescope views in notebooks when
the optional ``treescope`` package is installed, text reprs otherwise.

>>> from flax import nnx
>>> from flax.nnx import visualization
>>> visualization.display(nnx.Dict(a=1))
Dict({
  'a': 1
})
"""

import sys
import typing as tp


def _treescope():
  try:
    import treescope
  except ImportError:
    return None
  return treescope


def _in_notebook() -> bool:

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
  (for ``__treescope_repr__`` methods), with an optional annotation (a
  treescope rendering part, e.g. a comment) after the opening line.
  Requires ``treescope``."""
  if _treescope() is None:
    raise ImportError(
      'render_object_constructor needs the optional treescope package: '
      'pip install treescope'
    )
  from treescope import rendering_parts as parts

  name = parts.maybe_qualified_type_name(object_type)
  if roundtrippable:
    prefix = parts.siblings(name, '(')
    suffix = parts.text(')')
  else:
    # shown as ``<Type(...)>`` when treescope renders for round trips
    prefix = parts.siblings(
      parts.roundtrip_condition(roundtrip=parts.text('<')), name, '('
    )
    suffix = parts.siblings(
      ')', parts.roundtrip_condition(roundtrip=parts.text('>'))
    )
  items = list(attributes.items())
  children = []
  for i, (key, value) in enumerate(items):
    if i + 1 < len(items):
      sep = parts.siblings(',', parts.fold_condition(collapsed=parts.text(' ')))
    else:  # the last one has its comma only when expanded
      sep = parts.fold_condition(expanded=parts.text(','))
    child_path = None if path is None else f'{path}.{key}'
    children.append(
      parts.build_full_line_with_annotations(
        parts.siblings_with_annotations(
          f'{key}=', subtree_renderer(value, path=child_path)
        ),
        sep,
      )
    )
  return parts.build_foldable_tree_node_from_children(
    prefix=prefix,
    children=children,
    suffix=suffix,
    path=path,
    background_color=color,
    first_line_annotation=first_line_annotation,
  )


# -- treescope renderings of NNX objects ----------------------------------------
# The ``__treescope_repr__`` methods of Pytree, Variable and State call these
# (treescope calls those methods only when it is installed).


def _annotation(text: str):
  from treescope import rendering_parts

  if not text:
    return None
  return rendering_parts.comment_color(rendering_parts.text(text))


def _color(obj) -> str:
  from treescope import formatting_util

  return formatting_util.color_from_string(type(obj).__qualname__)


def render_object(obj, attributes, comment: str, path, subtree_renderer):
  """A Pytree (Module, List, Rngs, ...) or a Variable as
  ``Type(attr=value, ...)``, with ``comment`` (its Variable totals, or its
  size) after the opening line."""
  return render_object_constructor(
    object_type=type(obj),
    attributes=attributes,
    path=path,
    subtree_renderer=subtree_renderer,
    first_line_annotation=_annotation(comment),
    color=_color(obj),
  )


def render_state(state, path, subtree_renderer):
  """A State as ``State({...})``."""
  from treescope import repr_lib

  return repr_lib.render_dictionary_wrapper(
    object_type=type(state),
    wrapped_dict=dict(state._mapping),
    path=path,
    subtree_renderer=subtree_renderer,
    color=_color(state),
  )
