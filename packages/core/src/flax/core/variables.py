"""Variables of a Flax model.

The variables of a model are a nested dict: at the top level one entry per
*collection* (``'params'``, ``'batch_stats'``, ``'cache'``, ...), inside each
collection one entry per submodule name, with arrays at the leaves. Inside a
model, :class:`Variable` is a read/write handle to one of them (see
:meth:`flax.core.Scope.variable`).

>>> import jax.numpy as jnp
>>> from flax.core import Scope
>>> from flax.core.variables import Variable
>>> v = Scope({}, mutable=True).variable('stats', 'mean', jnp.zeros, (2,))
>>> isinstance(v, Variable)
True
"""

from collections.abc import Mapping
from typing import Any

from flax.core.scope import Variable

__all__ = ['Variable', 'VariableDict', 'Variables']

# A dict of collections: {collection: {name: value or nested dict}}.
VariableDict = Mapping[str, Mapping[str, Any]]
Variables = VariableDict
