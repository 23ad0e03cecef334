"""Name and layout mappings between Flax parameter paths and flat names.

A mapping turns the path of a leaf in a state dict (a tuple of string keys,
``('layers', '0', 'kernel')``) and the leaf's shape into the name the flat
view uses and, optionally, a permutation of axes: the flat array is
``leaf.transpose(perm)``. Loading applies the inverse permutation.

``mapping`` arguments accept:

* ``'torch'`` (``torch_name``): PyTorch's names and layouts;
* ``None`` (``identity_name``): dotted Flax paths, Flax layouts;
* a dict from dotted Flax path to a name, or to ``(name, perm)``; a path
  the dict lacks does not map;
* a function ``(path, shape) -> name | (name, perm) | None``; None means
  the path does not map. It may build on ``torch_name``.
"""

from collections.abc import Callable
from collections.abc import Mapping

_TORCH_NAMES = {
  'scale': 'weight',  # LayerNorm, BatchNorm, GroupNorm, RMSNorm
  'embedding': 'weight',  # Embed / nn.Embedding
  'mean': 'running_mean',  # BatchNorm statistics
  'var': 'running_var',
}
# Buffers PyTorch keeps that no Flax layer has; strict loads skip them
# (whatever the mapping) unless the target uses them.
TORCH_EXTRA_BUFFERS = ('num_batches_tracked',)


def dotted(path) -> str:
  return '.'.join(str(k) for k in path)


def identity_name(path, shape):
  """The dotted path, Flax layout: ``('Dense_0', 'kernel')`` ->
  ``'Dense_0.kernel'``."""
  del shape
  return dotted(path), None


def torch_name(path, shape):
  """PyTorch's name and layout for a Flax parameter.

  * ``kernel`` becomes ``weight``: a 2-D (Dense / Linear) kernel ``(in,
    out)`` is stored ``(out, in)``; a kernel of more axes is taken for a
    convolution's, ``(*spatial, in, out)`` stored ``(out, in, *spatial)``
    (HWIO -> OIHW). Other kernels of more than two axes (DenseGeneral,
    attention projections) need a mapping of their own.
  * ``scale`` (normalization) and ``embedding`` become ``weight``; BatchNorm
    statistics ``mean`` / ``var`` become ``running_mean`` / ``running_var``.
  * every other name (``bias``, ...) is kept, in Flax layout.

  >>> from flax_safetensors import torch_name
  >>> torch_name(('layers', '0', 'kernel'), (3, 4))
  ('layers.0.weight', (1, 0))
  >>> torch_name(('conv', 'kernel'), (3, 3, 2, 8))
  ('conv.weight', (3, 2, 0, 1))
  >>> torch_name(('norm', 'scale'), (4,))
  ('norm.weight', None)
  """
  *head, last = [str(k) for k in path]
  ndim = len(shape)
  if last == 'kernel':
    perm = None
    if ndim == 2:
      perm = (1, 0)
    elif ndim > 2:
      perm = (ndim - 1, ndim - 2, *range(ndim - 2))
    return dotted((*head, 'weight')), perm
  return dotted((*head, _TORCH_NAMES.get(last, last))), None


def _checked(result, path, ndim):
  if result is None:
    return None
  if isinstance(result, str):
    return result, None
  name, perm = result
  if perm is not None:
    perm = tuple(int(p) for p in perm)
    if sorted(perm) != list(range(ndim)):
      raise ValueError(
        f'The mapping gave {dotted(path)!r} the permutation {perm}, which '
        f'is not one of its {ndim} axes.'
      )
  return name, perm


def resolve(mapping) -> Callable:
  """A function ``(path, shape) -> (name, perm) | None`` for ``mapping``."""
  if mapping == 'torch':
    rule = torch_name
  elif mapping is None:
    rule = identity_name
  elif isinstance(mapping, Mapping):
    table = dict(mapping)

    def rule(path, shape):
      del shape
      return table.get(dotted(path))

  elif callable(mapping):
    rule = mapping
  else:
    raise TypeError(
      f"mapping must be 'torch', None, a dict or a function; got {mapping!r}."
    )

  def apply(path, shape):
    return _checked(rule(path, tuple(shape)), path, len(shape))

  return apply
