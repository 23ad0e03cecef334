"""Tests of flax.core.scope: Scope, Variable, filters, init/apply/bind."""

import hashlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import flax
from flax import errors
from flax.core import (
  DenyList,
  FrozenDict,
  Scope,
  apply,
  bind,
  freeze,
  init,
  lazy_init,
)
from flax.core import scope as scope_lib
from flax.core.scope import (
  filter_to_set,
  group_collections,
  in_filter,
  intersect_filters,
  subtract_filters,
  union_filters,
)

ones = jax.nn.initializers.ones
zeros = jax.nn.initializers.zeros
normal = jax.nn.initializers.normal()


def reference_key(root, *items, separator=False):
  """Flax's key derivation, written independently with hashlib."""
  if not items:
    return root
  digest = hashlib.sha1()
  for item in items:
    if separator:
      digest.update(b'\0')
    if isinstance(item, str):
      digest.update(item.encode())
    else:
      n_bytes = (item.bit_length() + 7) // 8
      digest.update(item.to_bytes(n_bytes, 'big'))
  value = int.from_bytes(digest.digest()[:4], 'big')
  return jax.random.fold_in(root, np.uint32(value))


def keys_equal(a, b):
  return np.array_equal(jax.random.key_data(a), jax.random.key_data(b))


# -- filters ----------------------------------------------------------------


def test_in_filter_kinds():
  assert in_filter(True, 'x') and not in_filter(False, 'x')
  assert in_filter('params', 'params') and not in_filter('params', 'p')
  assert in_filter(['a', 'b'], 'b') and not in_filter(('a',), 'b')
  assert not in_filter(DenyList('a'), 'a') and in_filter(DenyList('a'), 'b')
  assert not in_filter(DenyList(True), 'a')
  with pytest.raises(errors.InvalidFilterError):
    in_filter(3, 'a')


def test_filter_to_set():
  assert filter_to_set('a') == {'a'}
  assert filter_to_set(['a', 'b']) == {'a', 'b'}
  assert filter_to_set(False) == set()
  with pytest.raises(errors.InvalidFilterError):
    filter_to_set(True)
  with pytest.raises(errors.InvalidFilterError):
    filter_to_set(DenyList('a'))


@pytest.mark.parametrize(
  'a, b',
  [
    (True, 'a'),
    (False, ['a', 'b']),
    ('a', ['b', 'c']),
    (DenyList('a'), 'b'),
    (DenyList('a'), DenyList(['a', 'b'])),
    (['a', 'b'], DenyList('b')),
    (DenyList(['a', 'c']), ['a', 'b']),
  ],
)
def test_filter_algebra_matches_set_semantics(a, b):
  for col in ['a', 'b', 'c', 'd']:
    in_a, in_b = in_filter(a, col), in_filter(b, col)
    assert in_filter(union_filters(a, b), col) == (in_a or in_b)
    assert in_filter(intersect_filters(a, b), col) == (in_a and in_b)
    assert in_filter(subtract_filters(a, b), col) == (in_a and not in_b)


def test_group_collections_first_match():
  xs = {'params': {'w': 1}, 'batch_stats': {'m': 2}, 'cache': {'c': 3}}
  groups = group_collections(xs, (['params'], True, 'cache'))
  assert groups == (
    {'params': {'w': 1}},
    {'batch_stats': {'m': 2}, 'cache': {'c': 3}},
    {},
  )
  assert groups[0]['params'] is not xs['params']  # copied containers
  assert group_collections(xs, ('nothing',)) == ({},)


def test_denylist_repr_and_equality():
  assert repr(DenyList('intermediates')) == "DenyList(deny='intermediates')"
  assert DenyList('a') == DenyList('a')
  assert hash(DenyList('a')) == hash(DenyList('a'))


# -- variables and params ---------------------------------------------------


