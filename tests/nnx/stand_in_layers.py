"""Layers for tests/nnx, which runs without flax-layers installed.

``Linear``, ``LoRALinear`` and ``BatchNorm`` draw and compute as ``nnx.Linear`` and
``nnx.BatchNorm`` do with their defaults (a LeCun-normal kernel from the
``params`` stream, zero bias; batch statistics over all but the last axis,
momentum 0.99, epsilon 1e-5; the same keys drawn from ``rngs``), so that the tests using them can check Flax
0.12.8's numbers for models made of those layers.
"""

import jax
import jax.numpy as jnp
from flax import nnx

_lecun_normal = jax.nn.initializers.lecun_normal()


class Linear(nnx.Module):
  """``nnx.Linear(in_features, out_features, rngs=rngs)``'s parameters and
  output."""

  def __init__(self, in_features, out_features, *, rngs):
    self.in_features = in_features
    self.out_features = out_features
    self.kernel = nnx.Param(
      _lecun_normal(rngs.params(), (in_features, out_features))
    )
    rngs.params()  # nnx.Linear draws a key for the (zero) bias too
    self.bias = nnx.Param(jnp.zeros((out_features,)))

  def __call__(self, x):
    y = jax.lax.dot_general(
      x, self.kernel[...], (((x.ndim - 1,), (0,)), ((), ()))
    )
    return y + jnp.reshape(self.bias[...], (1,) * (y.ndim - 1) + (-1,))


class LoRALinear(Linear):
  """A ``Linear`` with a low-rank update ``x @ lora_a @ lora_b`` (two more
  parameter arrays, as ``nnx.LoRALinear``)."""

  def __init__(self, in_features, out_features, *, lora_rank, rngs):
    super().__init__(in_features, out_features, rngs=rngs)
    self.lora_a = nnx.Param(
      _lecun_normal(rngs.params(), (in_features, lora_rank))
    )
    self.lora_b = nnx.Param(jnp.zeros((lora_rank, out_features)))

  def __call__(self, x):
    return super().__call__(x) + x @ self.lora_a[...] @ self.lora_b[...]


class BatchNorm(nnx.Module):
  """``nnx.BatchNorm(num_features, rngs=rngs)``'s variables and output
  (training mode updates the running averages)."""

  def __init__(self, num_features, *, use_running_average=False, rngs):
    self.use_running_average = use_running_average
    self.momentum = 0.99
    self.epsilon = 1e-5
    self.mean = nnx.BatchStat(jnp.zeros((num_features,)))
    self.var = nnx.BatchStat(jnp.ones((num_features,)))
    rngs.params()  # keys for the (constant) scale and bias, as nnx.BatchNorm
    self.scale = nnx.Param(jnp.ones((num_features,)))
    rngs.params()
    self.bias = nnx.Param(jnp.zeros((num_features,)))

  def __call__(self, x):
    axes = tuple(range(x.ndim - 1))
    if self.use_running_average:
      mean, var = self.mean[...], self.var[...]
    else:
      mean = jnp.mean(x, axes)
      var = jnp.maximum(0.0, jnp.mean(jnp.square(x), axes) - jnp.square(mean))
      m = self.momentum
      self.mean[...] = m * self.mean[...] + (1 - m) * mean
      self.var[...] = m * self.var[...] + (1 - m) * var
    shape = (1,) * (x.ndim - 1) + (-1,)
    y = (x - mean.reshape(shape)) * jax.lax.rsqrt(
      var.reshape(shape) + self.epsilon
    )
    return y * self.scale[...].reshape(shape) + self.bias[...].reshape(shape)
