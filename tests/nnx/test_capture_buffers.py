"""nnx.capture as Flax 0.12.8: the ``__captures__`` buffers a Module holds
while a capture runs, gradients w.r.t. perturbations given as ``init``,
state functions seeing the buffers, and method_outputs."""

import pathlib
import sys
import warnings

import flax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import nnx

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import stand_in_layers  # noqa: E402


@pytest.fixture(autouse=True)
def _no_warnings():
  # inside a capture holding the Modules nothing is deprecated
  with warnings.catch_warnings():
    warnings.simplefilter('error')
    yield


class Probe(nnx.Module):
  """Records what ``__captures__`` holds when called."""

  def __init__(self):
    self.w = nnx.Param(jnp.ones(1))
    self.seen = nnx.static([])

  def __call__(self, x):
    self.seen.append(self.__captures__)
    x = self.perturb('p', x)
    self.sow(nnx.Intermediate, 'i', x)
    return x


def test_captures_is_a_tuple_of_one_buffer_per_type():
  m = Probe()
  nnx.capture(m, nnx.Perturbation)(jnp.ones(1))
  (buffers,) = m.seen
  assert type(buffers) is tuple and len(buffers) == 1
  assert type(buffers[0]) is nnx.Perturbation
  # the buffer is the capture's: it holds what was recorded afterwards
  assert list(buffers[0].get_value()) == ['p']
  assert not hasattr(m, '__captures__')

  m = Probe()
  nnx.capture(m, nnx.Perturbation, nnx.Intermediate, nnx.Perturbation)(
    jnp.ones(1)
  )
  (buffers,) = m.seen
  assert [type(b) for b in buffers] == [nnx.Perturbation, nnx.Intermediate]
  np.testing.assert_array_equal(buffers[0].get_value()['p'], [0.0])
  np.testing.assert_array_equal(buffers[1].get_value()['i'][0], [1.0])

  m = Probe()
  nnx.capture(m)(jnp.ones(1))
  assert m.seen == [()]


def test_captures_repr_while_running():
  class M(nnx.Module):
    def __call__(self, x):
      self.text = nnx.static(repr(self.__captures__))
      return x

  m = M()
  nnx.capture(m, nnx.Perturbation, nnx.Intermediate)(jnp.ones(1))
  assert m.text == (
    '(Perturbation(\n  value={}\n), Intermediate(\n  value={}\n))'
  )


def test_init_types_get_buffers_of_their_own():
  m = Probe()
  _, perts = nnx.capture(m, nnx.Perturbation)(jnp.ones(1))
  perts = jax.tree.map(lambda a: a + 5, perts)
  m.seen.clear()
  out, inter = nnx.capture(m, nnx.Intermediate, init=perts)(jnp.ones(1))
  (buffers,) = m.seen
  assert [type(b) for b in buffers] == [nnx.Intermediate, nnx.Perturbation]
  np.testing.assert_array_equal(out, [6.0])
  # only the records of the types asked for come back
  assert list(inter) == ['i']
  # values that are no Variables, or at paths of no Module, are ignored
  m.seen.clear()
  nnx.capture(m, init={'p': jnp.ones(1), 'x': {'p': nnx.Perturbation(1.0)}})(
    jnp.ones(1)
  )
  assert m.seen == [()]


def test_records_go_to_the_buffer_of_exactly_their_type():
  class MyIntermediate(nnx.Intermediate):
    pass

  class M(nnx.Module):
    def __call__(self, x):
      self.returned = nnx.static(
        [
          self.sow(nnx.Intermediate, 'i', x),
          self.sow(MyIntermediate, 'mine', x),
          self.sow(nnx.Param, 'param', x),
        ]
      )
      return self.perturb('p', x)

  m = M()
  out, inter = nnx.capture(m, nnx.Intermediate)(jnp.ones(1))
  assert m.returned == [True, False, False]
  # no Perturbation buffer: perturb leaves the value alone
  assert list(inter) == ['i'] and out.tolist() == [1.0]
  _, mine = nnx.capture(m, MyIntermediate)(jnp.ones(1))
  assert m.returned == [False, True, False] and list(mine) == ['mine']
  # a record is returned in the State of the first type it is one of
  _, inter, perts = nnx.capture(m, nnx.Intermediate, nnx.Perturbation)(
    jnp.ones(1)
  )
  assert list(inter) == ['i', 'p'] and len(perts) == 0


