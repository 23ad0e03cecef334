"""Utilities for data-parallel training with ``jax.pmap``.

>>> import jax, jax.numpy as jnp
>>> from flax import jax_utils
>>> tree = jax_utils.replicate({'w': jnp.arange(3.0)})
>>> tree['w'].shape == (jax.local_device_count(), 3)
True
>>> jax_utils.unreplicate(tree)['w']
Array([0., 1., 2.], dtype=float32)
"""

import collections
import itertools
from collections.abc import Iterable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

__all__ = [
  'pad_shard_unpad',
  'partial_eval_by_shape',
  'pmean',
  'prefetch_to_device',
  'replicate',
  'scan_in_dim',
  'unreplicate',
]

# The mesh axis name of the arrays that ``replicate`` and
# ``prefetch_to_device`` build, unless the caller names another one.
_DEFAULT_AXIS = '_device_put_sharded'


def _pmap_device_order():
  return jax.local_devices()


def _stacked_sharding(devices, axis_name):
  mesh = jax.sharding.Mesh(np.array(devices), (axis_name,))
  return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(axis_name))


def _put_stacked(slices, devices, axis_name):
  """One array of shape ``(len(devices), ...)`` whose row ``i`` lives on
  ``devices[i]``, sharded over a one-axis mesh named ``axis_name``."""
  shards = [jax.device_put(s[None], d) for s, d in zip(slices, devices)]
  shape = (len(devices), *np.shape(slices[0]))
  return jax.make_array_from_single_device_arrays(
    shape, _stacked_sharding(devices, axis_name), shards
  )


def _as_array(x):
  return x if isinstance(x, (jax.Array, np.ndarray)) else np.asarray(x)


def replicate(tree, devices=None, axis_name=_DEFAULT_AXIS):
  """Copies every leaf of ``tree`` to each device, on a new leading axis.

  >>> import jax, jax.numpy as jnp
  >>> from flax import jax_utils
  >>> r = jax_utils.replicate(jnp.ones(3), axis_name='batch')
  >>> r.shape == (jax.local_device_count(), 3), r.sharding.spec
  (True, P('batch',))

  Args:
    tree: a pytree of arrays.
    devices: the devices; by default ``jax.local_devices()`` (the order
      ``jax.pmap`` uses).
    axis_name: the name of the one-axis device mesh the leaves are sharded
      over (their sharding is ``NamedSharding(mesh, P(axis_name))``).

  Returns:
    The tree, each leaf of shape ``(len(devices), *leaf.shape)``.
  """
  devices = list(devices or _pmap_device_order())

  def put(x):
    x = _as_array(x)
    return _put_stacked([x] * len(devices), devices, axis_name)

  return jax.tree.map(put, tree)


def unreplicate(tree):
  """Returns the first replica of every leaf (``x[0]``)."""
  return jax.tree.map(lambda x: x[0], tree)


def pmean(xs, axis_name):
  """``jax.lax.pmean`` of a pytree over the pmapped axis ``axis_name``."""
  return jax.tree.map(lambda x: lax.pmean(x, axis_name), xs)


def _parse_spec(spec):
  if isinstance(spec, jax.ShapeDtypeStruct):
    return spec
  if len(spec) == 2 and isinstance(spec[0], Iterable):
    return jax.ShapeDtypeStruct(tuple(spec[0]), spec[1])
  return jax.ShapeDtypeStruct(tuple(spec), np.float32)


def _input_dependent_outputs(closed_jaxpr):
  """For each output of a jaxpr, whether it depends on the inputs."""
  dependent = set(closed_jaxpr.jaxpr.invars)

  def depends(v):
    return not hasattr(v, 'val') and v in dependent

  for eqn in closed_jaxpr.jaxpr.eqns:
    if any(depends(v) for v in eqn.invars):
      dependent.update(eqn.outvars)
  return [depends(v) for v in closed_jaxpr.jaxpr.outvars]