def test_param_init_and_apply_values():
  def f(scope, x):
    w = scope.param('w', normal, (x.shape[-1], 2))
    return x @ w

  x = jnp.arange(6.0).reshape(2, 3)
  key = jax.random.PRNGKey(1)
  y, variables = init(f)(key, x)
  w = jax.random.normal(reference_key(key, 1), (3, 2)) * 0.01
  np.testing.assert_allclose(variables['params']['w'], w, rtol=1e-6)
  np.testing.assert_allclose(y, x @ w, rtol=1e-6)
  np.testing.assert_allclose(apply(f)(variables, x), x @ w, rtol=1e-6)
  assert type(variables) is dict


def test_param_shape_mismatch():
  def f(scope, x):
    return x @ scope.param('kernel', ones, (x.shape[-1], 8))

  variables = init(f)(jax.random.PRNGKey(0), jnp.ones((5, 1)))[1]
  with pytest.raises(errors.ScopeParamShapeError) as e:
    apply(f)(variables, jnp.ones((5, 5)))
  # the initializer now makes (5, 8); the stored parameter is (1, 8)
  assert (
    'the given initializer is expected to generate shape (5, 8), but the '
    'existing parameter it received has shape (1, 8)'
  ) in str(e.value)
  assert '"kernel" in "/"' in str(e.value)


INIT_CALLS = []


def test_param_shape_check_runs_initializer_once_per_config():
  calls = INIT_CALLS  # a global, so the closures below hold only values
  calls.clear()

  def make_init(scale, width):
    # A fresh closure per call, as ``normal(0.02)`` in a compact method.
    def init_fn(key, shape):
      INIT_CALLS.append(shape)
      return scale * jax.random.normal(key, shape[:-1] + (width,))

    return init_fn

  def f(scope, x, width=2):
    w = scope.param('w', make_init(0.5, width), (x.shape[-1], 2))
    return x @ w

  x = jnp.ones((1, 3))
  variables = init(f)(jax.random.PRNGKey(0), x)[1]
  w = 0.5 * jax.random.normal(reference_key(jax.random.PRNGKey(0), 1), (3, 2))
  np.testing.assert_allclose(variables['params']['w'], w, rtol=1e-6)
  calls.clear()
  for i in range(3):
    y = apply(f)(variables, x + i)
    np.testing.assert_allclose(y, (x + i) @ w, rtol=1e-5)
  # The shape check traced the initializer once, not once per call.
  assert calls == [(3, 2)]
  # A closure over other values is another initializer: checked again.
  with pytest.raises(errors.ScopeParamShapeError, match=r'\(3, 5\)'):
    apply(f)(variables, x, 5)
  assert calls == [(3, 2), (3, 2)]


def test_param_not_found_and_collection_empty():
  def f(scope):
    return scope.push('sub').param('embed', ones, ())

  with pytest.raises(errors.ScopeParamNotFoundError) as e:
    apply(f)({'params': {'other': 1.0}})
  assert 'Could not find parameter named "embed" in scope "/sub"' in str(
    e.value
  )
  with pytest.raises(errors.ScopeCollectionNotFound):
    apply(f)({})


def test_variable_create_read_write():
  def f(scope):
    count = scope.variable('counter', 'count', jnp.zeros, (), jnp.int32)
    count.value += 1
    assert count.is_mutable()
    return count.value

  y, variables = init(f)(jax.random.PRNGKey(0))
  assert int(y) == 1 and int(variables['counter']['count']) == 1
  y, state = apply(f, mutable='counter')(variables)
  assert int(y) == 2 and int(state['counter']['count']) == 2


def test_variable_errors():
  def write(scope):
    v = scope.variable('state', 'n', jnp.zeros, ())
    assert not v.is_mutable()
    v.value = 3.0

  with pytest.raises(errors.ModifyScopeVariableError) as e:
    apply(write)({'state': {'n': 0.0}})
  assert 'Cannot update variable "n" in "/"' in str(e.value)
  # An empty collection is reported as such; a missing name as a missing
  # variable.
  with pytest.raises(errors.ScopeCollectionNotFound):
    apply(lambda s: s.variable('state', 'm', jnp.zeros, ()))({'state': {}})
  with pytest.raises(errors.ScopeVariableNotFoundError):
    apply(lambda s: s.variable('state', 'm', jnp.zeros, ()))(
      {'state': {'n': 1.0}}
    )
  with pytest.raises(errors.ScopeVariableNotFoundError):
    apply(lambda s: s.push('a').variable('state', 'c', jnp.zeros, ()))(
      {'state': {'b': {'c': 1.0}}}
    )
  with pytest.raises(errors.ScopeCollectionNotFound):
    apply(lambda s: s.variable('state', 'm'), mutable=True)({})


