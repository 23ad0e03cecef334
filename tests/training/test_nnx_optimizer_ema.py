"""nnx.Optimizer (wrt, graph, OptState types), nnx.EMA, module paths and an
MNIST-style training loop, with values of Flax 0.12.8."""

import numpy as np
import optax
import pytest

import jax
import jax.numpy as jnp
from flax import nnx


class Dense(nnx.Module):
  def __init__(self, din, dout):
    w = jnp.arange(din * dout, dtype=jnp.float32).reshape(din, dout)
    self.w = nnx.Param(w / 10 - 0.3)
    self.b = nnx.Param(jnp.zeros((dout,)))
    self.s = nnx.BatchStat(jnp.ones((dout,)))

  def __call__(self, x):
    return x @ self.w[...] + self.b[...][None, :] * self.s[...][None, :]


X = jnp.linspace(-1, 1, 12).reshape(4, 3)
Y = jnp.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])


def loss_fn(m):
  return jnp.mean((m(X) - Y) ** 2)


def _is_var(x):
  return isinstance(x, nnx.Variable)


def _train(tx, wrt, steps=5):
  m = Dense(3, 2)
  opt = nnx.Optimizer(m, tx, wrt=wrt)

  @nnx.jit
  def step(m, opt):
    diff = nnx.DiffState(0, wrt)
    loss, grads = nnx.value_and_grad(loss_fn, argnums=diff)(m)
    opt.update(m, grads)
    return loss

  losses = [float(step(m, opt)) for _ in range(steps)]
  return m, opt, losses


def test_adam_five_steps():
  m, opt, losses = _train(optax.adam(0.1), nnx.Param)
  np.testing.assert_allclose(
    losses, [0.408388, 0.310762, 0.250899, 0.227024, 0.230049], atol=1e-6
  )
  np.testing.assert_allclose(
    m.w[...],
    [[-0.68212, -0.5955], [-0.192552, -0.011317], [0.541526, 0.631976]],
    atol=1e-6,
  )
  np.testing.assert_allclose(m.b[...], [0.424614, 0.424655], atol=1e-6)
  np.testing.assert_array_equal(m.s[...], [1.0, 1.0])
  assert int(opt.step[...]) == 5
  types = jax.tree.map(
    lambda v: type(v).__name__, nnx.state(opt.opt_state), is_leaf=_is_var
  )
  assert types.to_pure_dict() == {
    0: {
      'count': 'OptArray',
      'mu': {'b': 'OptVariable', 'w': 'OptVariable'},
      'nu': {'b': 'OptVariable', 'w': 'OptVariable'},
    }
  }
  assert isinstance(opt.opt_state, tuple)
  assert isinstance(opt.opt_state[0].mu, nnx.State)


def test_sgd_momentum_five_steps():
  m, opt, losses = _train(optax.sgd(0.1, momentum=0.9), nnx.Param)
  np.testing.assert_allclose(
    losses, [0.408388, 0.371363, 0.315409, 0.262992, 0.231232], atol=1e-6
  )
  np.testing.assert_allclose(
    m.w[...],
    [[-0.403392, -0.278617], [-0.124774, 0.0], [0.153843, 0.278617]],
    atol=1e-6,
  )
  np.testing.assert_allclose(m.b[...], [0.432394, 0.432394], atol=1e-6)
  assert list(nnx.state(opt.opt_state)[0]) == ['trace']


def test_wrt_filters_five_steps():
  wrt = nnx.Any(nnx.Param, nnx.BatchStat)
  m, _, losses = _train(optax.sgd(0.5), wrt)
  np.testing.assert_allclose(
    losses, [0.408388, 0.264966, 0.232511, 0.22614, 0.225152], atol=1e-6
  )
  np.testing.assert_allclose(m.s[...], [1.043184, 1.043184], atol=1e-6)
  np.testing.assert_allclose(m.b[...], [0.381365, 0.381365], atol=1e-6)

  m, _, losses = _train(optax.sgd(0.5), nnx.PathContains('b'))
  np.testing.assert_allclose(
    losses, [0.408388, 0.271467, 0.237237, 0.228679, 0.22654], atol=1e-6
  )
  np.testing.assert_allclose(
    m.w[...], [[-0.3, -0.2], [-0.1, 0.0], [0.1, 0.2]], atol=1e-7
  )
  np.testing.assert_allclose(m.b[...], [0.41392, 0.41392], atol=1e-6)


