"""nnx.Optimizer state sharding: a Variable's ``optimizer_sharding``
metadata shards the optimizer state mirroring it (Flax 0.12.8).

The checks need 8 devices, so they run in a child process with 8 fake CPU
devices (this process may have started JAX with one); it prints one JSON
record per optimizer state leaf.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
  """
  import json
  import jax, jax.numpy as jnp, optax
  from jax.sharding import AxisType, PartitionSpec as P
  from flax import nnx

  def spec(a):
    return str(getattr(a.sharding, 'spec', None))

  def leaves(label, node):
    for path, v in jax.tree_util.tree_leaves_with_path(
        nnx.state(node), is_leaf=lambda x: isinstance(x, nnx.Variable)):
      md = {k: str(m) for k, m in v.get_metadata().items()
            if k in ('out_sharding', 'optimizer_sharding')}
      print(json.dumps({
        'case': label, 'path': jax.tree_util.keystr(path),
        'type': type(v).__name__, 'aval': str(jax.typeof(v[...])),
        'spec': spec(v[...]), 'metadata': md,
        'keys': list(v.get_metadata())}))

  opt_init = nnx.with_metadata(
    jax.nn.initializers.lecun_normal(), optimizer_sharding=P('x', 'y'))
  both_init = nnx.with_partitioning(
    jax.nn.initializers.lecun_normal(), ('x', 'y'),
    optimizer_sharding=P(None, 'y'))
  bias_init = nnx.with_partitioning(nnx.initializers.zeros_init(), ('y',))
  txs = {
    'adam': lambda: optax.adam(1e-3),
    'sgd_momentum': lambda: optax.sgd(1e-3, momentum=0.9),
    'chain': lambda: optax.chain(
      optax.clip_by_global_norm(1.0), optax.adamw(1e-3)),
    'inject': lambda: optax.inject_hyperparams(optax.adam)(
      learning_rate=1e-3),
  }
  for axes in ('explicit', 'auto'):
    kind = AxisType.Explicit if axes == 'explicit' else AxisType.Auto
    with jax.set_mesh(jax.make_mesh((2, 4), ('x', 'y'), axis_types=(kind,) * 2)):
      model = nnx.Linear(2, 8, kernel_init=opt_init, bias_init=bias_init,
                         rngs=nnx.Rngs(0))
      both = nnx.Linear(2, 8, kernel_init=both_init, use_bias=False,
                        rngs=nnx.Rngs(0))
      for name, tx in txs.items():
        leaves(f'{axes}/{name}', nnx.Optimizer(model, tx(), wrt=nnx.Param))
      leaves(f'{axes}/both', nnx.Optimizer(both, optax.adam(1e-3),
                                           wrt=nnx.Param))
      made = nnx.jit(lambda m: nnx.Optimizer(
        m, optax.adam(1e-3), wrt=nnx.Param))(both)
      leaves(f'{axes}/jit_both', made)
      leaves(f'{axes}/model_and_optimizer',
             nnx.ModelAndOptimizer(model, optax.sgd(1e-3, momentum=0.9)))
  """
)


@pytest.fixture(scope='module')
def records():
  env = dict(os.environ)
  env['XLA_FLAGS'] = '--xla_force_host_platform_device_count=8'
  env['JAX_PLATFORMS'] = 'cpu'
  result = subprocess.run(
    [sys.executable, '-c', SCRIPT], env=env, capture_output=True, text=True
  )
  assert result.returncode == 0, result.stderr
  out = {}
  for line in result.stdout.splitlines():
    rec = json.loads(line)
    out[rec['case'], rec['path']] = rec
  return out


MU = "['opt_state'][0]['mu']"


def test_explicit_axes_state_is_sharded_by_optimizer_sharding(records):
  for leaf in ('mu', 'nu'):
    rec = records['explicit/adam', f"['opt_state'][0]['{leaf}']['kernel']"]
    assert rec['type'] == 'OptVariable'
    assert rec['aval'] == 'float32[2@x,8@y]'
    assert rec['spec'] == "P('x', 'y')"
    # optimizer_sharding becomes the state's out_sharding.
    assert rec['metadata'] == {'out_sharding': "P('x', 'y')"}
  count = records['explicit/adam', "['opt_state'][0]['count']"]
  assert (count['type'], count['aval']) == ('OptArray', 'int32[]')
  step = records['explicit/adam', "['step']"]
  assert (step['type'], step['aval']) == ('OptState', 'uint32[]')


def test_sharding_metadata_without_optimizer_sharding(records):
  rec = records['explicit/adam', MU + "['bias']"]
  assert rec['aval'] == 'float32[8@y]'
  assert rec['metadata'] == {'out_sharding': "('y',)"}
  # out_sharding comes after the other metadata, as in Flax 0.12.8.
  assert rec['keys'][:2] == ['mesh', 'out_sharding']


def test_optimizer_sharding_replaces_sharding(records):
  for case in ('explicit/both', 'explicit/jit_both'):
    rec = records[case, MU + "['kernel']"]
    assert rec['aval'] == 'float32[2,8@y]', case
    assert rec['metadata'] == {'out_sharding': "P(None, 'y')"}


def test_auto_axes(records):
  rec = records['auto/adam', MU + "['kernel']"]
  assert rec['aval'] == 'float32[2,8]'
  assert rec['spec'] == "P('x', 'y')"
  rec = records['auto/both', MU + "['kernel']"]
  assert rec['spec'] == "P(None, 'y')"


@pytest.mark.parametrize('axes', ['explicit', 'auto'])
@pytest.mark.parametrize(
  'case, path',
  [
    ('sgd_momentum', "['opt_state'][0]['trace']['kernel']"),
    ('chain', "['opt_state'][1][0]['mu']['kernel']"),
    ('chain', "['opt_state'][1][0]['nu']['kernel']"),
    ('inject', "['opt_state']['inner_state'][0]['mu']['kernel']"),
    ('model_and_optimizer', "['opt_state'][0]['trace']['kernel']"),
  ],
)
def test_every_transform_shards_its_state(records, axes, case, path):
  rec = records[f'{axes}/{case}', path]
  assert rec['spec'] == "P('x', 'y')"
  assert rec['metadata'] == {'out_sharding': "P('x', 'y')"}


def test_model_keeps_its_own_sharding(records):
  rec = records['explicit/model_and_optimizer', "['model']['kernel']"]
  assert rec['aval'] == 'float32[2,8]'
  assert rec['metadata'] == {'optimizer_sharding': "P('x', 'y')"}
  hyper = records[
    'explicit/inject', "['opt_state']['hyperparams']['learning_rate']"
  ]
  assert (hyper['type'], hyper['spec']) == ('OptArray', 'P()')
