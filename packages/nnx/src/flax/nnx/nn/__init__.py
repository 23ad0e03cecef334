"""``flax.nnx.nn``: Flax's module path of the NNX layers.

The layers live in the ``flax-layers`` distribution (``flax.layers.nnx``);
the submodules here (``linear``, ``normalization``, ``attention``, ...) are
aliases of its modules.

>>> from flax.nnx.nn import linear
>>> linear.Linear.__name__
'Linear'
"""

from flax.plugins import require as _require

_require('flax.layers.nnx', 'flax-layers')

from flax.nnx.nn import activations as activations  # noqa: E402
from flax.nnx.nn import attention as attention  # noqa: E402
from flax.nnx.nn import dtypes as dtypes  # noqa: E402
from flax.nnx.nn import initializers as initializers  # noqa: E402
from flax.nnx.nn import linear as linear  # noqa: E402
from flax.nnx.nn import lora as lora  # noqa: E402
from flax.nnx.nn import normalization as normalization  # noqa: E402
from flax.nnx.nn import recurrent as recurrent  # noqa: E402
from flax.nnx.nn import stochastic as stochastic  # noqa: E402
