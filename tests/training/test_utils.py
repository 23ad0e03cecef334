"""TrainState, early stopping, schedules, common_utils, dynamic scale,
prefetching and jax_utils."""

import math
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import optax
import pytest

import jax
import jax.numpy as jnp
from flax import jax_utils, serialization
from flax.training import (
  common_utils,
  dynamic_scale,
  early_stopping,
  lr_schedule,
  prefetch_iterator,
  train_state,
)


def test_train_state_create_and_apply_gradients():
  params = {'w': jnp.array([1.0, 2.0])}
  tx = optax.sgd(0.1, momentum=0.9)
  state = train_state.TrainState.create(apply_fn=len, params=params, tx=tx)
  assert state.step == 0 and state.apply_fn is len
  grads = {'w': jnp.array([1.0, -1.0])}
  state = state.apply_gradients(grads=grads)
  assert state.step == 1 and isinstance(state.step, int)
  # Plain optax, written independently.
  opt_state = tx.init(params)
  updates, _ = tx.update(grads, opt_state, params)
  np.testing.assert_allclose(state.params['w'], params['w'] + updates['w'])
  assert 'apply_fn' not in serialization.to_state_dict(state)


def test_train_state_is_a_pytree_under_jit_and_eval_shape():
  class State(train_state.TrainState):
    batch_stats: dict

  state = State.create(
    apply_fn=None,
    params={'w': jnp.ones(2)},
    tx=optax.adam(0.1),
    batch_stats={'m': jnp.zeros(2)},
  )
  step = jax.jit(
    lambda s: s.apply_gradients(grads=s.params, batch_stats={'m': jnp.ones(2)})
  )
  new = step(state)
  assert int(new.step) == 1 and type(new) is State
  np.testing.assert_array_equal(new.batch_stats['m'], [1, 1])
  shapes = jax.eval_shape(step, state)
  assert shapes.params['w'].shape == (2,)
  assert 'batch_stats=' in repr(new)


def test_early_stopping():
  es = early_stopping.EarlyStopping(min_delta=0, patience=2)
  stops = []
  for metric in [1.0, 1.0, 1.0, 1.0, 1.0]:
    es = es.update(metric)
    stops.append(es.should_stop)
  # should_stop uses the count before it is incremented: 4th update.
  assert stops == [False, False, False, True, True]
  es = es.reset()
  assert es.best_metric == math.inf and not es.should_stop
  es = es.update(2.0).update(1.5)
  assert es.has_improved and es.best_metric == 1.5


def _early_stopping_trace(es, metrics):
  trace = []
  for metric in metrics:
    es = es.update(metric)
    trace.append(
      (es.best_metric, es.patience_count, es.should_stop, es.has_improved)
    )
  return es, trace


def test_early_stopping_min_delta_and_sticky_stop():
  es, trace = _early_stopping_trace(
    early_stopping.EarlyStopping(patience=1, min_delta=0.5),
    [3, 2.8, 2.4, 2.0, 1.0, 1.2, 1.1, 0.9],
  )
  assert trace == [
    (3, 0, False, True),
    (3, 1, False, False),
    (2.4, 0, False, True),
    (2.4, 1, False, False),
    (1.0, 0, False, True),
    (1.0, 1, False, False),
    (1.0, 2, True, False),
    (1.0, 3, True, False),
  ]
  # An improvement after stopping does not clear should_stop.
  _, trace = _early_stopping_trace(
    early_stopping.EarlyStopping(), [1.0, 1.0, 0.5]
  )
  assert trace == [
    (1.0, 0, False, True),
    (1.0, 1, True, False),
    (0.5, 0, True, True),
  ]
  # NaN is never beaten; an infinite best accepts anything.
  _, trace = _early_stopping_trace(
    early_stopping.EarlyStopping(), [math.nan, 1.0]
  )
  assert trace[1][1:] == (1, True, False) and math.isnan(trace[1][0])
  _, trace = _early_stopping_trace(
    early_stopping.EarlyStopping(best_metric=-math.inf), [1.0, 2.0]
  )
  assert trace == [(1.0, 0, False, True), (1.0, 1, True, False)]


def test_early_stopping_reset_keeps_settings_and_extra_fields():
  class Tracked(early_stopping.EarlyStopping):
    extra: int = 3

  es = Tracked(
    patience=5,
    min_delta=0.1,
    extra=7,
    best_metric=1.0,
    patience_count=2,
    should_stop=True,
    has_improved=True,
  ).reset()
  assert es == Tracked(patience=5, min_delta=0.1, extra=7)
  assert type(es.best_metric) is float and es.best_metric == math.inf


