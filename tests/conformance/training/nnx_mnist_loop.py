"""An MNIST-style NNX loop: CNN with BatchNorm and Dropout, nnx.Optimizer
(AdamW), nnx.MultiMetric, nnx.jit train and eval steps."""

import jax
import jax.numpy as jnp
import optax
import report
from flax import nnx


class CNN(nnx.Module):
  def __init__(self, *, rngs):
    self.conv1 = nnx.Conv(1, 4, kernel_size=(3, 3), rngs=rngs)
    self.bn = nnx.BatchNorm(4, rngs=rngs)
    self.dropout = nnx.Dropout(0.1, rngs=rngs)
    self.linear = nnx.Linear(4 * 8 * 8, 10, rngs=rngs)

  def __call__(self, x):
    x = nnx.relu(self.bn(self.conv1(x)))
    x = self.dropout(x)
    return self.linear(x.reshape(x.shape[0], -1))


model = CNN(rngs=nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adamw(0.01, 0.9), wrt=nnx.Param)
metrics = nnx.MultiMetric(
  accuracy=nnx.metrics.Accuracy(), loss=nnx.metrics.Average('loss')
)


def loss_fn(model, batch):
  logits = model(batch['image'])
  loss = optax.softmax_cross_entropy_with_integer_labels(
    logits, batch['label']
  ).mean()
  return loss, logits


@nnx.jit
def train_step(model, optimizer, metrics, batch):
  grad_fn = nnx.value_and_grad(loss_fn, has_aux=True)
  (loss, logits), grads = grad_fn(model, batch)
  metrics.update(loss=loss, logits=logits, labels=batch['label'])
  optimizer.update(model, grads)


@nnx.jit
def eval_step(model, metrics, batch):
  loss, logits = loss_fn(model, batch)
  metrics.update(loss=loss, logits=logits, labels=batch['label'])


x = jax.random.normal(jax.random.key(1), (16, 8, 8, 1))
y = (x.sum(axis=(1, 2, 3)) > 0).astype(jnp.int32)
batch = {'image': x, 'label': y}
for i in range(5):
  model.train()
  train_step(model, optimizer, metrics, batch)
  report.tree(f'epoch {i}', metrics.compute())
  metrics.reset()
model.eval()
eval_step(model, metrics, batch)
report.tree('eval', metrics.compute())
report.array('step', optimizer.step[...])
report.tree('params', nnx.state(model, nnx.Param))