def _issue_model():
  class Model(nnx.Module):
    def __init__(self, rngs):
      self.linear1 = stand_in_layers.Linear(2, 3, rngs=rngs)
      self.linear2 = stand_in_layers.Linear(3, 4, rngs=rngs)

    def __call__(self, x):
      x = self.perturb('xgrad', jax.nn.gelu(self.linear1(x)))
      return self.linear2(x)

  rngs = nnx.Rngs(0)
  model = Model(rngs)
  x, y = rngs.uniform((1, 2)), rngs.uniform((1, 4))
  return model, x, y


# Flax 0.12.8's gradient of the loss w.r.t. the perturbed value.
_XGRAD = [[-0.43014595, -0.14356603, 0.2935633]]


@pytest.mark.parametrize('jit', [False, True])
def test_gradient_wrt_perturbations_given_as_init(jit):
  model, x, y = _issue_model()
  _, perturbations = nnx.capture(model, nnx.Perturbation)(x)

  def loss(model, perturbations, x, y):
    return nnx.capture(lambda m: jnp.mean((m(x) - y) ** 2), init=perturbations)(
      model
    )

  loss_grad = nnx.value_and_grad(loss, argnums=(0, 1))
  if jit:
    loss_grad = nnx.jit(loss_grad)
  value, (_, grads) = loss_grad(model, perturbations, x, y)
  np.testing.assert_allclose(float(value), 0.7326511144638062, rtol=1e-6)
  np.testing.assert_allclose(grads['xgrad'].get_value(), _XGRAD, rtol=1e-5)

  # nnx.grad with has_aux, the intermediates as the auxiliary output
  def loss_aux(model, perturbations, x, y):
    out, inter = nnx.capture(model, nnx.Intermediate, init=perturbations)(x)
    return jnp.mean((out - y) ** 2), inter

  (_, grads), inter = nnx.grad(loss_aux, argnums=(0, 1), has_aux=True)(
    model, perturbations, x, y
  )
  np.testing.assert_allclose(grads['xgrad'].get_value(), _XGRAD, rtol=1e-5)
  # the perturbations of init are not among the records asked for
  assert len(inter) == 0


@pytest.mark.parametrize('graph', [True, False])
def test_perturbation_gradients_of_nested_modules(graph):
  class Foo(nnx.Module):
    @nnx.jit
    def __call__(self, x):
      x = self.perturb('grad_of_x', x)
      self.sow(nnx.Intermediate, 'y', 3 * x)
      return 3 * x

  class Bar(nnx.Module):
    def __init__(self):
      self.foos = nnx.data([Foo() for _ in range(3)])

    def __call__(self, x):
      for foo in self.foos:
        x = foo(x)
      return x

  old = flax.config._read('nnx_graph_mode')
  flax.config.update('nnx_graph_mode', graph)
  try:
    model = Bar()
    _, perturbations = nnx.capture(model, nnx.Perturbation)(1.0)

    @nnx.jit
    def step(model, perturbations, x):
      def loss(model, perturbations, x):
        return nnx.capture(model, nnx.Intermediate, init=perturbations)(x)

      (_, grads), sowed = nnx.grad(loss, argnums=(0, 1), has_aux=True)(
        model, perturbations, x
      )
      return nnx.merge_state(grads, sowed)

    got = step(model, perturbations, 1.0)
  finally:
    flax.config.update('nnx_graph_mode', old)
  for i in range(3):
    assert got['foos'][i]['grad_of_x'][...] == 3 ** (3 - i)
    assert got['foos'][i]['y'].get_value()[0] == 3 ** (i + 1)


class Counter(nnx.Module):
  def __init__(self):
    self.count = nnx.BatchStat(jnp.array(0.0))
    self.w = nnx.Param(jnp.array(2.0))

  def step(self, c, x):
    self.count[...] += 1
    x = self.perturb('px', x)
    self.sow(nnx.Intermediate, 'h', c * self.w + x + self.count[...])
    return c + x, c * 2