def test_put_get_has_variable():
  scope = Scope({'state': {'a': 1}}, mutable=['state'])
  assert scope.has_variable('state', 'a')
  assert not scope.has_variable('state', 'b')
  assert scope.get_variable('state', 'b', default=7) == 7
  scope.put_variable('state', 'b', 2)
  assert scope.get_variable('state', 'b') == 2
  with pytest.raises(errors.ModifyScopeVariableError):
    scope.put_variable('params', 'w', 1)
  assert scope.is_mutable_collection('state')
  assert not scope.is_mutable_collection('params')
  assert scope.is_collection_empty('params')
  assert not scope.is_collection_empty('state')


def test_child_scopes_share_parent_dicts():
  root = Scope({}, mutable=True)
  child = root.push('a').push('b')
  child.put_variable('stats', 'x', 1.0)
  assert root.variables() == {'stats': {'a': {'b': {'x': 1.0}}}}
  assert child.path == ('a', 'b') and child.path_text == '/a/b'
  assert child.root is root and child.parent.name == 'a'
  assert root.path_text == '/'
  # A mutable collection that is never written stays absent.
  assert 'params' not in root.mutable_variables()


def test_names_reservation():
  scope = Scope({}, rngs={'params': jax.random.PRNGKey(0)}, mutable=True)
  scope.param('x', ones, ())
  scope.variable('stats', 'x', jnp.zeros, ())  # other collection: allowed
  with pytest.raises(ValueError, match='Duplicate use of scope name: "x"'):
    scope.param('x', ones, ())
  with pytest.raises(ValueError):
    scope.push('x')
  scope.push('c')
  with pytest.raises(ValueError):
    scope.push('c')
  assert scope.push('c', reuse=True).path == ('c',)
  assert scope.default_name('c') == 'c0'
  scope.push(prefix='Dense_')
  assert scope.default_name('Dense_') == 'Dense_1'
  with pytest.raises(TypeError):
    scope.reserve(3)


def test_variables_frozendict_flag():
  def f(scope):
    scope.param('w', ones, (2,))

  flax.config.update('flax_return_frozendict', True)
  try:
    _, variables = init(f)(jax.random.PRNGKey(0))
    assert isinstance(variables, FrozenDict)
  finally:
    flax.config.update('flax_return_frozendict', False)
  _, variables = init(f)(jax.random.PRNGKey(0))
  assert type(variables) is dict and type(variables['params']) is dict


def test_unbox_param_keeps_box_in_variables():
  from flax.core import meta

  init_fn = meta.with_partitioning(ones, ('a', None))

  def f(scope):
    w = scope.param('w', init_fn, (2, 3))
    assert not isinstance(w, meta.Partitioned)
    boxed = scope.param('w2', init_fn, (2, 3), unbox=False)
    assert isinstance(boxed, meta.Partitioned)
    v = scope.variable('stats', 's', init_fn, jax.random.PRNGKey(0), (2,))
    v.value = v.value + 1  # stays boxed
    return w

  _, variables = init(f)(jax.random.PRNGKey(0))
  assert isinstance(variables['params']['w'], meta.Partitioned)
  assert variables['params']['w'].names == ('a', None)
  stats = variables['stats']['s']
  assert isinstance(stats, meta.Partitioned)
  np.testing.assert_allclose(stats.value, 2.0)


# -- rngs ---------------------------------------------------------------------