def test_lr_schedules_match_formulas():
  spe = 10
  const = lr_schedule.create_constant_learning_rate_schedule(0.1, spe, 2.0)
  np.testing.assert_allclose(const(5), 0.1 * 5 / 20, rtol=1e-6)
  np.testing.assert_allclose(const(100), 0.1, rtol=1e-6)
  stepped = lr_schedule.create_stepped_learning_rate_schedule(
    1.0, spe, [[1, 0.5], [2.5, 0.1]]
  )
  assert [float(stepped(s)) for s in (0, 10, 11, 25, 26)] == pytest.approx(
    [1.0, 1.0, 0.5, 0.5, 0.1]
  )
  cos = lr_schedule.create_cosine_learning_rate_schedule(2.0, spe, 3)
  for s in (0, 7, 15, 30):
    np.testing.assert_allclose(
      cos(s),
      2.0 * (0.5 * math.cos(math.pi * s / 30) + 0.5),
      rtol=1e-5,
      atol=1e-7,
    )


def test_common_utils():
  n = jax.local_device_count()
  sharded = common_utils.shard({'x': np.arange(4 * n).reshape(2 * n, 2)})
  assert sharded['x'].shape == (n, 2, 2)
  assert common_utils.shard_prng_key(jax.random.key(0)).shape == (n,)
  oh = common_utils.onehot(jnp.array([[1, 0]]), 3, on_value=2.0, off_value=-1.0)
  np.testing.assert_array_equal(oh, [[[-1, 2, -1], [2, -1, -1]]])
  assert oh.dtype == jnp.float32
  forest = [{'a': np.array(i)} for i in range(3)]
  np.testing.assert_array_equal(
    common_utils.stack_forest(forest)['a'], [0, 1, 2]
  )
  metrics = [{'loss': np.array([i, 99])} for i in range(3)]
  np.testing.assert_array_equal(
    common_utils.get_metrics(metrics)['loss'], [0, 1, 2]
  )


def test_stacked_metrics_are_jax_arrays():
  stacked = common_utils.stack_forest([{'a': np.ones(2)}, {'a': np.zeros(2)}])
  assert isinstance(stacked['a'], jax.Array)
  assert stacked['a'].dtype == jnp.float32  # float64 input, x64 off
  got = common_utils.get_metrics(
    [{'l': jnp.ones((1,))}, {'l': jnp.zeros((1,))}]
  )
  assert isinstance(got['l'], jax.Array)
  np.testing.assert_array_equal(got['l'], [1.0, 0.0])
  # Metrics without a replica axis are an error.
  with pytest.raises(ValueError, match='axis 0 is out of bounds'):
    common_utils.get_metrics([{'l': jnp.ones(())}])


def test_dynamic_scale_backs_off_and_grows():
  ds = dynamic_scale.DynamicScale(growth_interval=2, scale=4.0)
  fn = ds.value_and_grad(lambda w: jnp.sum(w**2))
  ds2, finite, loss, grad = fn(jnp.array([1.0, 2.0]))
  assert bool(finite) and float(loss) == 5.0
  np.testing.assert_allclose(grad, [2.0, 4.0])
  assert int(ds2.fin_steps) == 1 and float(ds2.scale) == 4.0
  bad = ds.value_and_grad(lambda w: jnp.sum(jnp.log(w)), has_aux=False)
  ds3, finite, _, _ = bad(jnp.array([0.0]))
  assert not bool(finite) and float(ds3.scale) == 2.0
  ds4 = dynamic_scale.DynamicScale(growth_interval=1, fin_steps=1, scale=4.0)
  ds5, *_ = ds4.value_and_grad(lambda w: (w**2).sum())(jnp.ones(1))
  assert float(ds5.scale) == 8.0 and int(ds5.fin_steps) == 0
  aux_fn = ds.value_and_grad(lambda w: (jnp.sum(w), 'aux'), has_aux=True)
  _, _, (value, aux), _ = aux_fn(jnp.ones(3))
  assert float(value) == 3.0 and aux == 'aux'


