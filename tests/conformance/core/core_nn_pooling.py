"""flax.core.nn: pooling, initializers, activation, group_norm(group_size)."""

import jax
import jax.numpy as jnp
import report
from flax.core import init, nn

x = jnp.arange(32.0).reshape(1, 4, 4, 2)
report.array('avg', nn.avg_pool(x, (2, 2)))
report.array('max same', nn.max_pool(x, (2, 2), strides=(1, 1), padding='SAME'))
report.array(
  'avg no pad', nn.avg_pool(x, (3, 3), padding='SAME', count_include_pad=False)
)
report.array('avg pad', nn.avg_pool(x, (3, 3), padding='SAME'))
report.array('unbatched', nn.avg_pool(x[0], (2, 2)))
report.array(
  'explicit pad',
  nn.max_pool(jnp.arange(6.0).reshape(1, 6, 1), (2,), padding=((1, 1),)),
)
key = jax.random.key(0)
report.array('zeros_init', nn.initializers.zeros_init()(key, (2,)))
report.array('lecun', nn.initializers.lecun_normal()(key, (2, 2)))
report.array('relu6', nn.activation.relu6(jnp.array([-1.0, 7.0])))
y, v = init(lambda s, x: nn.group_norm(s, x, num_groups=None, group_size=2))(
  key, jnp.arange(8.0).reshape(1, 8)
)
report.array('group_size', y)
report.tree('group norm params', v)
