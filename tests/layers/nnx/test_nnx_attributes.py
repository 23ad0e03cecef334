"""Attributes the NNX layers keep (names and order, as Flax 0.12.8's), the
names of the ``flax.nnx.nn`` module paths, and RNN state_axes /
broadcast_rngs."""

import re

import jax
import jax.numpy as jnp
import pytest
from flax import nnx

from nnx_layer_helpers import assert_close


def _r():
  return nnx.Rngs(0)


# Top-level attributes in repr order (= the order they are set in).
_ATTRS = {
  'Linear': (
    lambda: nnx.Linear(2, 3, rngs=_r()),
    'kernel bias in_features out_features use_bias dtype param_dtype '
    'precision dot_general promote_dtype preferred_element_type',
  ),
  'LinearGeneral': (
    lambda: nnx.LinearGeneral(2, 3, rngs=_r()),
    'in_features out_features axis batch_axis use_bias dtype param_dtype '
    'precision dot_general dot_general_cls promote_dtype '
    'preferred_element_type kernel bias',
  ),
  'Conv': (
    lambda: nnx.Conv(2, 3, (3,), rngs=_r()),
    'kernel_shape kernel bias in_features out_features kernel_size strides '
    'padding input_dilation kernel_dilation feature_group_count use_bias '
    'mask dtype param_dtype precision conv_general_dilated promote_dtype '
    'preferred_element_type',
  ),
  'ConvTranspose': (
    lambda: nnx.ConvTranspose(2, 3, (3,), rngs=_r()),
    'kernel_size in_features out_features strides padding kernel_dilation '
    'use_bias mask dtype param_dtype precision transpose_kernel '
    'promote_dtype preferred_element_type kernel_shape kernel bias',
  ),
  'Einsum': (
    lambda: nnx.Einsum('ab,bc->ac', (2, 3), (3,), rngs=_r()),
    'kernel bias einsum_str kernel_shape bias_shape dtype param_dtype '
    'precision promote_dtype einsum_op preferred_element_type',
  ),
  'Embed': (
    lambda: nnx.Embed(4, 3, rngs=_r()),
    'embedding num_embeddings features dtype param_dtype promote_dtype',
  ),
  'LayerNorm': (
    lambda: nnx.LayerNorm(3, rngs=_r()),
    'scale bias num_features epsilon dtype param_dtype use_bias use_scale '
    'reduction_axes feature_axes axis_name axis_index_groups '
    'use_fast_variance promote_dtype',
  ),
  'RMSNorm': (
    lambda: nnx.RMSNorm(3, rngs=_r()),
    'scale num_features epsilon dtype param_dtype use_scale reduction_axes '
    'feature_axes axis_name axis_index_groups use_fast_variance '
    'promote_dtype',
  ),
  'BatchNorm': (
    lambda: nnx.BatchNorm(3, rngs=_r()),
    'mean var scale bias num_features use_running_average axis momentum '
    'epsilon dtype param_dtype use_bias use_scale axis_name '
    'axis_index_groups use_fast_variance promote_dtype',
  ),
  'GroupNorm': (
    lambda: nnx.GroupNorm(4, num_groups=2, rngs=_r()),
    'feature_axis num_groups group_size scale bias epsilon dtype '
    'param_dtype use_bias use_scale reduction_axes axis_name '
    'axis_index_groups use_fast_variance promote_dtype',
  ),
  'InstanceNorm': (
    lambda: nnx.InstanceNorm(3, rngs=_r()),
    'scale bias num_features epsilon dtype param_dtype use_bias use_scale '
    'feature_axes axis_name axis_index_groups use_fast_variance '
    'promote_dtype',
  ),
  'Dropout': (
    lambda: nnx.Dropout(0.5, rngs=_r()),
    'rate broadcast_dims deterministic rng_collection rngs',
  ),
  'LoRA': (
    lambda: nnx.LoRA(3, 2, 4, rngs=_r()),
    'in_features out_features dtype param_dtype lora_param_type '
    'base_module promote_dtype lora_a lora_b',
  ),
  'LoRALinear': (
    lambda: nnx.LoRALinear(3, 4, lora_rank=2, rngs=_r()),
    'kernel bias in_features out_features use_bias dtype param_dtype '
    'precision dot_general promote_dtype preferred_element_type lora',
  ),
  'LSTMCell': (
    lambda: nnx.LSTMCell(2, 3, rngs=_r()),
    'in_features hidden_features gate_fn activation_fn dtype param_dtype '
    'promote_dtype rngs ii if_ ig io hi hf hg ho carry_init',
  ),
  'GRUCell': (
    lambda: nnx.GRUCell(2, 3, rngs=_r()),
    'in_features hidden_features gate_fn activation_fn dtype param_dtype '
    'promote_dtype rngs dense_i dense_h carry_init',
  ),
  'SimpleCell': (
    lambda: nnx.SimpleCell(2, 3, rngs=_r()),
    'in_features hidden_features dtype param_dtype residual activation_fn '
    'promote_dtype rngs dense_h dense_i carry_init',
  ),
  'OptimizedLSTMCell': (
    lambda: nnx.OptimizedLSTMCell(2, 3, rngs=_r()),
    'in_features hidden_features gate_fn activation_fn dtype param_dtype '
    'promote_dtype rngs dense_i dense_h carry_init',
  ),
  'RNN': (
    lambda: nnx.RNN(nnx.LSTMCell(2, 3, rngs=_r())),
    'cell time_major return_carry reverse keep_order unroll rngs '
    'state_axes broadcast_rngs',
  ),
  'PReLU': (
    lambda: nnx.PReLU(),
    'negative_slope dtype param_dtype promote_dtype',
  ),
}