def partial_eval_by_shape(fn, input_spec, *args, **kwargs):
  """Evaluates ``fn`` with inputs given only by shape.

  Outputs that do not depend on the inputs (e.g. parameters initialized
  from a PRNG key) are computed; the others are returned as
  ``jax.ShapeDtypeStruct``.

  >>> import jax, jax.numpy as jnp
  >>> from flax import jax_utils
  >>> out = jax_utils.partial_eval_by_shape(
  ...     lambda x, n: (x * 2, jnp.ones(n)), [(3,)], 2)
  >>> out[0], out[1]
  (ShapeDtypeStruct(shape=(3,), dtype=float32), Array([1., 1.], dtype=float32))

  Args:
    fn: called as ``fn(*inputs, *args, **kwargs)``.
    input_spec: for each input, a shape (float32), a ``(shape, dtype)`` pair
      or a ``jax.ShapeDtypeStruct``.
    *args: further (concrete) positional arguments.
    **kwargs: keyword arguments.

  Returns:
    The outputs of ``fn``.
  """
  structs = [_parse_spec(s) for s in input_spec]

  def f(*inputs):
    return fn(*inputs, *args, **kwargs)

  closed, out_shape = jax.make_jaxpr(f, return_shape=True)(*structs)
  out_structs, out_tree = jax.tree.flatten(out_shape)
  dependent = _input_dependent_outputs(closed)
  known = [i for i, dep in enumerate(dependent) if not dep]
  values = {}
  if known:

    def known_outputs(*inputs):
      flat = jax.tree.leaves(f(*inputs))
      return [flat[i] for i in known]

    zeros = [np.zeros(s.shape, s.dtype) for s in structs]
    values = dict(zip(known, jax.jit(known_outputs)(*zeros)))
  leaves = [values.get(i, s) for i, s in enumerate(out_structs)]
  return jax.tree.unflatten(out_tree, leaves)


def prefetch_to_device(iterator, size, devices=None, axis_name=_DEFAULT_AXIS):
  """Shards the batches of ``iterator`` over devices, ``size`` ahead.

  Each leaf of a batch must have a leading axis of length ``len(devices)``;
  row ``i`` goes to ``devices[i]``. Keeping batches on devices ahead of time
  overlaps the transfer with computation.

  Args:
    iterator: an iterator of pytrees of NumPy arrays.
    size: how many batches to keep on the devices ahead (2 is usual).
    devices: the devices; by default ``jax.local_devices()``.
    axis_name: the name of the one-axis device mesh each batch is sharded
      over.

  Yields:
    The batches, as device arrays.
  """
  queue = collections.deque()
  devices = list(devices or _pmap_device_order())

  def put(x):
    x = _as_array(x)
    if x.shape[:1] != (len(devices),):
      raise ValueError(
        f'prefetch_to_device needs a leading axis of size {len(devices)} '
        f'(the number of devices), got shape {x.shape}.'
      )
    return _put_stacked(list(x), devices, axis_name)

  def enqueue(n):
    for data in itertools.islice(iterator, n):
      queue.append(jax.tree.map(put, data))

  enqueue(size)
  while queue:
    yield queue.popleft()
    enqueue(1)


