"""flax.nnx.summary helpers: ArrayRepr, SimpleObjectRepr, SizeBytes,
NoneDumper, filter_rng_streams."""

import jax.numpy as jnp
import report
import yaml
from flax import nnx
from flax.nnx import summary

array = summary.ArrayRepr.from_array(jnp.ones((2, 3), jnp.int8))
report.text('array repr', str(array))
report.value('array shape', list(array.shape))
report.text('simple object', str(summary.SimpleObjectRepr([1, 2])))
report.text('size bytes', repr(summary.SizeBytes(1234, 4936)))
report.text(
  'yaml', yaml.dump({'a': None, 'b': [1, None]}, Dumper=summary.NoneDumper)
)
row = summary.CallInfo(0, 0, nnx.RngStream, (), '', None, None, None)
report.value('rng rows filtered', summary.filter_rng_streams(row))
row = summary.CallInfo(0, 0, nnx.Linear, (), '', None, None, None)
report.value('other rows kept', summary.filter_rng_streams(row))