def test_update_returns_the_updates():
  m = Dense(3, 2)
  opt = nnx.Optimizer(m, optax.sgd(0.1), wrt=nnx.Param)
  grads = jax.tree.map(jnp.ones_like, nnx.state(m, nnx.Param))
  updates = opt.update(m, grads)
  assert isinstance(updates, nnx.State)
  np.testing.assert_allclose(updates['b'], [-0.1, -0.1])
  np.testing.assert_allclose(m.b[...], [-0.1, -0.1])


class Shared(nnx.Module):
  def __init__(self):
    self.a = nnx.Param(jnp.ones(2))
    self.b = self.a
    self.c = nnx.Param(jnp.zeros(1))


def test_graph_argument():
  m = Shared()
  opt = nnx.Optimizer(m, optax.sgd(0.1, momentum=0.9), wrt=nnx.Param)
  assert opt.graph is None
  assert list(nnx.state(opt.opt_state)[0]['trace']) == ['a', 'c']
  grads = jax.tree.map(jnp.ones_like, nnx.state(m, nnx.Param))
  opt.update(m, grads)
  np.testing.assert_allclose(m.b[...], [0.9, 0.9])
  np.testing.assert_allclose(m.c[...], [-0.1])

  opt = nnx.Optimizer(m, optax.sgd(0.1), wrt=nnx.Param, graph=True)
  assert opt.graph is True
  with pytest.raises(ValueError, match='does not support shared references'):
    nnx.Optimizer(m, optax.sgd(0.1), wrt=nnx.Param, graph=False)
  with pytest.raises(TypeError, match='graph'):
    nnx.Optimizer(m, optax.sgd(0.1), wrt=nnx.Param, graph=3)
  tree = Dense(3, 2)
  opt = nnx.Optimizer(tree, optax.sgd(0.1), wrt=nnx.Param, graph=False)
  opt.update(tree, jax.tree.map(jnp.ones_like, nnx.state(tree, nnx.Param)))
  np.testing.assert_allclose(tree.b[...], [-0.1, -0.1])


@pytest.mark.parametrize('graph', [False, True])
def test_update_takes_gradients_as_a_graph_node(graph):
  # Tree-mode nnx.grad returns a copy of the model holding the gradients
  # of every Variable; the update uses those matching ``wrt``.
  class M(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.ones(2))
      self.s = nnx.BatchStat(jnp.zeros(2))

    def __call__(self, x):
      return (self.w[...] * x + self.s[...]).sum()

  m = M()
  grads = nnx.grad(lambda m: m(jnp.ones(2)), graph=False)(m)
  assert type(grads) is M
  opt = nnx.Optimizer(m, optax.sgd(0.1), wrt=nnx.Param, graph=graph)
  opt.update(m, grads)
  np.testing.assert_allclose(m.w[...], [0.9, 0.9])
  np.testing.assert_allclose(m.s[...], [0.0, 0.0])