def pad_shard_unpad(
  wrapped, static_argnums=(0,), static_argnames=(), static_return=False
):
  """Wraps a pmapped function so that it takes batches of any size.

  The non-static arguments are padded (with zeros) to a multiple of the
  local device count along their leading (batch) axis and reshaped to
  ``(devices, batch_per_device, ...)``; the outputs are brought back to the
  host, reshaped and cut to the original batch size. The wrapper takes an
  extra keyword ``min_device_batch`` to pad each device's batch to at least
  that size (fewer recompilations).

  Args:
    wrapped: the pmapped function.
    static_argnums: positions of arguments that are passed unchanged
      (by default the first one, e.g. the replicated parameters).
    static_argnames: names of keyword arguments passed unchanged.
    static_return: return the outputs as they are (no unsharding).

  Returns:
    The wrapped function.
  """

  def sharded(args, kwargs):
    """The (container, key) of every argument that gets padded."""
    return [(args, i) for i in range(len(args)) if i not in static_argnums] + [
      (kwargs, k) for k in kwargs if k not in static_argnames
    ]

  def wrapper(*args, min_device_batch=None, **kwargs):
    args, devices = list(args), jax.local_device_count()
    slots = sharded(args, kwargs)
    leading = {
      np.shape(leaf)[0]
      for holder, key in slots
      for leaf in jax.tree.leaves(holder[key])
    }
    if len(leading) != 1:
      raise AssertionError(
        f'Inconsistent batch-sizes: the padded arguments have leading axes '
        f'of sizes {leading}; they must all have one batch size.'
      )
    (batch,) = leading
    # Rows per device: enough for the batch, and at least min_device_batch.
    rows = max(-(-batch // devices), min_device_batch or 0)

    def to_devices(x):
      x = np.asarray(x)
      missing = devices * rows - x.shape[0]
      x = np.pad(x, [(0, missing)] + [(0, 0)] * (x.ndim - 1))
      return x.reshape(devices, rows, *x.shape[1:])

    for holder, key in slots:
      holder[key] = jax.tree.map(to_devices, holder[key])
    out = wrapped(*args, **kwargs)
    if static_return:
      return out

    def to_host(x):
      # On the host first: cutting there adds no device shapes to compile.
      x = jax.device_get(x)
      return x.reshape(-1, *x.shape[2:])[:batch]

    return jax.tree.map(to_host, out)

  return wrapper


def _scan_leading(body_fn, init, xs, unrolls):
  """``lax.scan`` over the ``len(unrolls)`` leading axes of ``xs``, outermost
  first, each loop unrolled by its own factor."""
  if len(unrolls) == 1:
    return lax.scan(body_fn, init, xs, unroll=unrolls[0])

  def outer(carry, x):
    return _scan_leading(body_fn, carry, x, unrolls[1:])

  return lax.scan(outer, init, xs, unroll=unrolls[0])


def scan_in_dim(
  body_fn, init, xs, axis=(0,), unroll=(1,), keepdims: bool = False
):
  """``lax.scan`` along any axes of ``xs`` (several axes scan as nested loops).

  ``body_fn(carry, x) -> (carry, y)`` sees one slice of every leaf of ``xs``
  at a time: with ``keepdims=False`` the scanned axes are removed from ``x``
  (and must be absent from ``y``); with ``keepdims=True`` they stay, with
  size 1. The outputs ``ys`` are stacked back along the same axes. With
  several axes the first one is the outermost loop.

  >>> import jax.numpy as jnp
  >>> from flax import jax_utils
  >>> xs = jnp.arange(6.0).reshape(2, 3)
  >>> carry, ys = jax_utils.scan_in_dim(
  ...     lambda c, x: (c + x, c + x), jnp.zeros(2), xs, axis=1)
  >>> carry
  Array([ 3., 12.], dtype=float32)
  >>> ys
  Array([[ 0.,  1.,  3.],
         [ 3.,  7., 12.]], dtype=float32)

  Args:
    body_fn: the loop body, ``(carry, x) -> (carry, y)``.
    init: the initial carry.
    xs: a pytree of arrays to scan over.
    axis: an axis or a tuple of axes of every leaf of ``xs``.
    unroll: the ``lax.scan`` unroll factor of each scanned axis (a tuple,
      in the order of ``axis``; axes past its end use 1), or one int for
      all of them.
    keepdims: keep the scanned axes (size 1) in the body's inputs and
      outputs.

  Returns:
    ``(final carry, ys)``.
  """
  axes = tuple(axis) if isinstance(axis, Iterable) else (axis,)
  if not axes:
    raise ValueError('scan_in_dim needs at least one axis to scan over.')
  n = len(axes)

  def to_front(x):
    # Scanned axes first, in the given order, the others after in order.
    positive = [a % x.ndim for a in axes]
    rest = [d for d in range(x.ndim) if d not in positive]
    return jnp.transpose(x, positive + rest)

  def from_front(x):
    ndim = x.ndim
    positive = [a % ndim for a in axes]
    rest = [d for d in range(ndim) if d not in positive]
    order = positive + rest
    inverse = [order.index(d) for d in range(ndim)]
    return jnp.transpose(x, inverse)

  def body(carry, x):
    if keepdims:
      x = jax.tree_util.tree_map(
        lambda a: from_front(jnp.reshape(a, (1,) * n + a.shape)), x
      )
    carry, y = body_fn(carry, x)
    if keepdims:
      y = jax.tree_util.tree_map(lambda a: to_front(a)[(0,) * n], y)
    return carry, y

  xs = jax.tree_util.tree_map(to_front, xs)
  if isinstance(unroll, Iterable):
    unrolls = tuple(unroll)[:n]
    unrolls += (1,) * (n - len(unrolls))
  else:
    unrolls = (unroll,) * n
  carry, ys = _scan_leading(body, init, xs, unrolls)
  return carry, jax.tree_util.tree_map(from_front, ys)
