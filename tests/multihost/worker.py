"""One process of a multi-process run: ``python worker.py TASK WORKDIR``.

The launcher (``launch.py``) sets ``MH_PROCESS_ID``, ``MH_NUM_PROCESSES`` and
``MH_COORDINATOR``; with one process the worker runs without
``jax.distributed``. Every process builds the same global 2x4 mesh over all
devices, runs the task and prints one line ``RESULT {json}`` (process 0's
and the others' must agree).

Tasks: ``nnx-train`` / ``linen-train`` (5 steps), ``nnx-save`` /
``linen-save`` (3 steps, then a checkpoint in WORKDIR), ``nnx-resume`` /
``linen-resume`` (restore the checkpoint into an abstract sharded target,
then 2 more steps), ``jax-utils`` (replicate/unreplicate on local devices),
``die`` (process 1 exits in the middle of the run).
"""

import json
import os
import sys

import jax

NUM_PROCESSES = int(os.environ.get('MH_NUM_PROCESSES', '1'))
PROCESS_ID = int(os.environ.get('MH_PROCESS_ID', '0'))
if NUM_PROCESSES > 1:
  jax.config.update('jax_cpu_collectives_implementation', 'gloo')
  jax.distributed.initialize(
    os.environ['MH_COORDINATOR'],
    num_processes=NUM_PROCESSES,
    process_id=PROCESS_ID,
    initialization_timeout=int(os.environ.get('MH_INIT_TIMEOUT', '60')),
  )

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from jax.sharding import Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

MESH = Mesh(np.array(jax.devices()).reshape(2, 4), ('data', 'model'))
RULES = (('batch', 'data'), ('hidden', 'model'), ('embed', None))
STEPS = {'train': 5, 'save': 3, 'resume': 2}


def global_batch():
  """The same (16, 16) inputs and (16, 4) targets in every process."""
  rng = np.random.default_rng(0)
  x = rng.normal(size=(16, 16)).astype(np.float32)
  y = rng.normal(size=(16, 4)).astype(np.float32)
  sharding = NamedSharding(MESH, P('data', None))
  return tuple(
    jax.make_array_from_callback(a.shape, sharding, lambda i, a=a: a[i])
    for a in (x, y)
  )


def checksum(tree):
  """A replicated scalar summarising every leaf (same in every process)."""
  leaves = jax.tree.leaves(tree)
  return float(jax.jit(lambda ls: sum(jnp.sum(jnp.abs(v)) for v in ls))(leaves))


def specs(tree):
  return {
    '/'.join(str(getattr(k, 'key', getattr(k, 'name', k))) for k in path): str(
      leaf.sharding.spec
    )
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]
    if isinstance(leaf, jax.Array)
  }


# --- NNX --------------------------------------------------------------------


def nnx_task(task, workdir):
  from flax import nnx
  import orbax.checkpoint as ocp

  class MLP(nnx.Module):
    def __init__(self, rngs):
      init = nnx.initializers.lecun_normal()
      self.l1 = nnx.Linear(
        16,
        32,
        kernel_init=nnx.with_partitioning(init, ('embed', 'hidden')),
        bias_init=nnx.with_partitioning(
          nnx.initializers.zeros_init(), ('hidden',)
        ),
        rngs=rngs,
      )
      self.l2 = nnx.Linear(
        32,
        4,
        kernel_init=nnx.with_partitioning(init, ('hidden', 'embed')),
        rngs=rngs,
      )

    def __call__(self, x):
      return self.l2(nnx.relu(self.l1(x)))

  def create():
    model = MLP(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    return model, optimizer

  with jax.set_mesh(MESH), nnx.logical_axis_rules(RULES):
    graphdef, abstract_state = nnx.split(nnx.eval_shape(create))
    shardings = nnx.get_named_sharding(abstract_state, MESH)

    @nnx.jit
    def init_state():
      state = nnx.state(create())
      return jax.lax.with_sharding_constraint(
        state, nnx.get_partition_spec(state)
      )

    x, y = global_batch()

    @nnx.jit
    def step(model, optimizer, x, y):
      def loss_fn(model):
        return jnp.mean((model(x) - y) ** 2)

      loss, grads = nnx.value_and_grad(loss_fn)(model)
      optimizer.update(model, grads)
      return loss

    if task == 'nnx-resume':
      target = jax.tree.map(
        lambda a, s: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s),
        abstract_state,
        shardings,
      )
      state = ocp.StandardCheckpointer().restore(
        os.path.join(workdir, 'nnx_ckpt'), target
      )
    else:
      state = init_state()
    model, optimizer = nnx.merge(graphdef, state)
    kind = task.split('-')[1]
    losses = [float(step(model, optimizer, x, y)) for _ in range(STEPS[kind])]
    state = nnx.state((model, optimizer))
    if task == 'nnx-save':
      checkpointer = ocp.StandardCheckpointer()
      checkpointer.save(os.path.join(workdir, 'nnx_ckpt'), state)
      checkpointer.wait_until_finished()
    params = nnx.state(model, nnx.Param)
    return {
      'losses': losses,
      'params': checksum(params),
      'specs': specs(params),
    }