def test_dynamic_scale_result_fields_and_limits():
  ds = dynamic_scale.DynamicScale(
    growth_interval=1, fin_steps=1, scale=4.0, minimum_scale=3.0
  )
  fn = ds.value_and_grad(lambda w: (jnp.sum(w * 3), 'a'), has_aux=True)
  result = fn(jnp.ones(2))
  assert isinstance(result, dynamic_scale.DynamicScaleResult)
  assert result._fields == ('dynamic_scale', 'finite', 'aux', 'grad')
  assert float(result.aux[0]) == 6.0 and result.aux[1] == 'a'
  np.testing.assert_array_equal(result.grad, [3.0, 3.0])
  assert float(result.dynamic_scale.scale) == 8.0
  assert int(result.dynamic_scale.fin_steps) == 0
  # Backing off stops at minimum_scale and restarts the count.
  bad = ds.value_and_grad(lambda w: jnp.sum(jnp.log(w)))(jnp.zeros(2))
  assert not bool(bad.finite)
  assert float(bad.dynamic_scale.scale) == 3.0
  assert int(bad.dynamic_scale.fin_steps) == 0
  # Growing stops at the largest float32; no minimum lets it reach zero.
  f32_max = float(jnp.finfo(jnp.float32).max)
  huge = dynamic_scale.DynamicScale(scale=3e38, growth_interval=0)
  grown = huge.value_and_grad(lambda w: w.sum())(jnp.ones(1))
  assert float(grown.dynamic_scale.scale) == f32_max
  tiny = dynamic_scale.DynamicScale(scale=1e-45, minimum_scale=None)
  shrunk = tiny.value_and_grad(lambda w: jnp.log(w).sum())(jnp.zeros(1))
  assert float(shrunk.dynamic_scale.scale) == 0.0
  default_min = dynamic_scale.DynamicScale().minimum_scale
  assert type(default_min) is np.float32
  assert default_min == jnp.finfo(jnp.float32).tiny


def test_prefetch_iterator():
  assert list(prefetch_iterator.PrefetchIterator(range(10), 3)) == list(
    range(10)
  )

  def failing():
    yield 1
    raise RuntimeError('source broke')

  it = prefetch_iterator.PrefetchIterator(failing())
  assert next(it) == 1
  with pytest.raises(RuntimeError, match='source broke') as first:
    next(it)
  # The error stays: every later call raises it again.
  with pytest.raises(RuntimeError) as again:
    next(it)
  assert again.value is first.value
  it = prefetch_iterator.PrefetchIterator(iter(range(100)))
  assert next(it) == 0
  it.close()


def _settle(condition):
  """Waits (up to 5 s) for ``condition``, then a little longer."""
  deadline = time.monotonic() + 5
  while not condition() and time.monotonic() < deadline:
    time.sleep(0.01)
  time.sleep(0.05)


def test_prefetch_iterator_reads_ahead_and_drains_after_close():
  fetched = []

  def source():
    for i in range(100):
      fetched.append(i)
      yield i

  it = prefetch_iterator.PrefetchIterator(source(), buffer_size=2)
  assert it.buffer_size == 2
  _settle(lambda: len(fetched) >= 2)
  assert fetched == [0, 1]  # No more than buffer_size ahead.
  assert next(it) == 0
  _settle(lambda: len(fetched) >= 3)
  it.close()
  # Items fetched before close are still handed out, then the end.
  assert list(it) == [1, 2] and fetched == [0, 1, 2]
  with pytest.raises(StopIteration):
    next(it)


def test_jax_utils_single_device():
  tree = jax_utils.replicate({'w': np.arange(3.0)})
  assert tree['w'].shape == (jax.local_device_count(), 3)
  assert tree['w'].sharding.spec == jax.sharding.PartitionSpec(
    '_device_put_sharded'
  )
  named = jax_utils.replicate(np.ones(2), axis_name='batch')
  assert named.sharding.mesh.axis_names == ('batch',)
  np.testing.assert_array_equal(jax_utils.unreplicate(tree)['w'], [0, 1, 2])
  out = jax_utils.partial_eval_by_shape(
    lambda x, key: (x + 1, jax.random.normal(key, (2,))),
    [((4,), jnp.int32)],
    jax.random.key(0),
  )
  assert out[0] == jax.ShapeDtypeStruct((4,), jnp.int32)
  np.testing.assert_allclose(out[1], jax.random.normal(jax.random.key(0), (2,)))


