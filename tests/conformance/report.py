"""What a conformance scenario reports, in a form two runs can compare.

A scenario is a plain script that builds models with ``flax`` and reports
what a user would see through the functions below. The conformance runner
executes it under the reference implementation and under this project and
compares the records. This module imports only the standard library, numpy
and jax, never ``flax``.

Each record is one JSON line on stdout, prefixed with ``MARKER``; anything
else the script prints is ignored (report printed text with ``printed``).

Example scenario::

  import jax, jax.numpy as jnp
  from flax import linen as nn
  import report

  v = nn.Dense(3).init(jax.random.key(0), jnp.ones((1, 2)))
  report.tree('variables', v)
  with report.raises('wrong input size'):
    nn.Dense(3).apply(v, jnp.ones((1, 5)))
"""

import contextlib
import io
import json
import re
import sys
import warnings

import numpy as np

MARKER = '@@conformance@@ '
# Arrays with more elements than this are reported by summary statistics and
# a strided sample instead of every value.
MAX_FULL = 4096
_ADDRESS = re.compile(r'0x[0-9a-fA-F]{6,}')
_labels = set()


def phase():
  """``'write'`` or ``'read'`` in an exchange scenario, else ``None``.

  An exchange scenario (file name ending in ``_exchange.py``) runs twice in
  one folder: its ``write`` phase under one implementation, then its
  ``read`` phase under the other, in every combination.
  """
  return sys.argv[1] if len(sys.argv) > 1 else None


def _emit(kind, label, **payload):
  if label in _labels:
    raise ValueError(f'label {label!r} is reported twice in this scenario')
  _labels.add(label)
  record = {'kind': kind, 'label': label, **payload}
  sys.__stdout__.write(MARKER + json.dumps(record, sort_keys=True) + '\n')
  sys.__stdout__.flush()


def _is_prng_key(x):
  try:
    import jax

    return jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)
  except Exception:
    return False


def _encode_array(x):
  """shape, dtype and values (or a summary) of an array-like."""
  if _is_prng_key(x):
    import jax

    data = np.asarray(jax.random.key_data(x))
    enc = _encode_array(data)
    enc['dtype'] = 'key<' + str(x.dtype) + '>'
    return enc
  a = np.asarray(x)
  enc = {'shape': list(a.shape), 'dtype': str(a.dtype)}
  if (
    a.dtype.kind in 'V'
    or str(a.dtype) in ('bfloat16',)
    or 'float8' in str(a.dtype)
  ):
    a = a.astype(np.float32)
  if a.dtype.kind == 'c':
    parts = np.stack([a.real, a.imag], -1).astype(np.float64)
    a = parts
  if a.dtype.kind == 'b':
    a = a.astype(np.int64)
  if a.size <= MAX_FULL:
    enc['values'] = _finite(a.astype(np.float64).ravel().tolist())
  else:
    flat = a.astype(np.float64).ravel()
    step = max(1, flat.size // 512)
    enc['summary'] = _finite(
      [float(flat.sum()), float(np.abs(flat).sum()), float(flat.std())]
    )
    enc['sample'] = _finite(flat[::step].tolist())
  return enc


def _finite(values):
  """JSON has no inf/nan: spell them as strings."""
  out = []
  for v in values:
    if v != v:
      out.append('nan')
    elif v in (float('inf'), float('-inf')):
      out.append(str(v))
    else:
      out.append(v)
  return out


def _is_leaf_array(x):
  return hasattr(x, 'shape') and hasattr(x, 'dtype')


def _path_entry(k):
  for attr in ('key', 'name', 'idx'):
    if hasattr(k, attr):
      return str(getattr(k, attr))
  return str(k)


def array(label, x, *, exact=False, rtol=1e-5, atol=1e-6):
  """Reports an array: shape, dtype and values.

  Args:
    label: unique name of the record in this scenario.
    x: an array (jax, numpy or a PRNG key array).
    exact: compare values bit for bit (integers, keys and booleans always
      are).
    rtol: relative tolerance for floating values.
    atol: absolute tolerance for floating values.
  """
  _emit('array', label, exact=exact, rtol=rtol, atol=atol, **_encode_array(x))


def tree(label, t, *, values=True, exact=False, rtol=1e-5, atol=1e-6):
  """Reports a pytree: every leaf's path, shape, dtype and (optional) values.

  Paths are ``/``-joined dict keys, attribute names and indices, as a user
  reads them in a parameter tree.
  """
  import jax

  leaves = jax.tree_util.tree_flatten_with_path(t)[0]
  out = {}
  for path, leaf in leaves:
    key = '/'.join(_path_entry(k) for k in path)
    if _is_leaf_array(leaf) or isinstance(leaf, (int, float, bool, complex)):
      enc = _encode_array(leaf)
      if not values:
        enc.pop('values', None)
        enc.pop('summary', None)
        enc.pop('sample', None)
      out[key] = enc
    else:
      out[key] = {'repr': _mask(repr(leaf))}
  _emit('tree', label, leaves=out, exact=exact, rtol=rtol, atol=atol)


def value(label, v, *, rtol=1e-6, atol=1e-7):
  """Reports a JSON-able Python value (floats compared with tolerance)."""
  _emit('value', label, value=_jsonable(v), rtol=rtol, atol=atol)


def _jsonable(v):
  if isinstance(v, dict):
    return {str(k): _jsonable(x) for k, x in v.items()}
  if isinstance(v, (list, tuple)):
    return [_jsonable(x) for x in v]
  if isinstance(v, (np.generic,)):
    return v.item()
  if v is None or isinstance(v, (bool, int, float, str)):
    return v
  return repr(v)


def _mask(text):
  return _ADDRESS.sub('0x…', text)


def text(label, s):
  """Reports a string (a repr, a printed table); compared exactly.

  Memory addresses are masked and trailing spaces of lines ignored.
  """
  lines = [line.rstrip() for line in _mask(str(s)).splitlines()]
  _emit('text', label, text='\n'.join(lines).strip('\n'))


@contextlib.contextmanager
def printed(label):
  """Captures what the block prints to stdout and reports it as ``text``."""
  buf = io.StringIO()
  with contextlib.redirect_stdout(buf):
    yield
  text(label, buf.getvalue())


@contextlib.contextmanager
def raises(label):
  """The block must raise; reports the exception's class and its ancestors.

  The message is not compared (implementations word errors their own way).
  The project passes when its exception is an instance of the reference's
  exception class (same module path and name), so ``except`` clauses written
  for one catch the other.
  """
  try:
    yield
  except Exception as e:  # noqa: BLE001
    mro = [f'{c.__module__}.{c.__qualname__}' for c in type(e).__mro__]
    _emit('error', label, error=mro[0], mro=mro)
  else:
    _emit('error', label, error=None, mro=[])


@contextlib.contextmanager
def warns(label):
  """Reports the categories of the warnings the block emits (sorted, unique)."""
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    yield
  names = sorted({w.category.__name__ for w in caught})
  _emit('warnings', label, categories=names)