def test_opt_variable_keeps_metadata():
  class M(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(
        jnp.ones((2, 2)), out_sharding=(None, 'model'), eager_sharding=False
      )

  opt = nnx.Optimizer(M(), optax.adam(0.1), wrt=nnx.Param)
  assert opt.opt_state[0].mu['w'].get_metadata() == {
    'out_sharding': (None, 'model'),
    'hijax': False,
    'ref': False,
    'eager_sharding': False,
  }


def test_to_opt_state():
  from flax.nnx.training.optimizer import to_opt_state

  state = to_opt_state({'count': jnp.zeros(()), 'mu': nnx.Param(jnp.ones(2))})
  assert type(state['count']) is nnx.OptArray
  assert type(state['mu']) is nnx.OptVariable
  assert issubclass(nnx.OptArray, nnx.OptState)
  assert issubclass(nnx.OptVariable, nnx.OptState)


def test_jax_jit_over_split_state_and_scan():
  class M(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.ones((2, 2)))

  m = M()
  opt = nnx.Optimizer(m, optax.adam(0.1), wrt=nnx.Param)
  graphdef, state = nnx.split((m, opt))

  @jax.jit
  def step(state):
    m, opt = nnx.merge(graphdef, state)
    grads = nnx.grad(lambda m: (m.w[...] ** 2).sum())(m)
    opt.update(m, grads)
    return nnx.state((m, opt))

  for _ in range(3):
    state = step(state)
  nnx.update((m, opt), state)
  np.testing.assert_allclose(m.w[...], np.full((2, 2), 0.701588), atol=1e-6)
  assert int(opt.step[...]) == 3

  m = M()
  opt = nnx.Optimizer(m, optax.sgd(0.1), wrt=nnx.Param)

  @nnx.scan(in_axes=(nnx.Carry, None), out_axes=(nnx.Carry, 0), length=4)
  def loop(carry, _):
    m, opt = carry
    loss, grads = nnx.value_and_grad(lambda m: (m.w[...] ** 2).sum())(m)
    opt.update(m, grads)
    return (m, opt), loss

  _, losses = loop((m, opt), None)
  np.testing.assert_allclose(losses, [4.0, 2.56, 1.6384, 1.04858], atol=1e-5)
  np.testing.assert_allclose(m.w[...], np.full((2, 2), 0.4096), atol=1e-6)
  assert int(opt.step[...]) == 4


def test_model_and_optimizer_signature():
  m = Dense(3, 2)
  state = nnx.ModelAndOptimizer(m, optax.sgd(0.1))
  assert state.wrt is nnx.Param
  assert state.model is m
  state.update(jax.tree.map(jnp.ones_like, nnx.state(m, nnx.Param)))
  np.testing.assert_allclose(m.b[...], [-0.1, -0.1])


class Lin(nnx.Module):
  def __init__(self, seed):
    key = jax.random.key(seed)
    self.kernel = nnx.Param(jax.random.normal(key, (2, 3)))
    self.bias = nnx.Param(jnp.zeros((3,)))


def test_ema_values():
  m = Lin(0)
  k0 = np.asarray(m.kernel[...])
  ema = nnx.EMA(m, 0.9)
  assert (ema.graph, ema.decay, ema.filter) == (None, 0.9, ...)
  m.kernel[...] = m.kernel[...] + 1.0
  # The EMA holds copies.
  np.testing.assert_array_equal(ema.params['kernel'][...], k0)
  ema.update(m)
  np.testing.assert_allclose(ema.params['kernel'][...], k0 + 0.1, atol=1e-6)
  ema.update(nnx.state(m))
  np.testing.assert_allclose(ema.params['kernel'][...], k0 + 0.19, atol=1e-6)

  other = Lin(1)
  before = np.asarray(other.kernel[...])
  averaged = ema.apply_to(other)
  assert averaged is not other
  np.testing.assert_allclose(averaged.kernel[...], k0 + 0.19, atol=1e-6)
  np.testing.assert_array_equal(other.kernel[...], before)


def test_ema_only_filter_and_jit():
  class M(nnx.Module):
    def __init__(self):
      self.w = nnx.Param(jnp.ones(2))
      self.b = nnx.BatchStat(jnp.zeros(2))

  m = M()
  ema = nnx.EMA(m, 0.5, only=nnx.BatchStat)
  assert list(ema.params) == ['b']
  m.b[...] = jnp.ones(2)
  ema.update(m)
  np.testing.assert_allclose(ema.params['b'][...], [0.5, 0.5])

  ema = nnx.EMA(m, 0.5)
  assert sorted(nnx.state(ema)['params']) == ['b', 'w']

  @nnx.jit
  def f(ema, m):
    ema.update(m)

  m.w[...] = jnp.zeros(2)
  f(ema, m)
  np.testing.assert_allclose(ema.params['w'][...], [0.5, 0.5])


def test_module_paths():
  import flax.nnx.training as training
  import flax.nnx.training.ema as ema_mod
  import flax.nnx.training.metrics as metrics_mod
  import flax.nnx.training.optimizer as optimizer_mod

  assert optimizer_mod is nnx.optimizer
  assert metrics_mod is nnx.metrics
  assert training.ema is ema_mod
  assert nnx.training is training
  assert ema_mod.EMA is nnx.EMA
  assert optimizer_mod.Optimizer is nnx.Optimizer
  assert metrics_mod.Metric is nnx.Metric
  assert metrics_mod.MultiMetric is nnx.MultiMetric
  assert optimizer_mod.Param is nnx.Param
  for name in ('ModelAndOptimizer', 'OptArray', 'OptState', 'OptVariable'):
    assert getattr(optimizer_mod, name) is getattr(nnx, name)
  assert sorted(dir(training)) == ['ema', 'metrics', 'optimizer']


class Classifier(nnx.Module):
  """A small MLP with BatchNorm and Dropout (no bias broadcasting)."""

  def __init__(self, rngs):
    self.l1 = nnx.Linear(4, 16, use_bias=False, rngs=rngs)
    self.dropout = nnx.Dropout(0.1, rngs=rngs)
    self.l2 = nnx.Linear(16, 3, use_bias=False, rngs=rngs)

  def __call__(self, x):
    return self.l2(self.dropout(nnx.relu(self.l1(x))))


def test_mnist_style_loop_trains():
  key = jax.random.key(0)
  centers = jnp.array([[2.0, 0, 0, 0], [0, 2.0, 0, 0], [0, 0, 2.0, 0]])
  labels = jnp.arange(48) % 3
  images = centers[labels] + 0.3 * jax.random.normal(key, (48, 4))
  batches = [
    {'image': images[i : i + 16], 'label': labels[i : i + 16]}
    for i in range(0, 48, 16)
  ]
  model = Classifier(nnx.Rngs(0))
  optimizer = nnx.Optimizer(model, optax.adamw(0.05, 0.9), wrt=nnx.Param)
  metrics = nnx.MultiMetric(
    accuracy=nnx.metrics.Accuracy(), loss=nnx.metrics.Average('loss')
  )

  def batch_loss(model, batch):
    logits = model(batch['image'])
    loss = optax.softmax_cross_entropy_with_integer_labels(
      logits, batch['label']
    ).mean()
    return loss, logits

  @nnx.jit
  def train_step(model, optimizer, metrics, batch):
    grad_fn = nnx.value_and_grad(batch_loss, has_aux=True)
    (loss, logits), grads = grad_fn(model, batch)
    metrics.update(loss=loss, logits=logits, labels=batch['label'])
    optimizer.update(model, grads)

  @nnx.jit
  def eval_step(model, metrics, batch):
    loss, logits = batch_loss(model, batch)
    metrics.update(loss=loss, logits=logits, labels=batch['label'])

  history = []
  for _ in range(4):
    model.train()
    for batch in batches:
      train_step(model, optimizer, metrics, batch)
    history.append({k: float(v) for k, v in metrics.compute().items()})
    metrics.reset()
  model.eval()
  for batch in batches:
    eval_step(model, metrics, batch)
  final = {k: float(v) for k, v in metrics.compute().items()}
  assert int(optimizer.step[...]) == 12
  assert history[-1]['loss'] < history[0]['loss']
  assert final['accuracy'] == 1.0
  assert final['loss'] < history[0]['loss']


def test_optimizer_state_keeps_sharding():
  mesh = jax.make_mesh((1, 1), ('data', 'model'))
  init = nnx.with_partitioning(
    nnx.initializers.lecun_normal(), ('data', 'model')
  )
  with jax.set_mesh(mesh):
    model = nnx.Linear(4, 8, kernel_init=init, rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
  mu = optimizer.opt_state[0].mu['kernel']
  assert mu.out_sharding == ('data', 'model')
  assert mu[...].sharding.spec == jax.sharding.PartitionSpec('data', 'model')