# --- Linen ------------------------------------------------------------------


def linen_task(task, workdir):
  from flax import linen as nn
  from flax.training import checkpoints, train_state

  class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
      init = nn.initializers.lecun_normal()
      x = nn.Dense(
        32,
        kernel_init=nn.with_logical_partitioning(init, ('embed', 'hidden')),
        bias_init=nn.with_logical_partitioning(
          nn.initializers.zeros_init(), ('hidden',)
        ),
      )(x)
      return nn.Dense(
        4, kernel_init=nn.with_logical_partitioning(init, ('hidden', 'embed'))
      )(nn.relu(x))

  model = MLP()
  tx = optax.adam(1e-2)

  def create(key):
    params = model.init(key, jnp.ones((1, 16)))['params']
    return train_state.TrainState.create(
      apply_fn=model.apply, params=params, tx=tx
    )

  abstract = jax.eval_shape(create, jax.random.key(0))
  with jax.set_mesh(MESH), nn.logical_axis_rules(RULES):
    shardings = nn.logical_to_mesh_sharding(
      nn.get_partition_spec(abstract), MESH, RULES
    )
    state = nn.unbox(
      jax.jit(create, out_shardings=shardings)(jax.random.key(0))
    )
    x, y = global_batch()

    @jax.jit
    def step(state, x, y):
      def loss_fn(params):
        return jnp.mean((state.apply_fn({'params': params}, x) - y) ** 2)

      loss, grads = jax.value_and_grad(loss_fn)(state.params)
      return state.apply_gradients(grads=grads), loss

    ckpt_dir = os.path.join(workdir, 'linen_ckpt')
    if task == 'linen-resume':
      # The freshly initialised, sharded state is the restore target: each
      # array comes back with the target's sharding.
      state = checkpoints.restore_checkpoint(ckpt_dir, target=state)
    kind = task.split('-')[1]
    losses = []
    for _ in range(STEPS[kind]):
      state, loss = step(state, x, y)
      losses.append(float(loss))
    if task == 'linen-save':
      checkpoints.save_checkpoint_multiprocess(
        ckpt_dir, state, step=int(state.step)
      )
  params = state.params
  return {
    'losses': losses,
    'params': checksum(params),
    'specs': specs(params),
    'step': int(state.step),
  }


def jax_utils_task():
  """Replication helpers work on this process's local devices."""
  from flax import jax_utils

  replicated = jax_utils.replicate({'w': jnp.arange(3.0)})
  local = sorted(d.id for d in jax.local_devices())
  return {
    'process_index': jax.process_index(),
    'shape': list(replicated['w'].shape),
    'on_local_devices': sorted(
      d.id for d in replicated['w'].sharding.device_set
    )
    == local,
    'unreplicated': jax_utils.unreplicate(replicated)['w'].tolist(),
  }


def main():
  task, workdir = sys.argv[1], os.path.abspath(sys.argv[2])
  if task == 'die':
    # Both processes start a collective; process 1 leaves before joining it.
    if PROCESS_ID == 1:
      os._exit(3)
    x, _ = global_batch()
    print(float(jax.jit(jnp.sum)(x)), flush=True)
    result = {}
  elif task == 'jax-utils':
    result = jax_utils_task()
  elif task.startswith('nnx'):
    result = nnx_task(task, workdir)
  else:
    result = linen_task(task, workdir)
  print('RESULT ' + json.dumps(result, sort_keys=True), flush=True)


if __name__ == '__main__':
  main()
