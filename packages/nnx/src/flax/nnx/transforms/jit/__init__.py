"""The parts of ``nnx.jit`` (:mod:`flax.nnx.transforms.compilation`) below
its public module: the functions it hands to ``jax.jit`` (:mod:`.jitfns`),
its fast paths (:mod:`.flatcall` in graph mode, :mod:`.treecall` in tree
mode), its staged objects (:mod:`.stages`: ``trace`` / ``lower`` /
``compile``), and the trace cache through which other transforms called
eagerly (``nnx.scan``, ...) reuse its machinery (:mod:`.tracecache`).
"""
