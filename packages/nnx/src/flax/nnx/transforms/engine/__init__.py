"""The transform engine: what every NNX transform is built on.

How graph nodes cross a JAX transform (:mod:`.common`: extraction of the
graph roots, their flat states, and the rebuild inside and out), the
functions handed to JAX (:mod:`._fns`), prefixes over graph nodes
(:mod:`._prefix`, :mod:`._axes`, :mod:`._axis_metadata`), the pytree modes
(:mod:`.treemode`, :mod:`.varflow`, :mod:`.leafplan`), the markers users
pass (:mod:`.types`: ``StateAxes``, ``DiffState``, ``Carry``...) and the
``jax.Ref`` s that cross a transform, aliased or returned (:mod:`.refout`).

The transform families sit beside this package in :mod:`flax.nnx.transforms`.
"""
