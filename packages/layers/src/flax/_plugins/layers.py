"""Plugin of the flax-layers distribution.

Exports the Linen layer classes into ``flax.linen`` and the NNX ones into
``flax.nnx``. Only names and import strings live here, so plugin discovery
imports nothing heavy.
"""

from flax.plugins import Export
from flax.plugins import hookimpl

# Names that flax.layers.linen defines, exported as flax.linen.<name>.
LINEN = []

# Names that flax.layers.nnx defines, exported as flax.nnx.<name>.
NNX = []

# Whole submodules: (namespace, name, module path).
MODULES = []


@hookimpl
def flax_exports():
  return (
    [Export('flax.linen', n, f'flax.layers.linen:{n}') for n in LINEN]
    + [Export('flax.nnx', n, f'flax.layers.nnx:{n}') for n in NNX]
    + [Export(ns, n, module) for ns, n, module in MODULES]
  )
