"""flax.core.nn attention: dot_product_attention and
multi_head_dot_product_attention (axes, masks, dropout, cache, errors)."""

import jax
import jax.numpy as jnp
import report
from flax.core import apply, init, nn
from flax.core.nn import attention

k = jax.random.key(0)
q = jax.random.normal(jax.random.key(1), (2, 3, 2, 4))
kv = jax.random.normal(jax.random.key(2), (2, 5, 2, 4))
dpa = init(nn.dot_product_attention)

y, variables = dpa({}, q, kv, kv, deterministic=True)
report.array('dpa', y)
report.tree('dpa-variables', variables)
report.array('dpa-drop', dpa({'dropout': k}, q, kv, kv, dropout_rate=0.5)[0])
report.array(
  'dpa-drop-nb',
  dpa({'dropout': k}, q, kv, kv, dropout_rate=0.5, broadcast_dropout=False)[0],
)
report.array(
  'dpa-drop-rng',
  dpa({}, q, kv, kv, dropout_rate=0.5, dropout_rng=jax.random.key(7))[0],
)
bias = jnp.where(jnp.arange(5) < 3, 0.0, -1e10).reshape(1, 1, 1, 5)
report.array('dpa-bias', dpa({}, q, kv, kv, bias=bias, deterministic=True)[0])
q2 = jax.random.normal(jax.random.key(4), (2, 3, 2, 2, 4))
report.array('dpa-2d', dpa({}, q2, q2, q2, deterministic=True)[0])
report.array('dpa-axis2', dpa({}, q2, q2, q2, axis=(2,), deterministic=True)[0])
report.array(
  'dpa-2d-drop', dpa({'dropout': k}, q2, q2, q2, dropout_rate=0.3)[0]
)
with report.raises('dpa-needs-dropout-rng'):
  dpa({}, q, kv, kv, dropout_rate=0.5)
with report.raises('dpa-bad-axis'):
  dpa({}, q, kv, kv, axis=(3,), deterministic=True)

x = jax.random.normal(jax.random.key(1), (2, 4, 6))
xkv = jax.random.normal(jax.random.key(2), (2, 5, 6))
mha = init(nn.multi_head_dot_product_attention)
y, variables = mha({'params': k}, x, xkv, 2, deterministic=True)
report.array('mha', y)
report.tree('mha-variables', variables)
y, variables = mha(
  {'params': k},
  x,
  xkv,
  2,
  qkv_features=8,
  out_features=3,
  bias=False,
  deterministic=True,
)
report.array('mha-features', y)
report.tree('mha-features-variables', variables, values=False)
report.array(
  'mha-causal',
  mha({'params': k}, x, x, 2, causal_mask=True, deterministic=True)[0],
)
pad = (jnp.arange(4) < 3)[None, :, None].repeat(2, 0)
kpad = (jnp.arange(5) < 2)[None, :, None].repeat(2, 0)
report.array(
  'mha-pad',
  mha({'params': k}, x, x, 2, padding_mask=pad, deterministic=True)[0],
)
report.array(
  'mha-kpad',
  mha(
    {'params': k},
    x,
    xkv,
    2,
    padding_mask=pad,
    key_padding_mask=kpad,
    deterministic=True,
  )[0],
)
seg = jnp.array([[1, 1, 2, 2], [1, 2, 2, 2]])
kseg = jnp.array([[1, 1, 2, 2, 2], [1, 1, 1, 2, 2]])
report.array(
  'mha-seg',
  mha(
    {'params': k},
    x,
    xkv,
    2,
    segmentation=seg,
    key_segmentation=kseg,
    deterministic=True,
  )[0],
)
report.array(
  'mha-drop',
  mha({'params': k, 'dropout': jax.random.key(3)}, x, xkv, 2, dropout_rate=0.4)[
    0
  ],
)
report.array(
  'mha-bf16',
  mha({'params': k}, x, xkv, 2, dtype=jnp.bfloat16, deterministic=True)[0],
  rtol=2e-2,
  atol=2e-2,
)
x2 = jax.random.normal(jax.random.key(4), (2, 3, 2, 6))
report.array(
  'mha-2d-causal',
  mha({'params': k}, x2, x2, 2, causal_mask=True, deterministic=True)[0],
)
report.array(
  'mha-axis2-causal',
  mha(
    {'params': k},
    x2,
    x2,
    2,
    attention_axis=(2,),
    causal_mask=True,
    deterministic=True,
  )[0],
)
with report.raises('mha-heads'):
  mha({'params': k}, x, xkv, 4)
with report.raises('mha-cache-not-causal'):
  mha({'params': k}, x, x, 2, cache=True)

mask = attention.make_padding_mask(pad, kpad, (2, 4, 2, 3), (2, 5, 2, 3))
report.array('padding-mask', mask)
report.array(
  'segment-mask',
  attention.make_padding_mask(
    seg, kseg, (2, 4, 2, 3), (2, 5, 2, 3), segmentation_mask=True
  ),
)

# Decoding with a cache matches full causal attention.
params = variables = mha({'params': k}, x, x, 2)[1]['params']
_, fresh = init(nn.multi_head_dot_product_attention, mutable=True)(
  {'params': k}, x, x, 2, cache=True, causal_mask=True
)
entry = fresh['cache']['entry']((2, 4))
report.tree('cache-entry', entry)
step = apply(nn.multi_head_dot_product_attention, mutable='cache')
state = {'params': params, 'cache': {'entry': entry}}
outs = []
for t in range(4):
  y, updated = step(
    state,
    x[:, t : t + 1],
    x[:, t : t + 1],
    2,
    cache=True,
    causal_mask=True,
    deterministic=True,
  )
  state = {'params': params, 'cache': updated['cache']}
  outs.append(y)
report.array('decoded', jnp.concatenate(outs, axis=1))
report.array('cache-index', state['cache']['entry'].i)
with report.raises('cache-wrong-shape'):
  step(state, x[:, :2], x[:, :2], 2, cache=True, causal_mask=True)
with report.raises('cache-not-initialized'):
  step(
    {'params': params, 'cache': {'entry': 3}},
    x[:, :1],
    x[:, :1],
    2,
    cache=True,
    causal_mask=True,
  )
