"""Train a small CNN on scikit-learn's 8x8 digits with Flax.

NNX by default, Linen with ``--linen``. Every epoch is checkpointed with
``flax.training.checkpoints``; running the script again resumes from the
last checkpoint (``--fresh`` starts over). Writes a learning curve to the
output directory.

  python examples/digits_demo.py            # NNX
  python examples/digits_demo.py --linen    # Linen
"""

import argparse
import os
import pathlib
import shutil
import time

os.environ.setdefault('JAX_PLATFORMS', 'cpu')

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from tqdm import tqdm  # noqa: E402

from flax.training import checkpoints  # noqa: E402

# Lines are not wrapped at the console width (80 columns when the output is
# not a terminal), and rich writes no colour codes into a pipe.
console = Console(soft_wrap=True)
NUM_CLASSES = 10


def load_data(seed):
  digits = load_digits()
  images = (digits.images / 16.0).astype(np.float32)[..., None]  # (N, 8, 8, 1)
  return train_test_split(
    images,
    digits.target.astype(np.int32),
    test_size=0.2,
    random_state=seed,
    stratify=digits.target,
  )


def batches(x, y, batch_size, rng):
  order = rng.permutation(len(x))
  for start in range(0, len(x), batch_size):
    idx = order[start : start + batch_size]
    yield x[idx], y[idx]


def loss_and_accuracy(logits, labels):
  loss = optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
  return loss, jnp.mean(jnp.argmax(logits, -1) == labels)


def summary_table(title, params):
  table = Table(title=title)
  for column in ('parameter', 'shape', 'dtype', 'count'):
    table.add_column(column, justify='right' if column == 'count' else 'left')
  total = 0
  for path, leaf in jax.tree_util.tree_leaves_with_path(params):
    name = '/'.join(
      str(getattr(k, 'key', getattr(k, 'name', getattr(k, 'idx', k))))
      for k in path
    )
    total += leaf.size
    table.add_row(
      name, str(tuple(leaf.shape)), str(leaf.dtype), f'{leaf.size:,}'
    )
  table.add_row('[bold]total', '', '', f'[bold]{total:,}')
  return table


# -- NNX ------------------------------------------------------------------------


def make_nnx(seed, learning_rate):
  from flax import nnx

  class CNN(nnx.Module):
    def __init__(self, rngs):
      self.conv1 = nnx.Conv(1, 16, kernel_size=(3, 3), rngs=rngs)
      self.conv2 = nnx.Conv(16, 32, kernel_size=(3, 3), rngs=rngs)
      self.dense1 = nnx.Linear(4 * 4 * 32, 64, rngs=rngs)
      self.dense2 = nnx.Linear(64, NUM_CLASSES, rngs=rngs)

    def __call__(self, x):
      x = nnx.relu(self.conv1(x))
      x = nnx.relu(self.conv2(x))
      x = nnx.avg_pool(x, window_shape=(2, 2), strides=(2, 2))
      x = x.reshape(x.shape[0], -1)
      return self.dense2(nnx.relu(self.dense1(x)))

  model = CNN(nnx.Rngs(seed))
  optimizer = nnx.Optimizer(model, optax.adam(learning_rate), wrt=nnx.Param)

  @nnx.jit
  def train_step(model, optimizer, x, y):
    def loss_fn(model):
      return loss_and_accuracy(model(x), y)

    (loss, acc), grads = nnx.value_and_grad(loss_fn, has_aux=True)(model)
    optimizer.update(model, grads)
    return loss, acc

  @nnx.jit
  def eval_step(model, x, y):
    return loss_and_accuracy(model(x), y)

  class Runner:
    name = 'NNX'

    def params(self):
      return nnx.state(model, nnx.Param).to_pure_dict()

    def train(self, x, y):
      return train_step(model, optimizer, x, y)

    def evaluate(self, x, y):
      return eval_step(model, x, y)

    def checkpoint(self):
      return nnx.state((model, optimizer))

    def load(self, state):
      nnx.update((model, optimizer), state)

  return Runner()


# -- Linen ----------------------------------------------------------------------


def make_linen(seed, learning_rate):
  from flax import linen as nn
  from flax.training import train_state

  class CNN(nn.Module):
    @nn.compact
    def __call__(self, x):
      x = nn.relu(nn.Conv(16, kernel_size=(3, 3))(x))
      x = nn.relu(nn.Conv(32, kernel_size=(3, 3))(x))
      x = nn.avg_pool(x, window_shape=(2, 2), strides=(2, 2))
      x = x.reshape(x.shape[0], -1)
      x = nn.relu(nn.Dense(64)(x))
      return nn.Dense(NUM_CLASSES)(x)

  module = CNN()
  params = module.init(jax.random.key(seed), jnp.zeros((1, 8, 8, 1)))['params']
  holder = {
    'state': train_state.TrainState.create(
      apply_fn=module.apply, params=params, tx=optax.adam(learning_rate)
    )
  }

  @jax.jit
  def train_step(state, x, y):
    def loss_fn(params):
      return loss_and_accuracy(state.apply_fn({'params': params}, x), y)

    (loss, acc), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
    return state.apply_gradients(grads=grads), loss, acc

  @jax.jit
  def eval_step(state, x, y):
    return loss_and_accuracy(state.apply_fn({'params': state.params}, x), y)

  class Runner:
    name = 'Linen'

    def params(self):
      return holder['state'].params

    def train(self, x, y):
      holder['state'], loss, acc = train_step(holder['state'], x, y)
      return loss, acc

    def evaluate(self, x, y):
      return eval_step(holder['state'], x, y)

    def checkpoint(self):
      return holder['state']

    def load(self, state):
      holder['state'] = state

  return Runner()