MULTI_DEVICE = textwrap.dedent(
  """
  import jax, jax.numpy as jnp, numpy as np
  from flax import jax_utils
  assert jax.local_device_count() == 4
  params = jax_utils.replicate({'w': np.float32(3.0)})
  assert params['w'].shape == (4,)
  f = jax.pmap(
      lambda p, x: (x * p['w'],
                    jnp.broadcast_to(jax_utils.pmean(x.sum(), 'i'), x.shape)),
      axis_name='i')
  wrapped = jax_utils.pad_shard_unpad(f)
  y, m = wrapped(params, np.arange(10.0), min_device_batch=3)
  np.testing.assert_allclose(y, np.arange(10.0) * 3)
  assert y.shape == (10,)
  # pmean over 4 devices of per-device sums of padded (4, 3) batches.
  np.testing.assert_allclose(m, np.full(10, np.arange(10.0).sum() / 4))
  try:
    wrapped(params, {'a': np.ones(3), 'b': np.ones(4)})
  except AssertionError as e:
    assert 'Inconsistent batch-sizes' in str(e)
  else:
    raise SystemExit('no error for inconsistent batch sizes')
  batches = [np.full((4, 2), i) for i in range(3)]
  got = list(jax_utils.prefetch_to_device(iter(batches), 2))
  assert [int(b[0, 0]) for b in got] == [0, 1, 2]
  assert len(got[0].sharding.device_set) == 4
  assert got[0].sharding.spec == jax.sharding.PartitionSpec('_device_put_sharded')
  got = next(jax_utils.prefetch_to_device(iter(batches), 1, axis_name='data'))
  assert got.sharding.mesh.axis_names == ('data',)
  r = jax_utils.replicate(np.ones(3), devices=jax.local_devices()[:2],
                          axis_name='d')
  assert r.shape == (2, 3) and r.sharding.spec == jax.sharding.PartitionSpec('d')
  assert r.sharding.mesh.devices.shape == (2,)
  np.testing.assert_allclose(jax.pmap(lambda x: x * 2, devices=jax.local_devices()[:2])(r), 2.0)
  print('OK')
  """
)


def test_jax_utils_on_four_devices():
  env = dict(os.environ)
  env['XLA_FLAGS'] = '--xla_force_host_platform_device_count=4'
  env['JAX_PLATFORMS'] = 'cpu'
  result = subprocess.run(
    [sys.executable, '-c', MULTI_DEVICE],
    env=env,
    capture_output=True,
    text=True,
  )
  assert result.returncode == 0, result.stderr
  assert result.stdout.strip() == 'OK'


def _numpy_scan_axis(xs, axis):
  """Running sums along ``axis`` of ``xs`` (a plain NumPy loop)."""
  moved = np.moveaxis(xs, axis, 0)
  carry = np.zeros(moved.shape[1:], xs.dtype)
  outs = []
  for x in moved:
    carry = carry + x
    outs.append(carry)
  return carry, np.moveaxis(np.stack(outs), 0, axis)


@pytest.mark.parametrize('axis', [0, 1, -1])
def test_scan_in_dim_single_axis(axis):
  xs = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
  init = np.zeros(np.delete(xs.shape, axis % 3), np.float32)
  carry, ys = jax_utils.scan_in_dim(
    lambda c, x: (c + x, c + x), init, xs, axis=axis
  )
  want_carry, want_ys = _numpy_scan_axis(xs, axis % 3)
  np.testing.assert_allclose(carry, want_carry)
  np.testing.assert_allclose(ys, want_ys)
  assert ys.shape == xs.shape


def test_scan_in_dim_several_axes_is_nested_loop():
  xs = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)

  def body(c, x):
    return c * 2.0 + x, c

  carry, ys = jax_utils.scan_in_dim(body, np.zeros(3, np.float32), xs, (2, 0))
  # Reference: axis 2 is the outer loop, axis 0 the inner one.
  c = np.zeros(3, np.float32)
  want = np.zeros_like(xs)
  for k in range(4):
    for i in range(2):
      want[i, :, k] = c
      c = c * 2.0 + xs[i, :, k]
  np.testing.assert_allclose(carry, c)
  np.testing.assert_allclose(ys, want)


def test_scan_in_dim_keepdims_and_pytrees():
  xs = {
    'a': np.ones((4, 2), np.float32),
    'b': np.arange(4.0, dtype=np.float32)[:, None]
    * np.ones((4, 3), np.float32),
  }
  shapes = []

  def body(c, x):
    shapes.append((x['a'].shape, x['b'].shape))
    return c + x['b'].sum(), {'s': x['a'] * 2.0}

  carry, ys = jax_utils.scan_in_dim(body, 0.0, xs, axis=0, keepdims=True)
  assert shapes[0] == ((1, 2), (1, 3))
  np.testing.assert_allclose(carry, 3.0 * (0 + 1 + 2 + 3))
  np.testing.assert_allclose(ys['s'], np.full((4, 2), 2.0))


@pytest.mark.parametrize('unroll', [(1,), (1, 3), 2, (2,)])
def test_scan_in_dim_unroll_per_axis(unroll):
  xs = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
  carry, ys = jax_utils.scan_in_dim(
    lambda c, x: (c + x, c + x),
    np.zeros(4, np.float32),
    xs,
    (0, 1),
    unroll=unroll,
  )
  np.testing.assert_allclose(carry, [60.0, 66.0, 72.0, 78.0])
  assert ys.shape == (2, 3, 4)


def test_scan_in_dim_needs_an_axis():
  with pytest.raises(ValueError, match='at least one axis'):
    jax_utils.scan_in_dim(lambda c, x: (c, x), 0.0, np.ones(3), axis=())
