"""The Linen <-> NNX bridge: run Linen Modules in NNX and NNX Modules in
Linen.

Installed with the ``bridge`` extra (``pip install 'flax-nnx[bridge]'``),
which brings flax-linen; this is the only part of flax-nnx that imports
``flax.linen``.

>>> import jax.numpy as jnp
>>> from flax import nnx
>>> from flax import linen as nn
>>> from flax.nnx import bridge
>>> class Scale(nn.Module):
...   @nn.compact
...   def __call__(self, x):
...     return x * self.param('s', nn.initializers.ones, (x.shape[-1],))[None]
>>> model = bridge.lazy_init(
...   bridge.ToNNX(Scale(), rngs=nnx.Rngs(0)), jnp.ones((1, 3))
... )
>>> model.s.shape
(3,)
>>> model(jnp.ones((1, 3))).shape
(1, 3)
"""

try:
  import flax.linen  # noqa: F401
except ImportError as e:
  from flax.plugins import install_command

  raise ModuleNotFoundError(
    'flax.nnx.bridge needs Linen, which is not installed. Install the '
    f'bridge extra (it brings flax-linen): {install_command("flax-nnx", ("bridge",))}',
    name=e.name or 'flax.linen',
  ) from e

from flax import plugins
from flax.nnx.bridge import interop as interop
from flax.nnx.bridge import module as module
from flax.nnx.bridge import variables as variables
from flax.nnx.bridge import wrappers as wrappers
from flax.nnx.bridge.interop import linen_in_bridge_mdl as linen_in_bridge_mdl
from flax.nnx.bridge.interop import nnx_in_bridge_mdl as nnx_in_bridge_mdl
from flax.nnx.bridge.module import AttrPriority as AttrPriority
from flax.nnx.bridge.module import Module as Module
from flax.nnx.bridge.module import Scope as Scope
from flax.nnx.bridge.module import compact as compact
from flax.nnx.bridge.module import current_context as current_context
from flax.nnx.bridge.module import current_module as current_module
from flax.nnx.bridge.variables import NNXMeta as NNXMeta
from flax.nnx.bridge.variables import with_partitioning as with_partitioning
from flax.nnx.bridge.wrappers import Functional as Functional
from flax.nnx.bridge.wrappers import ToLinen as ToLinen
from flax.nnx.bridge.wrappers import ToNNX as ToNNX
from flax.nnx.bridge.wrappers import functional as functional
from flax.nnx.bridge.wrappers import lazy_init as lazy_init
from flax.nnx.bridge.wrappers import to_linen as to_linen
from flax.nnx.bridge.wrappers import to_linen_class as to_linen_class


def __getattr__(name):
  # ``bridge.initializers`` is ``nnx.initializers`` (provided by flax-layers),
  # resolved on first use.
  if name == 'initializers':
    try:
      initializers = plugins.require(
        'flax.layers.nnx.initializers', 'flax-layers'
      )
    except ModuleNotFoundError as e:
      raise AttributeError(f'{__name__}.initializers: {e}') from e
    globals()[name] = initializers
    return initializers
  raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