# -- main -------------------------------------------------------------------------


def plot(history, path, title):
  import matplotlib

  matplotlib.use('Agg')
  import matplotlib.pyplot as plt

  epochs = np.arange(1, len(history['train_loss']) + 1)
  fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
  ax1.plot(epochs, history['train_loss'], label='train')
  ax1.plot(epochs, history['test_loss'], label='test')
  ax1.set_xlabel('epoch')
  ax1.set_ylabel('loss')
  ax1.legend()
  ax2.plot(epochs, history['train_accuracy'], label='train')
  ax2.plot(epochs, history['test_accuracy'], label='test')
  ax2.set_xlabel('epoch')
  ax2.set_ylabel('accuracy')
  ax2.legend()
  fig.suptitle(title)
  fig.tight_layout()
  fig.savefig(path, dpi=100)
  plt.close(fig)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--linen', action='store_true', help='use Linen')
  parser.add_argument('--epochs', type=int, default=12)
  parser.add_argument('--batch-size', type=int, default=32)
  parser.add_argument('--learning-rate', type=float, default=3e-3)
  parser.add_argument('--seed', type=int, default=0)
  parser.add_argument(
    '--out',
    type=pathlib.Path,
    default=pathlib.Path(__file__).resolve().parent / 'out',
    help='output directory (default: examples/out)',
  )
  parser.add_argument(
    '--fresh', action='store_true', help='delete old checkpoints first'
  )
  args = parser.parse_args(argv)
  start = time.perf_counter()

  api = 'linen' if args.linen else 'nnx'
  ckpt_dir = args.out / f'checkpoints_{api}'
  if args.fresh and ckpt_dir.exists():
    shutil.rmtree(ckpt_dir)
  args.out.mkdir(parents=True, exist_ok=True)

  x_train, x_test, y_train, y_test = load_data(args.seed)
  make = make_linen if args.linen else make_nnx
  runner = make(args.seed, args.learning_rate)
  console.print(
    f'Digits: {len(x_train)} training and {len(x_test)} test images of 8x8, '
    f'{NUM_CLASSES} classes. API: {runner.name}.'
  )
  console.print(summary_table(f'{runner.name} CNN parameters', runner.params()))

  empty = np.zeros(0, np.float32)
  history = {
    k: empty
    for k in ('train_loss', 'train_accuracy', 'test_loss', 'test_accuracy')
  }
  target = {'model': runner.checkpoint(), 'epoch': 0, 'history': history}
  restored = checkpoints.restore_checkpoint(ckpt_dir, target, backend='msgpack')
  first_epoch = 1
  if restored is not target:
    runner.load(restored['model'])
    history = {k: np.asarray(v) for k, v in restored['history'].items()}
    first_epoch = int(restored['epoch']) + 1
    console.print(
      f'[bold green]Resuming from checkpoint[/] '
      f'{checkpoints.latest_checkpoint(ckpt_dir)} (epoch {first_epoch - 1} '
      f'done, test accuracy {history["test_accuracy"][-1]:.2%}).'
    )
  else:
    console.print(f'No checkpoint in {ckpt_dir}; training from scratch.')

  rng = np.random.default_rng(args.seed)
  for _ in range(1, first_epoch):
    rng.permutation(len(x_train))  # keep the data order of a full run
  for epoch in range(first_epoch, args.epochs + 1):
    losses, accs = [], []
    n_batches = -(-len(x_train) // args.batch_size)
    bar = tqdm(
      batches(x_train, y_train, args.batch_size, rng),
      total=n_batches,
      desc=f'epoch {epoch:2d}/{args.epochs}',
      unit='batch',
      leave=True,
      # No bar when stderr is not a terminal (CI logs, pipes): the epoch line
      # below says the same once.
      disable=None,
    )
    for x, y in bar:
      loss, acc = runner.train(x, y)
      losses.append(float(loss))
      accs.append(float(acc))
      bar.set_postfix(
        loss=f'{np.mean(losses):.4f}', acc=f'{np.mean(accs):.3f}', refresh=False
      )
    bar.close()
    test_loss, test_acc = runner.evaluate(x_test, y_test)
    tqdm.write(
      f'epoch {epoch:2d}: train loss {np.mean(losses):.4f}, train accuracy '
      f'{np.mean(accs):.2%}, test loss {float(test_loss):.4f}, test accuracy '
      f'{float(test_acc):.2%}'
    )
    for key, value in (
      ('train_loss', np.mean(losses)),
      ('train_accuracy', np.mean(accs)),
      ('test_loss', float(test_loss)),
      ('test_accuracy', float(test_acc)),
    ):
      history[key] = np.append(history[key], np.float32(value))
    checkpoints.save_checkpoint(
      ckpt_dir,
      {'model': runner.checkpoint(), 'epoch': epoch, 'history': history},
      step=epoch,
      keep=2,
      backend='msgpack',
    )

  if first_epoch > args.epochs:
    console.print(f'All {args.epochs} epochs were already done.')
  if len(history['train_loss']):
    curve = args.out / f'learning_curve_{api}.png'
    plot(history, curve, f'{runner.name} CNN on 8x8 digits')
    console.print(f'Learning curve written to {curve}')
  test_loss, test_acc = runner.evaluate(x_test, y_test)
  console.print(
    f'[bold]Test accuracy: {float(test_acc):.2%}[/] (test loss '
    f'{float(test_loss):.4f}) after {len(history["train_loss"])} epochs; '
    f'checkpoints in {ckpt_dir}; {time.perf_counter() - start:.1f} s.'
  )
  return float(test_acc)


if __name__ == '__main__':
  main()