def test_make_rng_matches_reference_derivation():
  key = jax.random.PRNGKey(42)
  scope = Scope({}, rngs={'params': key, 'dropout': jax.random.PRNGKey(3)})
  assert keys_equal(scope.make_rng('params'), reference_key(key, 1))
  assert keys_equal(scope.make_rng('params'), reference_key(key, 2))
  child = scope.push('Dense_0')
  assert keys_equal(child.make_rng(), reference_key(key, 'Dense_0', 1))
  grand = child.push('inner')
  assert keys_equal(
    grand.make_rng('params'), reference_key(key, 'Dense_0', 'inner', 1)
  )
  assert keys_equal(
    child.make_rng('dropout'),
    reference_key(jax.random.PRNGKey(3), 'Dense_0', 1),
  )
  # Re-entering a child continues its counters.
  again = scope.push('Dense_0', reuse=True)
  assert keys_equal(again.make_rng(), reference_key(key, 'Dense_0', 2))
  # Counters above 255 use more bytes.
  scope.rng_counters['params'] = 299
  assert keys_equal(scope.make_rng(), reference_key(key, 300))


def test_make_rng_separator_flag():
  key = jax.random.PRNGKey(0)
  flax.config.update('flax_fix_rng_separator', True)
  try:
    scope = Scope({}, rngs={'params': key}).push('ab')
    expected = reference_key(key, 'ab', 1, separator=True)
    assert keys_equal(scope.make_rng(), expected)
  finally:
    flax.config.update('flax_fix_rng_separator', False)
  assert not keys_equal(expected, reference_key(key, 'ab', 1))


def test_make_rng_typed_keys_and_fallback():
  key = jax.random.key(5)
  scope = Scope({}, rngs={'params': key})
  out = scope.make_rng('dropout')  # falls back to params
  expected = reference_key(key, 1)
  assert jax.dtypes.issubdtype(out.dtype, jax.dtypes.prng_key)
  assert keys_equal(out, expected)
  assert scope.has_rng('params') and not scope.has_rng('dropout')
  with pytest.raises(errors.InvalidRngError, match='needs PRNG for "noise"'):
    Scope({}, rngs={'other': key}, name='mod').make_rng('noise')


def test_param_draws_one_key_per_call_in_order():
  key = jax.random.PRNGKey(0)

  def f(scope):
    a = scope.param('a', normal, (2,))
    b = scope.param('b', normal, (2,))
    return a, b

  (a, b), _ = init(f)(key)
  np.testing.assert_array_equal(
    a, jax.random.normal(reference_key(key, 1), (2,)) * 0.01
  )
  np.testing.assert_array_equal(
    b, jax.random.normal(reference_key(key, 2), (2,)) * 0.01
  )


# -- init / apply / bind validation ----------------------------------------


def test_apply_rejects_bad_variables():
  f = apply(lambda scope: None)
  with pytest.raises(errors.ApplyScopeInvalidVariablesTypeError):
    f({'params': jnp.ones(3)})
  with pytest.raises(errors.ApplyScopeInvalidVariablesTypeError):
    f([1, 2])
  with pytest.raises(errors.ApplyScopeInvalidVariablesStructureError):
    f({'params': {'params': {'w': 1.0}}})
  # As Flax 0.12.8: bad rngs are a ValueError in apply and init (and an
  # InvalidRngError in bind); a bare key means {'params': key}.
  for bad in ({'params': 3}, 3):
    with pytest.raises(ValueError, match='passed to an apply function'):
      f({}, rngs=bad)
    with pytest.raises(ValueError, match='First argument passed to an init'):
      init(lambda scope: None)(bad)
  with pytest.raises(errors.InvalidRngError):
    bind({}, rngs={'params': 3})
  key = jax.random.key(0)
  drawn = apply(lambda scope: scope.make_rng('params'))({}, rngs=key)
  assert drawn.dtype == key.dtype


def test_apply_accepts_frozen_variables_and_rng_dict():
  def f(scope):
    return scope.param('w', ones, ()) + jax.random.uniform(
      scope.make_rng('noise')
    )

  rngs = {'params': jax.random.PRNGKey(0), 'noise': jax.random.PRNGKey(1)}
  y, variables = init(f)(rngs)
  y2 = apply(f)(freeze(variables), rngs={'noise': jax.random.PRNGKey(1)})
  np.testing.assert_allclose(y, y2)