@pytest.mark.parametrize('name', sorted(_ATTRS))
def test_repr_attribute_order(name):
  make, expected = _ATTRS[name]
  layer = make()
  top = re.findall(r'^  ([a-z_]+)=', repr(layer), re.MULTILINE)
  assert top == expected.split()
  public = {k for k in vars(layer) if not k.startswith('_')}
  assert public == set(expected.split())


def test_no_initializers_kept():
  layer = nnx.LSTMCell(2, 3, rngs=_r())
  for name in ('kernel_init', 'recurrent_kernel_init', 'bias_init'):
    assert not hasattr(layer, name)
  assert not hasattr(layer.hi, 'kernel_init')
  assert layer.carry_init is None


def test_module_path_names():
  from flax.core import FrozenDict
  from flax.nnx.nn import activations, attention, dtypes, linear
  from flax.nnx.nn import lora, normalization, recurrent, stochastic
  from flax.typing import PromoteDtypeFn

  assert activations.dtypes.promote_dtype is dtypes.promote_dtype
  assert linear.FrozenDict is FrozenDict
  for mod in (activations, attention, linear, lora, normalization, recurrent):
    assert mod.PromoteDtypeFn is PromoteDtypeFn
  for mod in (attention, linear, lora, normalization, recurrent, stochastic):
    assert mod.Module is nnx.Module
  assert nnx.Initializer is nnx.initializers.Initializer


def test_linear_general_dot_general_cls_per_call():
  made = []

  class Dot:
    def __init__(self):
      made.append(self)

    def __call__(self, *args, **kwargs):
      return jax.lax.dot_general(*args, **kwargs)

  layer = nnx.LinearGeneral(2, 3, dot_general_cls=Dot, rngs=_r())
  assert layer.dot_general is None and layer.dot_general_cls is Dot
  assert isinstance(layer.batch_axis, nnx.nn.linear.FrozenDict)
  assert not made
  layer(jnp.ones((1, 2)))
  layer(jnp.ones((1, 2)))
  assert len(made) == 2


def test_embed_dtype_defaults_to_table_dtype():
  assert nnx.Embed(3, 4, rngs=_r()).dtype == jnp.float32
  e = nnx.Embed(3, 4, param_dtype=jnp.bfloat16, rngs=_r())
  assert e.dtype == jnp.bfloat16
  assert e.attend(jnp.ones((1, 4))).dtype == jnp.bfloat16
  e = nnx.Embed(3, 4, dtype=jnp.float16, rngs=_r())
  assert e.dtype is jnp.float16


