"""NNX transforms: lifted versions of JAX transforms over graph nodes.

:mod:`.engine` is what every transform is built on. Each family has its
modules here: ``nnx.jit`` in :mod:`.compilation` (its parts in :mod:`.jit`)
with ``nnx.cached_partial`` in :mod:`.cachedpartial`; autodiff in
:mod:`.autodiff` and :mod:`.customvjp`; the mapped transforms in
:mod:`.iteration` (vmap, pmap), :mod:`.scanning` (scan) and
:mod:`.shardmap`; control flow and the generic lifting in :mod:`.general`
and :mod:`.transforms`.
"""
