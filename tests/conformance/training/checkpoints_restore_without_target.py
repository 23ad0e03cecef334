"""restore_checkpoint without a target (default Orbax backend): leaves come
back as they were saved, JAX arrays as JAX arrays (Orbax warns that it
places them from the saved sharding file), NumPy arrays and Python numbers
as themselves."""

import tempfile
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import report
from flax.training import checkpoints

tree = {
  'a': jnp.ones(3),
  'b': {'c': jnp.zeros((2,), jnp.int32)},
  's': 3,
  'f': 2.5,
  'n': np.ones(2),
  'z': jnp.array(4),
}
d = tempfile.mkdtemp()
checkpoints.save_checkpoint(d, tree, step=0)
with warnings.catch_warnings():
  warnings.simplefilter('ignore', UserWarning)
  raw = checkpoints.restore_checkpoint(d, target=None)
report.value(
  'types',
  jax.tree.map(lambda x: [type(x).__name__, str(getattr(x, 'dtype', ''))], raw),
)
report.tree('values', raw)
with report.warns('sharding warning'):
  checkpoints.restore_checkpoint(d, target=None)
