"""A state dict as safetensors tensors plus a JSON description of its tree.

Arrays become tensors named by their dotted path (``params.Dense_0.kernel``),
so the file reads naturally with any safetensors tool. The header's
``__metadata__`` entry ``TREE_KEY`` holds the tree: dict keys in order,
Python scalars and strings by value, and for every array the tensor that
holds it. dtypes the format lacks (float8, int4, complex128, ...) are
stored as their bytes, ``uint8`` of shape ``shape + (itemsize,)``, with
the dtype in the tree.
"""

import base64
import json

import numpy as np

from flax_safetensors._files import NATIVE_DTYPES

TREE_KEY = 'flax.tree'
FORMAT_KEY = 'format'
FORMAT = 'flax-safetensors/1'


def _scalar(value):
  """JSON for a Python scalar leaf or dict key; None if it is not one."""
  if value is None:
    return {'none': None}
  if isinstance(value, bool):
    return {'bool': value}
  if isinstance(value, int):
    return {'int': str(value)}
  if isinstance(value, float):
    return {'float': repr(value)}
  if isinstance(value, complex):
    return {'complex': [repr(value.real), repr(value.imag)]}
  if isinstance(value, str):
    return {'str': value}
  if isinstance(value, bytes):
    return {'bytes': base64.b64encode(value).decode('ascii')}
  return None


def _from_scalar(node):
  (kind, value), *_ = node.items()
  if kind == 'none':
    return None
  if kind == 'bool':
    return bool(value)
  if kind == 'int':
    return int(value)
  if kind == 'float':
    return float(value)
  if kind == 'complex':
    return complex(float(value[0]), float(value[1]))
  if kind == 'str':
    return value
  if kind == 'bytes':
    return base64.b64decode(value)
  raise ValueError(f'unknown leaf kind {kind!r}')


def _is_array(x) -> bool:
  return isinstance(x, np.ndarray | np.generic) or (
    hasattr(x, 'shape') and hasattr(x, 'dtype') and hasattr(x, '__array__')
  )


def _prng_impl(x):
  """The PRNG implementation name of a typed key array, else None."""
  dtype = getattr(x, 'dtype', None)
  if dtype is None or isinstance(dtype, np.dtype):
    return None
  import jax

  if not jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
    return None
  return str(jax.random.key_impl(x))


def _dotted(path) -> str:
  return '.'.join(str(k) for k in path) or 'value'


def encode(state) -> tuple[dict, dict]:
  """``(tensors, metadata)`` for a state dict; the arrays are copies.

  Raises:
    TypeError: for a leaf that is neither an array nor a Python scalar,
      naming its path.
  """
  tensors = {}

  def unique(name):
    found, n = name, 1
    while found in tensors:
      found, n = f'{name}~{n}', n + 1
    return found

  def visit(path, x):
    if isinstance(x, dict):
      return {
        'dict': [
          [k if isinstance(k, str) else _scalar(k), visit((*path, k), v)]
          for k, v in x.items()
        ]
      }
    node = _scalar(x)
    if node is not None:
      return node
    if not _is_array(x):
      raise TypeError(
        f'Cannot store {_dotted(path)!r} of type {type(x).__name__} in a '
        f'safetensors checkpoint (arrays, Python numbers and strings only).'
      )
    impl = _prng_impl(x)
    if impl is not None:  # a typed PRNG key: its key data, and the impl
      import jax

      x = jax.random.key_data(x)
    array = np.array(x, order='C')  # a copy: later changes do not leak in
    if array.dtype.kind in 'OUSMm' or array.dtype.type is np.void:
      raise TypeError(
        f'Cannot store {_dotted(path)!r}: arrays of dtype {array.dtype} '
        f'have no safetensors form.'
      )
    name = unique(_dotted(path))
    node = {'tensor': name}
    if isinstance(x, np.generic):
      node['scalar'] = True
    if impl is not None:
      node['prng_impl'] = impl
    if array.dtype.name not in NATIVE_DTYPES:
      node['dtype'] = array.dtype.name
      node['shape'] = list(array.shape)
      array = (
        array.reshape(-1)
        .view(np.uint8)
        .reshape((*array.shape, array.dtype.itemsize))
      )
    tensors[name] = array
    return node

  tree = visit((), state)
  metadata = {FORMAT_KEY: FORMAT, TREE_KEY: json.dumps(tree)}
  return tensors, metadata


def parse(metadata):
  """The tree in a file's metadata, or None if the file has none."""
  text = metadata.get(TREE_KEY)
  if text is None:
    return None
  return json.loads(text)


def tree_of_names(names):
  """The tree of a file written elsewhere: dotted names nest
  (``fc1.weight`` -> ``{'fc1': {'weight': ...}}``), or, if a name is both a
  tensor and a prefix of another, every name is one flat key."""
  root = {}
  for name in names:
    *parents, last = name.split('.')
    node = root
    for part in parents:
      node = node.setdefault(part, {})
      if not isinstance(node, dict):
        return _as_tree({n: n for n in names})
    if last in node:
      return _as_tree({n: n for n in names})
    node[last] = name
  return _as_tree(root)


def _as_tree(nested):
  if isinstance(nested, dict):
    return {'dict': [[k, _as_tree(v)] for k, v in nested.items()]}
  return {'tensor': nested}


def decode(tree, load):
  """Rebuilds the state dict described by ``tree``.

  Args:
    tree: what ``parse`` returned.
    load: ``load(path, node)`` returning the array of a tensor node.
  """

  def visit(path, node):
    if 'dict' in node:
      out = {}
      for key, child in node['dict']:
        key = key if isinstance(key, str) else _from_scalar(key)
        out[key] = visit((*path, key), child)
      return out
    if 'tensor' in node:
      value = load(path, node)
      if 'prng_impl' in node and _prng_impl(value) is None:
        import jax

        return jax.random.wrap_key_data(value, impl=node['prng_impl'])
      return value[()] if node.get('scalar') else value
    return _from_scalar(node)

  return visit((), tree)


def stored_dtype(node):
  """The dtype a tensor node was stored as bytes of, or None."""
  name = node.get('dtype')
  if name is None:
    return None
  try:
    return np.dtype(name)
  except TypeError:  # float8, int4, ...: NumPy knows them by type only
    import ml_dtypes

    return np.dtype(getattr(ml_dtypes, name))
