"""The JAX functions that layers take as default arguments.

NNX layers keep the product function they are given, with a JAX function
as the default: ``nnx.Linear(dot_general=jax.lax.dot_general)``,
``nnx.Conv(conv_general_dilated=jax.lax.conv_general_dilated)``,
``nnx.Einsum(einsum_op=jax.numpy.einsum)``. Those defaults are the
functions as they were when ``flax.nnx`` was imported (it imports this
module), as in Flax 0.12.8, whose layer modules load with the package; not
the functions as they are when a layer class is first used. So a library
that patches ``jax.lax.dot_general`` for a while does not leave its patch
behind as a layer default because the layer module happened to load during
the patch.

Layers that look their JAX function up when they run (Linen's ``Dense``,
``nnx.LinearGeneral``, ...) do not use these.

>>> import jax
>>> from flax.core import jax_defaults
>>> jax_defaults.dot_general is jax.lax.dot_general
True
"""

import jax
import jax.numpy as jnp

dot_general = jax.lax.dot_general
"""``jax.lax.dot_general``, the default of ``nnx.Linear(dot_general=)``."""
conv_general_dilated = jax.lax.conv_general_dilated
"""``jax.lax.conv_general_dilated``, the default of ``nnx.Conv``'s."""
einsum = jnp.einsum
"""``jax.numpy.einsum``, the default of ``nnx.Einsum(einsum_op=)``."""
