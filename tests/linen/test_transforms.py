"""Lifted transforms on Module classes and on methods."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flax import errors
from flax import linen as nn


class Lin(nn.Module):
  features: int

  @nn.compact
  def __call__(self, x):
    k = self.param(
      'kernel', jax.nn.initializers.lecun_normal(), (x.shape[-1], self.features)
    )
    b = self.param('bias', jax.nn.initializers.normal(), (self.features,))
    return x @ k + jnp.broadcast_to(b, x.shape[:-1] + b.shape)


def shapes(tree):
  return jax.tree_util.tree_map(jnp.shape, tree)


def lin(p, x):
  b = p['bias']
  return x @ p['kernel'] + jnp.broadcast_to(b, x.shape[:-1] + b.shape)


# -- vmap -----------------------------------------------------------------------


def test_vmap_class_stacks_params():
  class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
      VLin = nn.vmap(
        Lin, variable_axes={'params': 0}, split_rngs={'params': True}, in_axes=0
      )
      return VLin(2)(x)

  x = jnp.arange(12.0).reshape(4, 3)
  v = Model().init(jax.random.key(0), x)
  assert shapes(v) == {
    'params': {'VmapLin_0': {'bias': (4, 2), 'kernel': (4, 3, 2)}}
  }
  p = v['params']['VmapLin_0']
  # Each member has its own parameters.
  assert not np.allclose(p['kernel'][0], p['kernel'][1])
  y = Model().apply(v, x)
  expected = jnp.stack(
    [lin(jax.tree_util.tree_map(lambda a: a[i], p), x[i]) for i in range(4)]
  )
  np.testing.assert_allclose(y, expected, rtol=1e-6)


def test_vmap_shared_params():
  VLin = nn.vmap(
    Lin, variable_axes={'params': None}, split_rngs={'params': False}, in_axes=0
  )
  x = jnp.ones((5, 3))
  v = VLin(2).init(jax.random.key(0), x)
  assert shapes(v) == {'params': {'bias': (2,), 'kernel': (3, 2)}}
  np.testing.assert_allclose(
    VLin(2).apply(v, x), lin(v['params'], x), rtol=1e-6
  )


def test_vmap_named_instance():
  class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
      VLin = nn.vmap(
        Lin, variable_axes={'params': 0}, split_rngs={'params': True}
      )
      return VLin(2, name='ensemble')(x)

  v = Model().init(jax.random.key(0), jnp.ones((3, 2)))
  assert list(v['params']) == ['ensemble']


def test_vmap_method_with_module_in_pytree_argument():
  class Holder(nn.Module):
    @nn.compact
    def __call__(self, x):
      dense = Lin(x.shape[-1])
      vmapped = nn.vmap(
        Holder.inner,
        in_axes=0,
        variable_axes={'params': 0},
        split_rngs={'params': True},
      )
      return vmapped(self, x, [dense])

    def inner(self, x, mods):
      return mods[0](x) + 1

  v = Holder().init(jax.random.key(0), jnp.ones((4, 3)))
  assert shapes(v)['params']['Lin_0'] == {'bias': (4, 3), 'kernel': (4, 3, 3)}


def test_vmap_of_function_runs_in_current_scope():
  class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
      def body(mdl, x):
        return Lin(2)(x)

      return nn.vmap(
        body, variable_axes={'params': 0}, split_rngs={'params': True}
      )(self, x)

  v = Model().init(jax.random.key(0), jnp.ones((3, 4)))
  assert shapes(v) == {
    'params': {'Lin_0': {'bias': (3, 2), 'kernel': (3, 4, 2)}}
  }


def test_vmap_axis_name_collectives():
  class Norm(nn.Module):
    @nn.compact
    def __call__(self, x):
      return x - jax.lax.pmean(x, 'batch')

  VNorm = nn.vmap(Norm, in_axes=0, axis_name='batch')
  x = jnp.arange(4.0)
  np.testing.assert_allclose(VNorm().apply({}, x), x - x.mean())


def test_transform_target_error():
  with pytest.raises(errors.TransformTargetError):
    nn.vmap(Lin(3))


# -- scan -----------------------------------------------------------------------


class Cell(nn.Module):
  @nn.compact
  def __call__(self, c, x):
    w = self.param('w', jax.nn.initializers.normal(), (c.shape[-1],) * 2)
    c = jnp.tanh(c @ w + x)
    return c, c


def test_scan_class_over_sequence():
  ScanCell = nn.scan(
    Cell,
    variable_broadcast='params',
    split_rngs={'params': False},
    in_axes=1,
    out_axes=1,
  )

  class Model(nn.Module):
    @nn.compact
    def __call__(self, c, xs):
      return ScanCell()(c, xs)

  c = jnp.zeros((2, 3))
  xs = jnp.arange(2 * 5 * 3, dtype=jnp.float32).reshape(2, 5, 3) / 30
  v = Model().init(jax.random.key(0), c, xs)
  assert shapes(v) == {'params': {'ScanCell_0': {'w': (3, 3)}}}
  (cf, ys) = Model().apply(v, c, xs)
  w = v['params']['ScanCell_0']['w']
  outs = []
  for t in range(5):
    c = jnp.tanh(c @ w + xs[:, t])
    outs.append(c)
  np.testing.assert_allclose(ys, jnp.stack(outs, 1), rtol=1e-5)
  np.testing.assert_allclose(cf, c, rtol=1e-5)


def test_scan_stacked_layers_with_metadata():
  class Block(nn.Module):
    @nn.compact
    def __call__(self, x, _):
      w = self.param(
        'w',
        nn.with_partitioning(jax.nn.initializers.ones, (None, 'model')),
        (x.shape[-1], x.shape[-1]),
      )
      return x @ w, None

  class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
      Stack = nn.scan(
        Block,
        length=3,
        variable_axes={'params': 0},
        split_rngs={'params': True},
        metadata_params={nn.PARTITION_NAME: 'layers'},
      )
      x, _ = Stack()(x, None)
      return x

  v = Model().init(jax.random.key(0), jnp.ones((1, 2)))
  box = v['params']['ScanBlock_0']['w']
  assert isinstance(box, nn.Partitioned)
  assert box.value.shape == (3, 2, 2)
  assert box.names == ('layers', None, 'model')
  np.testing.assert_allclose(Model().apply(v, jnp.ones((1, 2))), [[8.0, 8.0]])


def test_scan_method_with_broadcast_input():
  class Model(nn.Module):
    @nn.compact
    def __call__(self, c, xs, bias):
      def step(mdl, c, x, bias):
        return c + x + bias, c

      return nn.scan(step, in_axes=(0, nn.broadcast))(self, c, xs, bias)

  c, ys = Model().apply({}, 0.0, jnp.arange(4.0), 1.0)
  assert c == 10.0
  np.testing.assert_allclose(ys, [0.0, 1.0, 3.0, 6.0])


# -- jit, remat, remat_scan -------------------------------------------------------


def test_jit_class_and_decorated_method():
  JLin = nn.jit(Lin)
  x = jnp.ones((2, 3))
  v = JLin(4).init(jax.random.key(0), x)
  assert shapes(v) == {'params': {'bias': (4,), 'kernel': (3, 4)}}
  np.testing.assert_allclose(
    JLin(4).apply(v, x), lin(v['params'], x), rtol=1e-6
  )

  class Decorated(nn.Module):
    @nn.jit
    @nn.compact
    def __call__(self, x):
      return Lin(2)(x)

  v = Decorated().init(jax.random.key(0), x)
  assert list(v['params']) == ['Lin_0']
  np.testing.assert_allclose(
    Decorated().apply(v, x), lin(v['params']['Lin_0'], x), rtol=1e-6
  )


def test_checkpoint_class_name_and_gradients():
  class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
      return nn.checkpoint(Lin)(3)(x)

  x = jnp.ones((2, 4))
  v = Model().init(jax.random.key(0), x)
  assert list(v['params']) == ['CheckpointLin_0']

  def loss(params):
    return jnp.sum(Model().apply({'params': params}, x) ** 2)

  grads = jax.grad(loss)(v['params'])
  expected = jax.grad(lambda p: jnp.sum(lin(p, x) ** 2))(
    v['params']['CheckpointLin_0']
  )
  jax.tree_util.tree_map(
    lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5),
    grads['CheckpointLin_0'],
    expected,
  )
  assert nn.remat is nn.checkpoint


def test_remat_static_argnums():
  class Model(nn.Module):
    @nn.compact
    def __call__(self, x, train):
      return x * (2.0 if train else 1.0)

  RM = nn.remat(Model, static_argnums=(2,))
  assert RM().apply({}, jnp.ones(2), True).tolist() == [2.0, 2.0]


def test_jit_static_argnums_count_the_module_first():
  class Model(nn.Module):
    @nn.compact
    def __call__(self, x, train):
      return x * (2.0 if train else 1.0)

  JM = nn.jit(Model, static_argnums=(2,))
  assert JM().apply({}, jnp.ones(2), True).tolist() == [2.0, 2.0]
  assert JM().apply({}, jnp.ones(2), False).tolist() == [1.0, 1.0]
  JN = nn.jit(Model, static_argnames=('train',))
  assert JN().apply({}, jnp.ones(2), train=True).tolist() == [2.0, 2.0]


def test_remat_scan_stacks_levels():
  class Step(nn.Module):
    @nn.compact
    def __call__(self, x):
      b = self.param('b', jax.nn.initializers.ones, x.shape[-1:])
      return x + jnp.broadcast_to(b, x.shape)

  class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
      return nn.remat_scan(Step, lengths=(2, 3))(name='stack')(x)

  v = Model().init(jax.random.key(0), jnp.zeros((1, 2)))
  assert shapes(v) == {'params': {'stack': {'b': (2, 3, 2)}}}
  np.testing.assert_allclose(Model().apply(v, jnp.zeros((1, 2))), [[6.0, 6.0]])


# -- map_variables, add_metadata_axis, fold_rngs ----------------------------------


def test_map_variables_masks_kernel():
  class CausalLin(nn.Module):
    @nn.compact
    def __call__(self, x):
      def mask(variables):
        p = variables['params']
        return {'params': {**p, 'kernel': jnp.triu(p['kernel'])}}

      Masked = nn.map_variables(Lin, 'params', trans_in_fn=mask, init=True)
      return Masked(3)(x)

  x = jnp.ones((1, 3))
  v = CausalLin().init(jax.random.key(0), x)
  p = v['params']['Map_variablesLin_0']
  y = CausalLin().apply(v, x)
  np.testing.assert_allclose(
    y, x @ jnp.triu(p['kernel']) + p['bias'][None], rtol=1e-6
  )


def test_add_metadata_axis():
  class Boxed(nn.Module):
    @nn.compact
    def __call__(self, x):
      w = self.param(
        'w',
        nn.with_partitioning(jax.nn.initializers.ones, ('in',)),
        x.shape[-1:],
      )
      return x * w

  Tagged = nn.add_metadata_axis(
    Boxed,
    variable_axes={'params': 0},
    metadata_params={nn.PARTITION_NAME: 'batch'},
  )
  v = Tagged().init(jax.random.key(0), jnp.ones(3))
  assert v['params']['w'].names == ('batch', 'in')


def test_fold_rngs_keeps_values_reproducible():
  class Noise(nn.Module):
    @nn.compact
    def __call__(self):
      return jax.random.normal(self.make_rng('noise'), (2,))

  F = nn.fold_rngs(Noise)
  a = F().apply({}, rngs={'noise': jax.random.key(0)})
  b = F().apply({}, rngs={'noise': jax.random.key(0)})
  c = F().apply({}, rngs={'noise': jax.random.key(1)})
  np.testing.assert_array_equal(a, b)
  assert not np.allclose(a, c)


# -- differentiation ---------------------------------------------------------------


def test_jvp():
  class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
      layer = Lin(2)

      def f(mdl, x):
        return mdl(x)

      y, t = nn.jvp(f, layer, (x,), (jnp.ones_like(x),), {})
      return y, t

  x = jnp.arange(3.0)[None]
  v = Model().init(jax.random.key(0), x)
  (y, t) = Model().apply(v, x)
  p = v['params']['Lin_0']
  np.testing.assert_allclose(y, lin(p, x), rtol=1e-6)
  np.testing.assert_allclose(t, jnp.ones_like(x) @ p['kernel'], rtol=1e-6)


def test_vjp_returns_param_and_input_grads():
  class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
      layer = Lin(2)
      y, bwd = nn.vjp(lambda mdl, x: mdl(x), layer, x)
      params_grad, x_grad = bwd(jnp.ones_like(y))
      return params_grad, x_grad

  x = jnp.arange(3.0)[None]
  v = Model().init(jax.random.key(0), x)
  params_grad, x_grad = Model().apply(v, x)
  p = v['params']['Lin_0']
  expected_p, expected_x = jax.grad(
    lambda p, x: jnp.sum(lin(p, x)), argnums=(0, 1)
  )(p, x)
  np.testing.assert_allclose(
    params_grad['params']['kernel'], expected_p['kernel'], rtol=1e-6
  )
  np.testing.assert_allclose(x_grad, expected_x, rtol=1e-6)


def test_grad_and_value_and_grad():
  class Model(nn.Module):
    @nn.compact
    def __call__(self, x, y):
      def f(mdl, x, y):
        return jnp.sum(mdl(x) * y)

      value, (gx, gy) = nn.value_and_grad(f, Lin(2), x, y)
      gx2, gy2 = nn.grad(f, Lin(2, name='same'), x, y)
      return value, gx, gy, gx2, gy2

  x, y = jnp.ones((1, 3)), jnp.arange(2.0)[None]
  v = Model().init(jax.random.key(0), x, y)
  value, gx, gy, *_ = Model().apply(v, x, y)
  p = v['params']['Lin_0']
  np.testing.assert_allclose(value, jnp.sum(lin(p, x) * y), rtol=1e-6)
  np.testing.assert_allclose(gx, y @ p['kernel'].T, rtol=1e-6)
  np.testing.assert_allclose(gy, lin(p, x), rtol=1e-6)


def test_grad_return_structure():
  class Holder(nn.Module):
    inner: nn.Module

    def __call__(self, x):
      return self.inner(x)

  class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
      lin = Lin(2)
      loss = lambda mdl, x: jnp.sum(mdl(x) ** 2)
      with_aux = lambda mdl, x: (jnp.sum(mdl(x) ** 2), mdl(x))
      one = nn.grad(loss, lin, x)
      value, grads = nn.value_and_grad(loss, lin, x)
      (value2, aux), grads2 = nn.value_and_grad(with_aux, lin, x, has_aux=True)
      grads3, aux3 = nn.grad(with_aux, lin, x, has_aux=True)
      # A Module holding another bound Module works too.
      held = nn.grad(loss, Holder(lin), x)
      return one, value, grads, value2, aux, grads2, grads3, aux3, held

  x = jnp.arange(3.0)[None]
  v = Model().init(jax.random.key(0), x)
  one, value, grads, value2, aux, grads2, grads3, aux3, held = Model().apply(
    v, x
  )
  p = v['params']['Lin_0']
  y = lin(p, x)
  expected = 2 * y @ p['kernel'].T  # d/dx sum((x W + b)^2)
  # Gradients come as a tuple with one entry per primal, as in Flax.
  for g in (one, grads, grads2, grads3, held):
    assert isinstance(g, tuple) and len(g) == 1
    np.testing.assert_allclose(g[0], expected, rtol=1e-5)
  np.testing.assert_allclose(value, jnp.sum(y**2), rtol=1e-6)
  np.testing.assert_allclose(value2, value, rtol=1e-6)
  np.testing.assert_allclose(aux, y, rtol=1e-6)
  np.testing.assert_allclose(aux3, y, rtol=1e-6)


def test_grad_needs_scalar_output():
  class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
      return nn.grad(lambda mdl, x: mdl(x), Lin(2), x)

  with pytest.raises(
    ValueError, match=r'scalar-valued outputs. out shape=\(1, 2\)'
  ):
    Model().init(jax.random.key(0), jnp.ones((1, 3)))


def test_custom_vjp_replaces_gradient():
  class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
      def f(mdl, x):
        return mdl(x)

      def fwd(mdl, x):
        return nn.vjp(f, mdl, x)

      def bwd(vjp_fn, y_t):
        params_t, x_t = vjp_fn(y_t)
        params_t = jax.tree_util.tree_map(jnp.sign, params_t)
        return params_t, 2 * x_t

      sign_grad = nn.custom_vjp(f, forward_fn=fwd, backward_fn=bwd)
      return sign_grad(Lin(1), x)

  x = jnp.ones((1, 2))
  v = Model().init(jax.random.key(0), x)

  def loss(params, x):
    return jnp.sum(Model().apply({'params': params}, x))

  gp, gx = jax.grad(loss, argnums=(0, 1))(v['params'], x)
  p = v['params']['Lin_0']
  np.testing.assert_allclose(gp['Lin_0']['kernel'], jnp.ones((2, 1)))
  np.testing.assert_allclose(gx, 2 * p['kernel'].T, rtol=1e-6)


# -- control flow -----------------------------------------------------------------


def test_while_loop_with_carry_variables():
  class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
      self.variable('state', 'acc', jnp.zeros, ())

      def cond_fn(mdl, c):
        return mdl.variables['state']['acc'] < 10

      def body_fn(mdl, c):
        acc = mdl.variable('state', 'acc')
        acc.value += 1
        return c * 2

      return nn.while_loop(cond_fn, body_fn, self, x, carry_variables='state')

  y, state = Model().apply({}, 1.0, mutable=['state'])
  assert y == 2.0**10
  assert state['state']['acc'] == 10


def test_cond_and_switch():
  class Model(nn.Module):
    @nn.compact
    def __call__(self, x, pred, index):
      lin = Lin(2)
      a = nn.cond(pred, lambda m, x: m(x), lambda m, x: -m(x), lin, x)
      branches = [
        lambda m, x: m(x),
        lambda m, x: 2 * m(x),
        lambda m, x: 3 * m(x),
      ]
      b = nn.switch(index, branches, lin, x)
      return a, b

  x = jnp.ones((1, 3))
  v = Model().init(jax.random.key(0), x, True, 0)
  ref = lin(v['params']['Lin_0'], x)
  a, b = jax.jit(Model().apply)(v, x, False, 2)
  np.testing.assert_allclose(a, -ref, rtol=1e-6)
  np.testing.assert_allclose(b, 3 * ref, rtol=1e-6)


def test_transformed_method_cannot_return_module():
  class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
      return nn.jit(Model.make)(self)

    def make(self):
      return Lin(2)

  with pytest.raises(errors.TransformedMethodReturnValueError):
    Model().init(jax.random.key(0), jnp.ones(2))


def test_transform_with_setup_submodules():
  class Model(nn.Module):
    def setup(self):
      self.layer = Lin(2)

    @nn.jit
    def __call__(self, x):
      return self.layer(x)

  x = jnp.ones((1, 3))
  v = Model().init(jax.random.key(0), x)
  assert list(v['params']) == ['layer']
  np.testing.assert_allclose(
    Model().apply(v, x), lin(v['params']['layer'], x), rtol=1e-6
  )


def test_jit_class_reuses_compiled_function():
  traces = []

  class Traced(nn.Module):
    features: int

    @nn.compact
    def __call__(self, x):
      traces.append(self.features)
      return x @ self.param(
        'k', jax.nn.initializers.ones, (x.shape[-1], self.features)
      )

  JT = nn.jit(Traced)
  x = jnp.ones((1, 3))
  v = JT(2).init(jax.random.key(0), x)
  JT(2).apply(v, x)
  count = len(traces)
  for _ in range(3):
    y = JT(2).apply(v, x)
  assert len(traces) == count
  np.testing.assert_allclose(y, [[3.0, 3.0]])
  # Another configuration traces again and computes its own result.
  v3 = JT(3).init(jax.random.key(0), x)
  np.testing.assert_allclose(JT(3).apply(v3, x), [[3.0, 3.0, 3.0]])
  assert traces[-1] == 3


def test_jvp_rejects_modules_bound_elsewhere():
  class Inner(nn.Module):
    @nn.compact
    def __call__(self, x):
      return x * self.param('w', jax.nn.initializers.ones, x.shape)

  class Wrapper(nn.Module):
    inner: nn.Module

    @nn.compact
    def __call__(self, x):
      return nn.jvp(
        lambda mdl, x: mdl.inner(x), self, (x,), (jnp.ones_like(x),), {}
      )

  class Outer(nn.Module):
    @nn.compact
    def __call__(self, x):
      inner = Inner()
      inner(x)
      return Wrapper(inner)(x)

  with pytest.raises(TypeError, match='lift one Module only.*2 bound Modules'):
    Outer().init(jax.random.key(0), jnp.ones(3))


def test_cond_initializes_with_the_keys_of_the_branch_taken():
  # the true branch takes the keys a plain call would use, the false
  # branch the next ones (values as in Flax 0.12.8)
  class P(nn.Module):
    @nn.compact
    def __call__(self, x):
      return x * self.param('k', jax.nn.initializers.normal(1.0), (2,))

  class C(nn.Module):
    @nn.compact
    def __call__(self, x, flag):
      def t(mdl, x):
        return P(name='a')(x)

      def f(mdl, x):
        return P(name='a')(x) * 2

      return nn.cond(flag, t, f, self, x)

  class Plain(nn.Module):
    @nn.compact
    def __call__(self, x):
      return P(name='a')(x)

  key, x = jax.random.key(0), jnp.ones(2)
  plain = Plain().init(key, x)['params']['a']['k']
  np.testing.assert_allclose(
    plain, [1.041992425918579, -0.701136589050293], rtol=1e-6
  )
  taken = C().init(key, x, True)['params']['a']['k']
  np.testing.assert_array_equal(taken, plain)
  other = C().init(key, x, False)['params']['a']['k']
  np.testing.assert_allclose(
    other, [-0.02078329212963581, -0.3215259611606598], rtol=1e-6
  )