@pytest.mark.parametrize('reverse', [False, True])
def test_scan_stacks_records_and_carries_the_rest(reverse):
  def call(m, c, xs):
    axes = nnx.StateAxes({nnx.Intermediate: 0, ...: nnx.Carry})
    return nnx.scan(
      Counter.step,
      in_axes=(axes, nnx.Carry, 0),
      out_axes=(nnx.Carry, 0),
      reverse=reverse,
    )(m, c, xs)

  m = Counter()
  (c, ys), perts, inter = nnx.capture(call, nnx.Perturbation, nnx.Intermediate)(
    m, jnp.array(1.0), jnp.arange(4.0)
  )
  assert float(c) == 7.0 and float(m.count[...]) == 4.0
  expected = [18.0, 16.0, 12.0, 6.0] if reverse else [3.0, 5.0, 9.0, 15.0]
  assert inter['h'].get_value()[0].tolist() == expected
  assert perts['px'][...].shape == (4,)

  def loss(m, p, c, xs):
    c, ys = nnx.capture(call, init=p)(m, c, xs)
    return c + ys.sum()

  grads = nnx.grad(loss, argnums=1)(m, perts, jnp.array(1.0), jnp.arange(4.0))
  expected = [1.0, 3.0, 5.0, 7.0] if reverse else [7.0, 5.0, 3.0, 1.0]
  assert grads['px'][...].tolist() == expected


def test_perturb_inside_vmap_and_jax_grad_on_split_state():
  class Foo(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.arange(4.0))

    def __call__(self, x):
      x = self.perturb('px', x)
      y = jnp.dot(x, self.w)
      self.sow(nnx.Intermediate, 'y', y)
      return y

  def fwd(m, x):
    axes = nnx.StateAxes({nnx.Intermediate: 0, ...: None})
    return nnx.vmap(lambda m, x: m(x), in_axes=(axes, 0))(m, x)

  m, x = Foo(), jnp.ones((3, 4))
  _, perts = nnx.capture(fwd, nnx.Perturbation)(m, x)
  assert perts['px'][...].shape == (3, 4)
  grads = nnx.grad(lambda p, m: nnx.capture(fwd, init=p)(m, x).sum())(perts, m)
  np.testing.assert_array_equal(
    grads['px'][...], np.tile(np.arange(4.0), (3, 1))
  )

  graphdef, params = nnx.split(m)

  def loss(params, p, x):
    return nnx.capture(nnx.merge(graphdef, params), init=p)(x)

  _, perts = nnx.capture(m, nnx.Perturbation)(jnp.ones(4))
  dparams, dperts = jax.jit(jax.grad(loss, argnums=(0, 1)))(
    params, perts, jnp.ones(4)
  )
  assert dperts['px'][...].tolist() == [0.0, 1.0, 2.0, 3.0]
  assert dparams['w'][...].tolist() == [1.0, 1.0, 1.0, 1.0]


class Block(nnx.Module):
  def __init__(self, din, dout, rngs):
    self.linear = stand_in_layers.Linear(din, dout, rngs=rngs)
    self.bn = stand_in_layers.BatchNorm(dout, rngs=rngs)

  def __call__(self, x):
    x = self.linear(x)
    self.sow(nnx.Intermediate, 'features', x)
    x = self.perturb('grad_of_features', x)
    return jax.nn.relu(self.bn(x))


class Net(nnx.Module):
  def __init__(self, rngs):
    self.block1 = Block(2, 4, rngs)
    self.block2 = Block(4, 1, rngs)

  def __call__(self, x):
    y = self.block2(self.block1(x))
    self.sow(nnx.Intermediate, 'out_mean', y.mean())
    return y


def test_sow_and_capture_in_a_train_step():
  rngs = nnx.Rngs(0)
  model = Net(rngs)
  x, y = rngs.normal((8, 2)), rngs.normal((8, 1))

  @nnx.jit
  def train_step(model, x, y):
    def loss_fn(model):
      y_pred, intms = nnx.capture(model, nnx.Intermediate)(x)
      return jnp.mean((y_pred - y) ** 2), intms

    (loss, intms), grads = nnx.value_and_grad(loss_fn, has_aux=True)(model)
    # plain SGD with learning rate 0.1 (optax.sgd(0.1)'s update)
    params = nnx.state(model, nnx.Param)
    nnx.update(model, jax.tree.map(lambda p, g: p + -0.1 * g, params, grads))
    return loss, intms

  for _ in range(3):
    loss, intms = train_step(model, x, y)
  # Flax 0.12.8's numbers
  np.testing.assert_allclose(float(loss), 0.66839683, rtol=1e-5)
  np.testing.assert_allclose(
    float(intms['out_mean'].get_value()[0]), 0.36976212, rtol=1e-5
  )
  assert intms['block1']['features'].get_value()[0].shape == (8, 4)
  # nothing of the capture stays in the model
  assert len(nnx.state(model, nnx.Intermediate)) == 0
  _, inter, rest = nnx.split(model, nnx.Intermediate, ...)
  assert len(inter) == 0 and len(jax.tree.leaves(rest)) == 12
  assert len(nnx.pop(model, nnx.Intermediate)) == 0