def test_prelu_dtypes():
  x = jnp.array([-2.0, 3.0], jnp.bfloat16)
  assert nnx.PReLU()(x).dtype == jnp.bfloat16
  assert nnx.PReLU(dtype=jnp.float16)(x).dtype == jnp.float16
  assert nnx.PReLU()(jnp.array([-2, 3])).tolist() == [0, 3]
  with pytest.raises(TypeError):
    nnx.PReLU(rngs=_r())
  layer = nnx.PReLU(0.2, negative_slope_metadata={'foo': 1})
  assert layer.negative_slope.foo == 1


def test_group_norm_feature_axis():
  layer = nnx.GroupNorm(4, num_groups=2, rngs=_r())
  assert layer.feature_axis == -1 and not hasattr(layer, 'num_features')
  y = layer(jnp.arange(16.0).reshape(2, 2, 4))
  row = [-1.212678, -0.7276068, -1.212678, -0.7276068]
  assert_close(y[0, 0], row)


def test_kept_rngs_fork_the_carry_stream():
  kd = jax.random.key_data
  with pytest.warns(UserWarning, match='keep_rngs'):
    rngs = nnx.Rngs(params=0, carry=5)
    cell = nnx.SimpleCell(3, 2, keep_rngs=True, rngs=rngs)
  assert cell.rngs.tag == 'carry'
  assert kd(cell.rngs.key[...]).tolist() == [2724472204, 3573582090]
  with pytest.warns(UserWarning, match='keep_rngs'):
    cell = nnx.SimpleCell(3, 2, keep_rngs=True, rngs=nnx.Rngs(0))
  assert cell.rngs.tag == 'default'
  assert kd(cell.rngs.key[...]).tolist() == [1797259609, 2579123966]


class _KeyCell(nnx.RNNCellBase):
  """Outputs the key data its dropout stream gives at each step."""

  def __init__(self, *, rngs):
    self.drop = nnx.Dropout(0.5, rngs=rngs)
    self.steps = nnx.BatchStat(jnp.array(0))

  def __call__(self, carry, x):
    self.steps[...] += 1
    k = jax.random.key_data(self.drop.rngs())
    return carry, jnp.broadcast_to(k, x.shape[:-1] + (2,))

  def initialize_carry(self, input_shape, rngs=None):
    return jnp.zeros(input_shape[:-1])


def test_rnn_default_carries_rng_state():
  cell = _KeyCell(rngs=nnx.Rngs(dropout=1))
  rnn = nnx.RNN(cell)
  assert isinstance(rnn.state_axes, nnx.StateAxes)
  assert dict(rnn.state_axes.items()) == {...: nnx.Carry}
  y = rnn(jnp.ones((1, 3, 2)))
  assert y[0].tolist() == [
    [3704974950, 1863054868],
    [2705940334, 2639757084],
    [788428910, 4288801516],
  ]
  assert int(cell.drop.rngs.count[...]) == 3
  assert int(cell.steps[...]) == 3


def test_rnn_broadcast_rngs_same_key_every_step():
  cell = _KeyCell(rngs=nnx.Rngs(dropout=1))
  rnn = nnx.RNN(cell, broadcast_rngs='dropout')
  assert rnn.broadcast_rngs == 'dropout'
  y = rnn(jnp.ones((1, 3, 2)))
  assert y[0].tolist() == [[2783477504, 2669311029]] * 3
  # The stream is forked once per call; the step counter is carried.
  assert int(cell.drop.rngs.count[...]) == 1
  assert int(cell.steps[...]) == 3


def test_rnn_state_axes_broadcast_state():
  cell = _KeyCell(rngs=nnx.Rngs(dropout=1))
  axes = nnx.StateAxes({nnx.BatchStat: None, ...: nnx.Carry})
  rnn = nnx.RNN(cell, state_axes=axes)
  assert rnn.state_axes is axes
  y = rnn(jnp.ones((1, 2, 2)), seq_lengths=jnp.array([1]), return_carry=True)
  assert y[1].shape == (1, 2, 2)
  assert int(cell.steps[...]) == 0
  assert int(cell.drop.rngs.count[...]) == 2
