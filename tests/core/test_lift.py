"""Tests of flax.core.lift: pack and the lifted transforms."""

import hashlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import errors, struct
from flax.core import Scope, apply, axes_scan, init, lift, meta

ones = jax.nn.initializers.ones
normal = jax.nn.initializers.normal(1.0)


def reference_key(root, *items):
  digest = hashlib.sha1()
  for item in items:
    if isinstance(item, str):
      digest.update(item.encode())
    else:
      digest.update(item.to_bytes((item.bit_length() + 7) // 8, 'big'))
  value = int.from_bytes(digest.digest()[:4], 'big')
  return jax.random.fold_in(root, np.uint32(value))


def dense(scope, x, features=2):
  w = scope.param('kernel', normal, (x.shape[-1], features))
  b = scope.param('bias', jax.nn.initializers.zeros, (features,))
  return x @ w + jnp.broadcast_to(b, x.shape[:-1] + b.shape)


def shapes(tree):
  return jax.tree_util.tree_map(jnp.shape, tree)


# -- pack ---------------------------------------------------------------------


def lift_transpose(fn, target='params', variables=True, rngs=True):
  def wrapper(scope_fn, repack_fn, variable_groups, rng_groups, *args):
    target, rest = variable_groups
    target = jax.tree_util.tree_map(lambda x: x.T if x.ndim == 2 else x, target)
    scope = scope_fn((target, rest), rng_groups)
    y = fn(scope, *args)
    return y, repack_fn(scope)

  return lift.pack(wrapper, (target, variables), (variables,), (rngs,))


def test_pack_transpose_example():
  from flax.core import nn as core_nn

  x = jnp.ones((3, 2))
  y, params = init(lift_transpose(core_nn.dense))(jax.random.PRNGKey(0), x, 4)
  assert y.shape == (3, 4)
  assert shapes(params) == {'params': {'bias': (4,), 'kernel': (2, 4)}}


def test_pack_groups_first_match_and_freezes_in_only():
  seen = {}

  def wrapper(scope_fn, repack_fn, variable_groups, rng_groups):
    seen['groups'] = variable_groups
    seen['rngs'] = rng_groups
    scope = scope_fn(variable_groups, rng_groups)
    seen['mutable'] = (
      scope.is_mutable_collection('params'),
      scope.is_mutable_collection('stats'),
    )
    return None, repack_fn(scope)

  lifted = lift.pack(wrapper, (['params'], True), (['params'],), ('params',))
  variables = {'params': {'w': 1.0}, 'stats': {'m': 2.0}}
  apply(lifted, mutable=True)(
    variables,
    rngs={'params': jax.random.PRNGKey(0), 'dropout': jax.random.PRNGKey(1)},
  )
  (params_group,), (stats_group,) = seen['groups']
  assert params_group == {'params': {'w': 1.0}}
  assert set(stats_group) == {'stats'}
  assert type(stats_group['stats']).__name__ == 'FrozenDict'
  assert set(seen['rngs'][0][0]) == {'params'}
  assert seen['mutable'] == (True, False)


def test_pack_unlifted_collection_is_unavailable():
  def wrapper(scope_fn, repack_fn, variable_groups, rng_groups):
    scope = scope_fn(variable_groups, rng_groups)
    return scope.get_variable('stats', 'm'), repack_fn(scope)

  lifted = lift.pack(wrapper, ('params',), ('params',), ())
  y = apply(lifted)({'params': {}, 'stats': {'m': 2.0}})
  assert y is None


def test_pack_drops_kwargs_with_a_warning_unless_enabled():
  def wrapper(scope_fn, repack_fn, variable_groups, rng_groups, **kw):
    scope = scope_fn(variable_groups, rng_groups)
    return kw, repack_fn(scope)

  with pytest.warns(
    RuntimeWarning,
    match='kwargs are not supported in None, so "a, b" is\\(are\\) ignored',
  ):
    out = apply(lambda s: lift.pack(wrapper, (), (), ())(s, a=1, b=2))({})
  assert out == {}
  out = apply(
    lambda s: lift.pack(wrapper, (), (), (), enable_kwargs=True)(s, a=1)
  )({})
  assert out == {'a': 1}


def test_pack_dedups_parent_and_child_scopes():
  def wrapper(scope_fn, repack_fn, variable_groups, rng_groups):
    (group,) = variable_groups
    assert len(group) == 1  # only the root is lifted
    parent, child = scope_fn(variable_groups, rng_groups)
    child.put_variable('state', 'x', 1.0)
    parent.put_variable('state', 'y', 2.0)
    assert child.path == ('c',)
    return None, repack_fn((parent, child))

  def f(scope):
    child = scope.push('c')
    lift.pack(wrapper, (True,), (True,), (True,))((scope, child))

  _, variables = apply(f, mutable=True)({})
  assert variables == {'state': {'c': {'x': 1.0}, 'y': 2.0}}


def test_inner_scope_debug_path_and_invalidation():
  saved = {}

  def body(scope, x):
    saved['scope'] = scope
    saved['path'] = scope.path_text
    return x

  def f(scope, x):
    return lift.checkpoint(body)(scope.push('blk'), x)

  apply(f)({}, 1.0)
  assert saved['path'] == '/remat(blk)'
  with pytest.raises(errors.InvalidScopeError):
    saved['scope'].variables()


@pytest.mark.parametrize('kind', ['vmap', 'jit', 'checkpoint', 'scan', 'bcast'])
def test_lifted_scopes_do_not_leak_tracers(kind):
  # The inner scopes hold the traced variables; once a transform's trace
  # ends they must not be kept alive (jax.check_tracer_leaks passes).
  def body(scope, c, x):
    return c, dense(scope, x)

  lifted = {
    'vmap': lambda: lift.vmap(
      dense, variable_axes={'params': 0}, split_rngs={'params': True}
    ),
    'jit': lambda: lift.jit(dense),
    'checkpoint': lambda: lift.checkpoint(dense),
    'scan': lambda: (
      lambda scope, x: lift.scan(
        body, variable_axes={'params': 0}, split_rngs={'params': True}
      )(scope, (), x)[1]
    ),
    'bcast': lambda: (
      lambda scope, x: lift.scan(
        body, variable_broadcast='params', split_rngs={'params': False}
      )(scope, (), x)[1]
    ),
  }[kind]()
  x = jnp.ones((3, 2))
  with jax.check_tracer_leaks(True):
    y, variables = init(lifted)(jax.random.key(0), x)
    np.testing.assert_allclose(apply(lifted)(variables, x), y, rtol=1e-6)


# -- vmap ---------------------------------------------------------------------


def test_vmap_split_params_match_reference_keys():
  key = jax.random.PRNGKey(0)
  ens = lift.vmap(
    dense, variable_axes={'params': 0}, split_rngs={'params': True}, in_axes=0
  )
  x = jnp.arange(12.0).reshape(4, 3)
  y, variables = init(ens)(key, x)
  assert shapes(variables) == {'params': {'bias': (4, 2), 'kernel': (4, 3, 2)}}
  keys = jax.random.split(key, 4)
  for i in range(4):
    expected = jax.random.normal(reference_key(keys[i], 1), (3, 2))
    np.testing.assert_allclose(
      variables['params']['kernel'][i], expected, rtol=1e-6
    )
  k = variables['params']['kernel']
  np.testing.assert_allclose(y, jnp.einsum('bi,bio->bo', x, k), rtol=1e-5)
  np.testing.assert_allclose(apply(ens)(variables, x), y, rtol=1e-6)


def test_vmap_shared_params():
  shared = lift.vmap(
    dense,
    variable_axes={'params': None},
    split_rngs={'params': False},
    in_axes=0,
  )
  x = jnp.ones((5, 3))
  y, variables = init(shared)(jax.random.PRNGKey(0), x)
  assert shapes(variables) == {'params': {'bias': (2,), 'kernel': (3, 2)}}
  np.testing.assert_allclose(y, apply(dense)(variables, x), rtol=1e-6)


def test_vmap_axis_size_and_errors():
  def make(scope):
    return scope.param('w', normal, ())

  f = lift.vmap(
    make, variable_axes={'params': 0}, split_rngs={'params': True}, axis_size=3
  )
  w, variables = init(f)(jax.random.PRNGKey(0))
  assert w.shape == (3,) and len(set(np.asarray(w).tolist())) == 3
  g = lift.vmap(make, variable_axes={'params': 0}, split_rngs={'params': True})
  with pytest.raises(ValueError, match='axis_size should be specified'):
    init(g)(jax.random.PRNGKey(0))
  h = lift.vmap(lambda s, a, b: a + b, variable_axes={}, split_rngs={})
  with pytest.raises(ValueError, match='Inconsistent batch axis sizes'):
    init(h)(jax.random.PRNGKey(0), jnp.ones(2), jnp.ones(3))


def test_vmap_mutable_state_axis_and_metadata():
  def f(scope, x):
    w = scope.param('w', meta.with_partitioning(ones, ('in',)), x.shape)
    count = scope.variable('state', 'count', jnp.zeros, ())
    count.value += 1
    return x * w

  lifted = lift.vmap(
    f,
    variable_axes={'params': 0, 'state': 0},
    split_rngs={'params': True},
    in_axes=0,
    metadata_params={meta.PARTITION_NAME: 'batch'},
  )
  x = jnp.ones((2, 3))
  _, variables = init(lifted)(jax.random.PRNGKey(0), x)
  box = variables['params']['w']
  assert isinstance(box, meta.Partitioned)
  assert box.names == ('batch', 'in') and box.value.shape == (2, 3)
  _, state = apply(lifted, mutable='state')(variables, x)
  np.testing.assert_array_equal(state['state']['count'], [2.0, 2.0])


class _MeanBox(struct.PyTreeNode, meta.AxisMetadata):
  """A box kept without the mapped axis outside the transform."""

  value: object

  def unbox(self):
    return self.value

  def replace_boxed(self, val):
    return self.replace(value=val)

  def add_axis(self, index, params):
    return self.replace(value=jnp.mean(self.value, axis=index))

  def remove_axis(self, index, params):
    shape = list(jnp.shape(self.value))
    shape.insert(index, params['axis_size'])
    return self.replace(value=jnp.broadcast_to(self.value, shape))


def test_vmap_size_read_after_boxes_leave_the_axis():
  def f(scope, x):
    v = scope.variable('aux', 'v', lambda: _MeanBox(jnp.full((), 3.0)))
    assert jnp.shape(v.value) == ()
    return x * v.value

  lifted = lift.vmap(
    f,
    variable_axes={'aux': 0},
    split_rngs={},
    in_axes=0,
    metadata_params={'axis_size': 2},
  )
  x = jnp.ones((2, 5))
  y, variables = init(lifted)(jax.random.PRNGKey(0), x)
  assert variables['aux']['v'].value.shape == ()
  y, _ = apply(lifted, mutable='aux')(variables, x)
  np.testing.assert_array_equal(y, jnp.full((2, 5), 3.0))


# -- scan ---------------------------------------------------------------------


def test_scan_stacked_params():
  def body(scope, c, x):
    h = jnp.tanh(dense(scope, c, 3) + x)
    return h, h.sum()

  scanned = lift.scan(
    body, variable_axes={'params': 0}, split_rngs={'params': True}
  )
  c0 = jnp.ones((1, 3))
  xs = jnp.arange(4.0)
  (c, ys), variables = init(scanned)(jax.random.PRNGKey(0), c0, xs)
  assert shapes(variables) == {'params': {'bias': (4, 3), 'kernel': (4, 3, 3)}}
  # Reference loop in plain JAX.
  k, b = variables['params']['kernel'], variables['params']['bias']
  h, ref_ys = c0, []
  for i in range(4):
    h = jnp.tanh(h @ k[i] + b[i][None] + xs[i])
    ref_ys.append(h.sum())
  np.testing.assert_allclose(c, h, rtol=1e-5)
  np.testing.assert_allclose(ys, jnp.stack(ref_ys), rtol=1e-5)
  c2, ys2 = apply(scanned)(variables, c0, xs)
  np.testing.assert_allclose(c2, h, rtol=1e-5)


def test_scan_broadcast_params_reverse_and_broadcast_input():
  def body(scope, c, x, scale):
    w = scope.param('w', normal, ())
    return c * w + x * scale, c

  scanned = lift.scan(
    body,
    variable_broadcast='params',
    split_rngs={'params': False},
    in_axes=(0, axes_scan.broadcast),
    reverse=True,
  )
  xs = jnp.arange(3.0)
  (c, ys), variables = init(scanned)(jax.random.PRNGKey(0), 1.0, xs, 2.0)
  w = variables['params']['w']
  assert w.shape == ()
  ref_c, ref_ys = 1.0, [None] * 3
  for i in reversed(range(3)):
    ref_ys[i] = ref_c
    ref_c = ref_c * w + xs[i] * 2.0
  np.testing.assert_allclose(c, ref_c, rtol=1e-5)
  np.testing.assert_allclose(ys, jnp.stack(ref_ys), rtol=1e-5)
  np.testing.assert_allclose(
    apply(scanned)(variables, 1.0, xs, 2.0)[0], ref_c, rtol=1e-5
  )


def test_scan_carry_variables():
  def body(scope, c, x):
    total = scope.variable('state', 'total')
    total.value = total.value + x
    return c, total.value

  scanned = lift.scan(body, variable_carry='state')
  (c, ys), state = apply(scanned, mutable='state')(
    {'state': {'total': 0.0}}, 0.0, jnp.arange(4.0)
  )
  np.testing.assert_allclose(ys, [0.0, 1.0, 3.0, 6.0])
  assert float(state['state']['total']) == 6.0


def test_scan_broadcast_depending_on_carry_raises():
  def body(scope, c, x):
    scope.param('w', lambda k: c * 2.0)
    return c, x

  scanned = lift.scan(
    body, variable_broadcast='params', split_rngs={'params': False}
  )
  with pytest.raises(ValueError, match='data dependency'):
    init(scanned)(jax.random.PRNGKey(0), 1.0, jnp.arange(3.0))


def test_axes_scan_nonzero_axis():
  def body(bcast, c, x):
    return bcast, c + x, x * 2

  scan = axes_scan.scan(body, in_axes=(1,), out_axes=1)
  _, c, ys = scan((), jnp.zeros(2), jnp.ones((2, 3)))
  np.testing.assert_allclose(c, [3.0, 3.0])
  assert ys.shape == (2, 3)
  assert repr(axes_scan.broadcast) == 'broadcast'


def test_remat_scan_shapes_and_values():
  def body(scope, c):
    return dense(scope.push('Dense_0'), c, 8)

  x = jnp.ones((2, 8))
  y, variables = init(lift.remat_scan(body, (10, 10)))(jax.random.PRNGKey(0), x)
  assert shapes(variables) == {
    'params': {'Dense_0': {'bias': (10, 10, 8), 'kernel': (10, 10, 8, 8)}}
  }
  p = variables['params']['Dense_0']
  h = x
  for i in range(10):
    for j in range(10):
      h = h @ p['kernel'][i, j] + p['bias'][i, j][None]
  np.testing.assert_allclose(y, h, rtol=1e-4)


# -- jit / remat --------------------------------------------------------------


def test_jit_values_and_cache():
  traces = []

  def f(scope, x):
    traces.append(1)
    return dense(scope, x)

  jitted = lift.jit(f)
  x = jnp.ones((2, 3))
  y, variables = init(jitted)(jax.random.PRNGKey(0), x)
  np.testing.assert_allclose(y, apply(dense)(variables, x), rtol=1e-6)
  n = len(traces)
  apply(jitted)(variables, x)
  apply(jitted)(variables, x + 1)
  assert len(traces) == n + 1  # one new trace for apply, then cached


def test_jit_rng_counters_follow_flax():
  traces = []

  def noise(scope):
    traces.append(1)
    return jax.random.uniform(scope.make_rng('dropout'))

  jitted = lift.jit(noise)

  def body(scope):
    child = scope.push('child')
    draws = [jitted(child) for _ in range(4)]
    after = child.make_rng('dropout')
    return draws, after

  key = jax.random.key(0)
  for _ in range(3):
    draws, after = apply(body)({}, rngs={'dropout': key})
  # The counters are static: one trace per call position, then cached.
  assert len(traces) == 4
  # Call i draws key 2i - 1 outside (its base key) and 2i inside.
  for i, d in enumerate(draws, start=1):
    base = reference_key(key, 'child', 2 * i - 1)
    expected = jax.random.uniform(reference_key(base, 2 * i))
    np.testing.assert_array_equal(d, expected)
  np.testing.assert_array_equal(
    jax.random.key_data(after),
    jax.random.key_data(reference_key(key, 'child', 9)),
  )


def test_jit_static_argnums():
  def f(scope, x, power):
    if power > 2:  # Python control flow: power must be static
      return -x * scope.param('s', ones, ())
    return x**power * scope.param('s', ones, ())

  jitted = lift.jit(f, static_argnums=(2,))
  y, variables = init(jitted)(jax.random.PRNGKey(0), 3.0, 2)
  assert float(y) == 9.0
  assert float(apply(jitted)(variables, 3.0, 3)) == -3.0


def test_remat_same_params_and_grads():
  x = jnp.arange(6.0).reshape(2, 3)
  _, plain = init(dense)(jax.random.PRNGKey(0), x)
  _, rem = init(lift.checkpoint(dense))(jax.random.PRNGKey(0), x)
  jax.tree_util.tree_map(np.testing.assert_array_equal, plain, rem)
  loss = lambda fn: lambda v: apply(fn)(v, x).sum()
  g1 = jax.grad(loss(dense))(plain)
  g2 = jax.grad(loss(lift.remat(dense)))(plain)
  jax.tree_util.tree_map(np.testing.assert_allclose, g1, g2)
  with pytest.raises(ValueError, match='concrete'):
    lift.checkpoint(dense, concrete=True)


def test_transforms_under_outer_jit_and_grad():
  scanned = lift.scan(
    lambda s, c: (dense(s, c, 3), ()),
    variable_axes={'params': 0},
    split_rngs={'params': True},
    length=3,
    in_axes=(),
  )
  ens = lift.vmap(
    scanned, variable_axes={'params': 0}, split_rngs={'params': True}, in_axes=0
  )
  x = jnp.ones((2, 1, 3))
  (_, _), variables = jax.jit(init(ens))(jax.random.PRNGKey(0), x)
  assert shapes(variables)['params']['kernel'] == (2, 3, 3, 3)
  grads = jax.jit(jax.grad(lambda v: apply(ens)(v, x)[0].sum()))(variables)
  assert shapes(grads) == shapes(variables)


# -- jvp / vjp / custom_vjp ---------------------------------------------------


def learn_scale(scope, x):
  p = scope.param('scale', jax.nn.initializers.zeros, ())
  return p * x


def test_jvp_with_variable_tangents():
  def f(scope, x):
    vars_t = jax.tree_util.tree_map(
      jnp.ones_like, scope.variables().get('params', {})
    )
    return lift.jvp(
      learn_scale,
      scope,
      (x,),
      (jnp.zeros_like(x),),
      variable_tangents={'params': vars_t},
    )

  x = jnp.arange(3.0)
  _, variables = init(f)(jax.random.PRNGKey(0), x)
  variables = {'params': {'scale': jnp.array(2.0)}}
  y, y_t = apply(f)(variables, x)
  np.testing.assert_allclose(y, 2.0 * x)
  np.testing.assert_allclose(y_t, x)  # d(p * x)/dp = x


def test_vjp():
  def f(scope, x):
    y, bwd = lift.vjp(learn_scale, scope, x)
    params_grad, x_grad = bwd(jnp.ones_like(y))
    return y, params_grad, x_grad

  x = jnp.arange(3.0)
  variables = {'params': {'scale': jnp.array(2.0)}}
  y, pg, xg = apply(f)(variables, x)
  np.testing.assert_allclose(pg['params']['scale'], x.sum())
  np.testing.assert_allclose(xg, jnp.full(3, 2.0))

  def g(scope, x):
    def fn(scope, x):
      y = learn_scale(scope, x)
      return y, y.sum()

    _, _, aux = lift.vjp(fn, scope, x, has_aux=True)
    return aux

  assert float(apply(g)(variables, x)) == 6.0


def test_custom_vjp_sign_gradient():
  def fwd(scope, x):
    return dense(scope, x, 1), ()

  def bwd(res, g):
    del res
    grads = {'params': {'kernel': jnp.ones((2, 1)), 'bias': jnp.ones(1)}}
    return grads, jnp.sign(g) * jnp.ones((1, 2))

  f = lift.custom_vjp(lambda s, x: dense(s, x, 1), fwd, bwd)
  x = jnp.ones((1, 2))
  _, variables = init(f)(jax.random.PRNGKey(0), x)
  grad = jax.grad(lambda v: apply(f)(v, x).sum())(variables)
  np.testing.assert_array_equal(grad['params']['bias'], [1.0])
  np.testing.assert_array_equal(grad['params']['kernel'], [[1.0], [1.0]])


# -- control flow -------------------------------------------------------------


def test_while_loop():
  def f(scope):
    def cond(scope, c):
      return c < scope.get_variable('params', 'limit')

    def body(scope, c):
      acc = scope.variable('state', 'acc')
      acc.value += c
      return c + 1

    return lift.while_loop(cond, body, scope, 0, carry_variables='state')

  variables = {'params': {'limit': 5}, 'state': {'acc': 0}}
  c, state = apply(f, mutable='state')(variables)
  assert int(c) == 5 and int(state['state']['acc']) == 10


def test_while_loop_split_rngs():
  def f(scope):
    def body(scope, c):
      i, acc = c
      return i + 1, acc + jax.random.uniform(scope.make_rng('noise'))

    return lift.while_loop(
      lambda s, c: c[0] < 3, body, scope, (0, 0.0), split_rngs={'noise': True}
    )

  _, total = apply(f)({}, rngs={'noise': jax.random.PRNGKey(0)})
  assert 0.0 < float(total) < 3.0


def test_cond_and_switch():
  def f(scope, pred, x):
    return lift.cond(
      pred, lambda s, x: dense(s, x), lambda s, x: -dense(s, x), scope, x
    )

  x = jnp.ones((1, 3))
  y, variables = init(f)(jax.random.PRNGKey(0), True, x)
  np.testing.assert_allclose(apply(f)(variables, False, x), -y, rtol=1e-6)

  def g(scope, i, x):
    branches = [
      lambda s, x: x * s.param('w', ones, ()),
      lambda s, x: x + s.param('w', ones, ()),
      lambda s, x: x - s.param('w', ones, ()),
    ]
    return lift.switch(i, branches, scope, x)

  _, variables = init(g)(jax.random.PRNGKey(0), 0, 3.0)
  variables = {'params': {'w': jnp.array(2.0)}}
  results = [float(apply(g)(variables, i, 3.0)) for i in range(3)]
  assert results == [6.0, 5.0, 1.0]


# -- map_variables / fold_rngs ------------------------------------------------


def test_map_variables_causal_kernel():
  def f(scope, x):
    return lift.map_variables(
      lambda s, x: x @ s.param('kernel', normal, (3, 3)),
      'params',
      lambda vs: jax.tree_util.tree_map(jnp.triu, vs),
      lambda vs: vs,
      init=True,
      mutable=False,
      rngs=True,
      variables=True,
    )(scope, x)

  x = jnp.ones((1, 3))
  y, variables = init(f)(jax.random.PRNGKey(0), x)
  kernel = variables['params']['kernel']
  # init maps the new kernel out again (identity here), so it is stored
  # masked; at apply a full kernel is masked on the way in.
  np.testing.assert_allclose(kernel, jnp.triu(kernel))
  np.testing.assert_allclose(y, x @ kernel, rtol=1e-6)
  full = jnp.arange(9.0).reshape(3, 3)
  np.testing.assert_allclose(
    apply(f)({'params': {'kernel': full}}, x), x @ jnp.triu(full), rtol=1e-6
  )


def test_map_variables_immutable_target():
  def f(scope):
    def body(s):
      s.put_variable('params', 'w', 1.0)

    lift.map_variables(
      body,
      'params',
      lambda v: v,
      lambda v: v,
      init=False,
      mutable=False,
      rngs=True,
      variables=True,
    )(scope)

  with pytest.raises(errors.ModifyScopeVariableError):
    apply(f, mutable=True)({'params': {'w': 0.0}})


def test_fold_rngs_forks_keys_as_jit_does():
  # One key is drawn per stream on entry (advancing the outer counter);
  # keys made inside derive from it, and the outer scope counts on.
  def f(scope):
    return scope.push('b').make_rng('params'), scope.make_rng('params')

  def outer(transform):
    def fn(scope):
      a = scope.push('a')
      first = a.make_rng('params')
      inner = transform(f)(a)
      return first, inner, a.make_rng('params')

    return apply(fn)({}, rngs={'params': jax.random.PRNGKey(0)})

  folded = jax.tree_util.tree_map(np.asarray, outer(lift.fold_rngs))
  jitted = jax.tree_util.tree_map(np.asarray, outer(lift.jit))
  jax.tree_util.tree_map(np.testing.assert_array_equal, folded, jitted)
  key = jax.random.PRNGKey(0)
  forked = reference_key(key, 'a', 2)
  np.testing.assert_array_equal(folded[1][0], reference_key(forked, 'b', 1))
  np.testing.assert_array_equal(folded[1][1], reference_key(forked, 3))
  np.testing.assert_array_equal(folded[0], reference_key(key, 'a', 1))
  np.testing.assert_array_equal(folded[2], reference_key(key, 'a', 4))


def test_scope_used_inside_raw_vmap_raises():
  def f(scope, x):
    return jax.vmap(lambda x: x * scope.param('w', ones, ()))(x)

  with pytest.raises(errors.JaxTransformError):
    init(f)(jax.random.PRNGKey(0), jnp.ones(3))


def test_scope_class_exported():
  assert lift.pack is not None and isinstance(Scope({}), Scope)


def test_vmap_and_scan_in_out_axes():
  from flax.typing import In, Out

  def dense(scope, x):
    w = scope.param('w', jax.nn.initializers.ones, (x.shape[-1], 2))
    c = scope.variable('state', 'c', jnp.zeros, (2,))
    c.value = c.value + x.sum()
    return x @ w

  def vmapped(axes):
    return lift.vmap(dense, variable_axes=axes, split_rngs={'params': True})

  _, v = init(vmapped({'params': 0, 'state': Out(0)}))(
    jax.random.key(0), jnp.ones((4, 3))
  )
  assert shapes(v) == {'params': {'w': (4, 3, 2)}, 'state': {'c': (4, 2)}}
  # An input-only collection is immutable inside.
  with pytest.raises(errors.ScopeCollectionNotFound):
    init(vmapped({'params': 0, 'state': In(None)}))(
      jax.random.key(0), jnp.ones((4, 3))
    )
  v = {'params': {'w': jnp.ones((4, 3, 2))}, 'state': {'c': jnp.ones((4, 2))}}
  _, s = apply(vmapped({'params': 0, 'state': Out(0)}), mutable=True)(
    v, jnp.ones((4, 3))
  )
  np.testing.assert_allclose(s['state']['c'], 3.0)
  with pytest.raises(errors.ModifyScopeVariableError):
    apply(vmapped({'params': 0, 'state': In(0)}), mutable=True)(
      v, jnp.ones((4, 3))
    )

  def body(scope, c, x):
    w = scope.param('w', jax.nn.initializers.ones, ())
    return c + w * x, c

  scanned = lift.scan(
    body, variable_axes={'params': In(0)}, split_rngs={'params': True}
  )
  c, ys = apply(scanned)({'params': {'w': jnp.arange(3.0)}}, 0.0, jnp.ones(3))
  assert float(c) == 3.0 and ys.tolist() == [0.0, 0.0, 1.0]
  scanned = lift.scan(
    body, variable_axes={'params': Out(0)}, split_rngs={'params': True}
  )
  _, v = init(scanned)(jax.random.key(0), 0.0, jnp.ones(3))
  assert shapes(v) == {'params': {'w': (3,)}}


def test_lift_helpers():
  d = {'a': {'b': 1, 'c': 2}}
  assert lift.set_from_dict(d, {'a': {'b': 3}, 'q': 1}) is None
  assert d == {'a': {'b': 3, 'c': 2}, 'q': 1}
  assert lift.id_fn(3) == 3
  c = lift.CountsHolder.make({'a': {'b': 1, 'c': 2}})
  assert c.flat_d == {('a', 'b'): 1, ('a', 'c'): 2}
  c2 = lift.CountsHolder.make({'a': {'b': 3, 'c': 2}})
  assert c2.sub(c).flat_d == {('a', 'b'): 2, ('a', 'c'): 0}
  assert c.add(c2).unflat() == {'a': {'b': 4, 'c': 4}}
  assert c.flat_d == {('a', 'b'): 1, ('a', 'c'): 2}
  ctx = lift.TransformContext()
  with ctx.push(3):
    assert ctx.get() == 3 and ctx.stack == [3]
  with pytest.raises(IndexError):
    ctx.get()
  assert lift.In is __import__('flax').typing.In


def test_lift_value_and_grad_and_swap_collection():
  def f(scope, x):
    w = scope.param('w', jax.nn.initializers.ones, (2,))
    return (w * x).sum()

  seen = []

  def m(scope, x):
    y, grads = lift.value_and_grad(f, scope, x)
    seen.append((float(y), [g.tolist() for g in grads]))
    y, aux, grads = lift.value_and_grad(
      lambda s, x: (f(s, x), 7), scope, x, has_aux=True
    )
    seen.append((float(y), aux, len(grads)))
    return 0

  init(m)(jax.random.key(0), jnp.ones(2))
  assert seen == [(2.0, [[1.0, 1.0]]), (2.0, 7, 1)]

  def g(scope):
    seen.append({k: dict(v) for k, v in scope.variables().items()})
    scope.put_variable('b', 'x', 2)

  _, out = apply(lift.swap_collection(g, 'a', 'b'), mutable=True)(
    {'a': {'x': 1}, 'b': {'y': 0}}
  )
  assert seen[-1] == {'a': {'y': 0}, 'b': {'x': 1}}
  assert out == {'a': {'x': 2}, 'b': {'y': 0}}


def test_map_variables_defaults_and_scan_options():
  def f(scope):
    return scope.param('w', jax.nn.initializers.ones, (2,))

  doubled = lift.map_variables(
    f, 'params', lambda v: jax.tree_util.tree_map(lambda x: 2 * x, v), init=True
  )
  y, v = init(doubled)(jax.random.key(0))
  # The mapped value is what init stores too (map_out_fn is the identity).
  assert y.tolist() == [2.0, 2.0] and v['params']['w'].tolist() == [2.0, 2.0]

  def body(scope, c, x):
    w = scope.param('w', jax.nn.initializers.ones, ())
    return c + w * x, c

  for options in (
    {'_split_transpose': False},
    {'check_constancy_invariants': False},
  ):
    scanned = lift.scan(
      body,
      variable_broadcast='params',
      split_rngs={'params': False},
      **options,
    )
    (c, ys), _ = init(scanned)(jax.random.key(0), 0.0, jnp.arange(3.0))
    assert float(c) == 3.0 and ys.tolist() == [0.0, 0.0, 1.0]


def test_axes_scan_build_shaped_array():
  a = axes_scan.build_shaped_array(jnp.ones((2, 3)))
  assert (a.shape, a.dtype, a.weak_type) == ((2, 3), jnp.float32, False)
  a = axes_scan.build_shaped_array(np.ones((4,), np.int32), batch_dim=True)
  assert (a.shape, a.dtype) == ((), jnp.int32)
  a = axes_scan.build_shaped_array(3.0, batch_dim=True)
  assert (a.shape, a.dtype, a.weak_type) == ((), jnp.float32, False)
  spec = jax.ShapeDtypeStruct((5, 2), jnp.bfloat16)
  a = axes_scan.build_shaped_array(spec, batch_dim=True)
  assert (a.shape, a.dtype) == ((2,), jnp.bfloat16)


def test_scan_broadcast_variables_made_inside_a_nested_jit():
  # The broadcast value is computed by a jitted call that also reads the
  # carry; only the outputs that use the carry depend on it.
  def body(scope, c, x):
    def inner(scope, c):
      return c * scope.param('w', ones, ())

    y = lift.jit(inner)(scope, c)
    return y + x, c

  def f(scope, c, xs):
    scanned = lift.scan(
      body,
      variable_broadcast='params',
      split_rngs={'params': False},
    )
    return scanned(scope, c, xs)

  (c, ys), variables = init(f)(jax.random.PRNGKey(0), 1.0, jnp.arange(3.0))
  assert float(variables['params']['w']) == 1.0
  np.testing.assert_allclose(np.asarray(ys), [1.0, 1.0, 2.0])
  assert float(c) == 4.0


def test_lazy_init_never_materializes_abstract_inputs():
  import resource

  from flax.core import partial_eval

  def f(rng, x):
    k = jax.random.normal(rng, (x.shape[-1], x.shape[-1]))
    return k, x @ k

  def run():
    # 512 GiB of float32 input: only its shape is used.
    big = jax.ShapeDtypeStruct((1024 * 1024 * 1024, 128), jnp.float32)
    return partial_eval.lazy_init(lambda r, x: f(r, x)[0])(
      jax.random.PRNGKey(0), big
    )

  soft, hard = resource.getrlimit(resource.RLIMIT_AS)
  # The address space is capped below the input's size, so materializing
  # it fails.
  resource.setrlimit(resource.RLIMIT_AS, (64 << 30, hard))
  try:
    k = run()
  finally:
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
  assert k.shape == (128, 128)