def test_state_functions_see_the_buffers_during_a_capture():
  model = Net(nnx.Rngs(0))
  x = jnp.ones((8, 2))
  seen = {}

  def functional(model, x):
    graphdef, params, inter, rest = nnx.split(
      model, nnx.Param, nnx.Intermediate, ...
    )
    seen['paths'] = sorted(map(str, nnx.to_flat_state(inter).paths))
    with pytest.raises(ValueError, match='Non-exhaustive filters'):
      nnx.split(model, nnx.Param, nnx.BatchStat)

    @jax.jit
    def f(params, inter, rest, x):
      m = nnx.merge(graphdef, params, inter, rest)
      y = m(x)
      return y, nnx.state(m, nnx.Intermediate)

    y, inter = f(params, inter, rest, x)
    nnx.update(model, inter)
    return y

  _, inter, perts = nnx.capture(functional, nnx.Intermediate, nnx.Perturbation)(
    model, x
  )
  # a buffer per Module and type, at ('__captures__', k)
  assert "('__captures__', 0)" in seen['paths']
  assert "('block1', 'bn', '__captures__', 1)" in seen['paths']
  assert len(seen['paths']) == 14
  # the records came back through nnx.update; Perturbations are
  # Intermediates, so they are in the first State
  assert sorted(inter['block1']) == ['features', 'grad_of_features']
  assert len(perts) == 0
  assert not hasattr(model.block1, '__captures__')


def test_a_call_that_raises_leaves_the_buffers():
  class M(nnx.Module):
    def __call__(self, x):
      raise ValueError('boom')

  m = M()
  with pytest.raises(ValueError, match='boom'):
    nnx.capture(m, nnx.Intermediate)(1.0)
  assert type(m.__captures__) is tuple


def test_method_outputs_sow_every_public_method_of_the_classes():
  class Inner(nnx.Module):
    def __call__(self, x):
      return self.process(x) + self._private(x)

    def process(self, x):
      return x * 2

    def _private(self, x):
      return x * 3

  class Outer(nnx.Module):
    def __init__(self):
      self.inner = Inner()

    def __call__(self, x):
      return self.run(self.inner(x)) + self.run(x)

    def run(self, y):
      return y + 1

  m = Outer()
  call = Inner.__call__
  _, inter = nnx.capture(m, nnx.Intermediate, method_outputs=nnx.Intermediate)(
    jnp.ones(1)
  )
  assert sorted(inter) == ['__call__', 'inner', 'run']
  assert sorted(inter['inner']) == ['__call__', 'process']
  assert len(inter['run'].get_value()) == 2
  assert Inner.__call__ is call and type(m.inner) is Inner
  # a method given as the function runs as it was when given
  _, inter = nnx.capture(
    m.run, nnx.Intermediate, method_outputs=nnx.Intermediate
  )(jnp.ones(1))
  assert len(inter) == 0
  # outputs go to the capture only if it asks for their type
  _, inter = nnx.capture(m, nnx.Intermediate, method_outputs=nnx.Perturbation)(
    jnp.ones(1)
  )
  assert len(inter) == 0

  class Raises(nnx.Module):
    def __call__(self, x):
      raise ValueError('boom')

  with pytest.raises(ValueError):
    nnx.capture(Raises(), nnx.Intermediate, method_outputs=nnx.Intermediate)(1)
  assert Raises.__dict__['__call__'].__name__ == '__call__'
  assert not hasattr(Raises.__dict__['__call__'], '__wrapped__')


def test_config_read():
  assert flax.config._read('nnx_graph_mode') is flax.config.nnx_graph_mode
  with pytest.raises(LookupError, match='Unrecognized config option'):
    flax.config._read('flax_graph_mode')


def test_sow_outside_a_capture_checks_any_attribute_of_the_name():
  class Inner(nnx.Module):
    y = 10

    def __call__(self, x):
      return x * 2

  other = Inner()

  class Outer(nnx.Module):
    def __init__(self):
      self.inner = Inner()

    def __call__(self, x):
      return self.inner(x) + other(x)

  # the classes of the captured Modules sow their outputs: an instance the
  # capture does not hold sows outside it, into its method's name
  with pytest.raises(ValueError, match="Expected '__call__' to be a Variable"):
    nnx.capture(Outer(), nnx.Intermediate, method_outputs=nnx.Intermediate)(1.0)
  with pytest.raises(
    ValueError, match="Expected 'y' to be a Variable, got int"
  ):
    Inner().sow(nnx.Intermediate, 'y', 1.0)