def test_init_flags_and_mutability():
  seen = {}

  def f(scope):
    seen['init'] = scope.get_flag('initializing', False)
    seen['mutable'] = scope.is_mutable_collection('intermediates')

  init(f, mutable=DenyList('intermediates'))(jax.random.PRNGKey(0))
  assert seen == {'init': True, 'mutable': False}
  apply(f)({})
  assert seen == {'init': False, 'mutable': False}


def test_apply_returns_only_mutable_collections():
  def f(scope):
    scope.variable('a', 'x', jnp.zeros, ()).value += 1
    return scope.param('w', ones, ())

  variables = init(f)(jax.random.PRNGKey(0))[1]
  y, mutated = apply(f, mutable=['a'])(variables)
  assert set(mutated) == {'a'} and float(mutated['a']['x']) == 2.0
  # The input is not changed.
  assert float(variables['a']['x']) == 1.0


def test_bind_and_temporary():
  scope = bind({'params': {'w': jnp.ones(2)}}, mutable=False)
  np.testing.assert_array_equal(scope.param('w', ones, (2,)), jnp.ones(2))
  with pytest.raises(errors.ApplyScopeInvalidVariablesTypeError):
    bind({'params': 1})
  with Scope({}, rngs={'params': jax.random.PRNGKey(0)}).temporary() as s:
    s.make_rng()
  with pytest.raises(errors.InvalidScopeError):
    s.make_rng()
  with pytest.raises(errors.InvalidScopeError):
    s.variables()


def test_rewound_scope():
  scope = Scope({}, rngs={'params': jax.random.PRNGKey(0)}, mutable=True)
  scope.param('w', ones, ())
  k1 = scope.make_rng()
  fresh = scope.rewound()
  fresh.param('w', ones, ())  # reservations reset, value reused
  assert not keys_equal(fresh.make_rng(), k1)  # counters shared
  rewound = scope.rewound(rewind_rngs=True)
  assert keys_equal(rewound.make_rng(), reference_key(jax.random.PRNGKey(0), 1))


def test_jax_transform_across_scope_raises():
  scope = Scope({}, rngs={'params': jax.random.PRNGKey(0)})
  with pytest.raises(errors.JaxTransformError):
    jax.jit(lambda x: scope.make_rng() + x)(1)


def test_init_apply_under_jit_and_grad():
  def f(scope, x):
    return jnp.sum(x * scope.param('w', ones, x.shape))

  x = jnp.arange(3.0)
  variables = jax.jit(init(f))(jax.random.PRNGKey(0), x)[1]
  grads = jax.grad(lambda v: apply(f)(v, x))(variables)
  np.testing.assert_allclose(grads['params']['w'], x)


def test_lazy_init():
  def f(scope, x):
    w = scope.param('w', ones, (x.shape[-1], 2))
    return x @ w

  spec = jax.ShapeDtypeStruct((4, 3), jnp.float32)
  variables = lazy_init(f)(jax.random.PRNGKey(0), spec)
  np.testing.assert_array_equal(variables['params']['w'], jnp.ones((3, 2)))

  def g(scope, x):
    return scope.variable('state', 'sum', lambda: jnp.sum(x))

  with pytest.raises(errors.LazyInitError):
    lazy_init(g)(jax.random.PRNGKey(0), spec)


def test_variable_repr_and_module_aliases():
  scope = Scope({}, mutable=True)
  v = scope.push('m').variable('c', 'n', jnp.zeros, ())
  assert repr(v) == "Variable(collection='c', name='n', scope='/m')"
  from flax.core import variables as variables_lib

  assert variables_lib.Variable is scope_lib.Variable
  assert flax.core.Variable is scope_lib.Variable


def test_private_is_valid_rng():
  from flax.core import scope as scope_lib

  assert scope_lib._is_valid_rng(jax.random.key(0))
  assert scope_lib._is_valid_rng(jax.random.PRNGKey(0))
  assert not scope_lib._is_valid_rng(jnp.ones(3))
  assert not scope_lib._is_valid_rng(3)
  assert not scope_lib._is_valid_rng(jnp.ones(2))
  assert not scope_lib._is_valid_rng(jax.random.split(jax.random.key(0)))
