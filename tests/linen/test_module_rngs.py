"""nn.transforms.fork_rngs and nn.transforms.clean_clone."""

import jax
import jax.numpy as jnp
import pytest
from flax import linen as nn


class Dense(nn.Module):
  """A dense layer of this file (tests-linen installs no flax-layers)."""

  features: int

  @nn.compact
  def __call__(self, x):
    kernel = self.param(
      'kernel', jax.nn.initializers.lecun_normal(), (x.shape[-1], self.features)
    )
    bias = self.param('bias', jax.nn.initializers.zeros, (self.features,))
    return x @ kernel + bias.reshape((1,) * (x.ndim - 1) + (-1,))


def _data(key):
  return jax.random.key_data(key).tolist()


class _Draws(nn.Module):
  fork: bool

  @nn.compact
  def __call__(self):
    out = [_data(self.make_rng('params'))]
    if self.fork:
      with nn.transforms.fork_rngs(self) as value:
        assert value is None
        out += [_data(self.make_rng('params')), _data(self.make_rng('params'))]
    else:
      out += [_data(self.make_rng('params')), _data(self.make_rng('params'))]
    out.append(_data(self.make_rng('params')))
    self.sow('intermediates', 'keys', out)
    self.sow('intermediates', 'counter', self.scope.rng_counters['params'])
    return None


def _keys(fork):
  _, state = _Draws(fork).init_with_output(
    {'params': jax.random.key(0)}, mutable=['intermediates']
  )
  inter = state['intermediates']
  return inter['keys'][0], inter['counter'][0]


def test_fork_rngs_keys_match_reference_values():
  # Values settled against Flax 0.12.8.
  plain, _ = _keys(False)
  assert plain == [
    [1428664606, 3351135085],
    [3456700291, 3873160899],
    [2411773124, 4124888837],
    [4278980902, 1922873063],
  ]
  forked, counter = _keys(True)
  assert forked == [
    [1428664606, 3351135085],
    [3189577535, 412187108],
    [1048345334, 846654200],
    [842396320, 2276769525],
  ]
  assert counter == 5


def test_fork_rngs_restores_roots_and_keeps_counters():
  class M(nn.Module):
    @nn.compact
    def __call__(self):
      scope = self.scope
      before = dict(scope.rngs)
      self.make_rng('params')
      with nn.transforms.fork_rngs(self):
        assert scope.rngs['params'] is not before['params']
        assert scope.rng_counters == {'params': 2, 'dropout': 1}
        self.make_rng('params')
      assert scope.rngs == before
      assert scope.rng_counters == {'params': 3, 'dropout': 1}

  M().init({'params': jax.random.key(0), 'dropout': jax.random.key(1)})


def test_fork_rngs_needs_a_bound_module():
  with pytest.raises(ValueError, match='needs a bound Module'):
    with nn.transforms.fork_rngs(Dense(2)):
      pass


def test_clean_clone():
  dense = Dense(3)
  variables = dense.init(jax.random.key(0), jnp.ones((1, 2)))
  bound = dense.bind(variables)
  clone = nn.transforms.clean_clone(bound)
  assert clone is not bound and clone.scope is None and bound.scope is not None
  assert clone.features == 3
  values = [1, 2]
  assert nn.transforms.clean_clone(values) is values
  assert nn.transforms.clean_clone(3) == 3
