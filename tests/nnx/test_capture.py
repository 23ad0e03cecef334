"""nnx.capture: what Module.sow / Module.perturb record during a call."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import nnx


class Sub(nnx.Module):
  def __call__(self, x):
    self.sow(nnx.Intermediate, 'h', x * 3)
    return x


class Model(nnx.Module):
  def __init__(self):
    self.sub = Sub()

  def __call__(self, x):
    self.sow(nnx.Intermediate, 'i', x)
    self.sow(nnx.Intermediate, 'i', x + 1)
    self.sow(
      nnx.Intermediate, 's', x, reduce_fn=lambda a, b: a + b, init_fn=lambda: 0
    )
    x = self.sub(x)
    return self.perturb('p', x)


def _values(state):
  return jax.tree.map(lambda a: np.asarray(a).tolist(), nnx.to_pure_dict(state))


@pytest.fixture(autouse=True)
def _no_warnings():
  # inside a capture holding the Modules nothing is deprecated
  with warnings.catch_warnings():
    warnings.simplefilter('error')
    yield


def test_one_state_per_type_and_the_module_left_alone():
  m = Model()
  out, inter = nnx.capture(m, nnx.Intermediate)(jnp.ones(2))
  np.testing.assert_array_equal(out, np.ones(2))
  assert _values(inter) == {
    'i': ([1.0, 1.0], [2.0, 2.0]),
    's': [1.0, 1.0],
    'sub': {'h': ([3.0, 3.0],)},
  }
  # no Perturbation asked for: perturb leaves the value as it is
  assert 'p' not in inter
  assert not hasattr(m, 'i') and not hasattr(m.sub, 'h')
  assert not hasattr(m, 'p')


def test_several_types_first_match_wins():
  m = Model()
  out, inter, perts = nnx.capture(m, nnx.Intermediate, nnx.Perturbation)(
    jnp.ones(2)
  )
  # a Perturbation is an Intermediate: it goes to the first type
  assert sorted(inter) == ['i', 'p', 's', 'sub'] and len(perts) == 0
  _, perts = nnx.capture(m, nnx.Perturbation)(jnp.ones(2))
  assert _values(perts) == {'p': [0.0, 0.0]}
  _, first, second = nnx.capture(m, nnx.Intermediate, nnx.Intermediate)(
    jnp.ones(2)
  )
  assert 'i' in first and len(second) == 0


def test_without_types_returns_the_output_only():
  assert nnx.capture(Model())(jnp.ones(2)).tolist() == [1.0, 1.0]


def test_root_is_the_first_positional_argument():
  class K(nnx.Module):
    def __init__(self, k):
      self.k = k

    def __call__(self, x):
      self.sow(nnx.Intermediate, 'i', x * self.k)
      return x

  m1, m2 = K(1.0), K(10.0)
  _, inter = nnx.capture(lambda ms, x: ms[0](x) + ms[1](x), nnx.Intermediate)(
    [m1, m2], jnp.ones(2)
  )
  assert _values(inter) == {0: {'i': ([1.0, 1.0],)}, 1: {'i': ([10.0, 10.0],)}}
  # only the first argument's Modules are captured; others keep the
  # deprecated attribute behaviour
  with pytest.warns(DeprecationWarning, match='Module.sow'):
    _, inter = nnx.capture(lambda x, m: m(x), nnx.Intermediate)(jnp.ones(2), m1)
  assert len(inter) == 0 and len(m1.i.get_value()) == 1

  # a Module reachable twice is captured under its first path
  class Outer(nnx.Module):
    def __init__(self):
      self.a = K(1.0)
      self.b = self.a

    def __call__(self, x):
      return self.b(x)

  _, inter = nnx.capture(Outer(), nnx.Intermediate)(jnp.ones(2))
  assert list(inter) == ['a']


def test_init_seeds_sows_and_perturbations():
  m = Model()
  init = nnx.State({'i': nnx.Intermediate((jnp.zeros(2),))})
  _, inter = nnx.capture(m, nnx.Intermediate, init=init)(jnp.ones(2))
  assert _values(inter)['i'] == ([0.0, 0.0], [1.0, 1.0], [2.0, 2.0])
  perts = nnx.State({'p': nnx.Perturbation(jnp.full(2, 5.0))})
  out, got = nnx.capture(m, nnx.Perturbation, init=perts)(jnp.ones(2))
  assert out.tolist() == [6.0, 6.0] and _values(got) == {'p': [5.0, 5.0]}


def test_gradient_wrt_perturbations():
  m = Model()
  _, perts = nnx.capture(m, nnx.Perturbation)(jnp.ones(2))

  def loss(p, m, x):
    out, _ = nnx.capture(m, nnx.Perturbation, init=p)(x)
    return (out * out).sum()

  grads = nnx.grad(loss)(perts, m, jnp.full(2, 2.0))
  assert _values(grads) == {'p': [4.0, 4.0]}


def test_method_outputs_when_their_type_is_asked_for():
  m = Model()
  _, inter = nnx.capture(m, nnx.Intermediate, method_outputs=nnx.Intermediate)(
    jnp.ones(2)
  )
  assert list(inter) == ['__call__', 'i', 's', 'sub']
  assert sorted(inter['sub']) == ['__call__', 'h']
  assert type(m) is Model
  r = nnx.capture(m, nnx.Perturbation, method_outputs=nnx.Intermediate)(
    jnp.ones(2)
  )
  assert len(r) == 2 and list(r[1]) == ['p']


def test_nested_capture_takes_the_modules():
  m = Model()

  def nest(m, x):
    y, inner = nnx.capture(m, nnx.Intermediate)(x)
    assert 'i' in inner
    m(x)  # no longer held by the outer capture
    return y

  with pytest.warns(DeprecationWarning):
    _, outer = nnx.capture(nest, nnx.Intermediate)(m, jnp.ones(2))
  assert len(outer) == 0


def test_inside_jit_and_decorator_form():
  m = Model()

  @nnx.jit
  def f(m, x):
    return nnx.capture(m, nnx.Intermediate)(x)

  _, inter = f(m, jnp.ones(2))
  assert sorted(inter) == ['i', 's', 'sub']
  _, inter = nnx.capture(nnx.Intermediate)(lambda m, x: m(x))(m, jnp.ones(2))
  assert sorted(inter) == ['i', 's', 'sub']


def test_through_a_jitted_function(jit_path):
  m = Model()
  forward = nnx.jit(lambda m, x: m(x))
  out, inter = nnx.capture(forward, nnx.Intermediate)(m, jnp.ones(2))
  np.testing.assert_array_equal(out, np.ones(2))
  assert _values(inter) == {
    'i': ([1.0, 1.0], [2.0, 2.0]),
    's': [1.0, 1.0],
    'sub': {'h': ([3.0, 3.0],)},
  }
  assert not hasattr(m, 'i') and not hasattr(m, '__captures__')
  # a second call with the same structure reuses the compiled function
  _, again = nnx.capture(forward, nnx.Intermediate)(m, jnp.full(2, 2.0))
  assert _values(again)['i'] == ([2.0, 2.0], [3.0, 3.0])
