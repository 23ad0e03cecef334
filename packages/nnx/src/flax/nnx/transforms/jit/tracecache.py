"""Trace caching for transforms called eagerly.

A transform whose body is compiled by JAX (``nnx.scan``) traces that body
on every call when it runs outside any JAX trace. :class:`EagerCache` runs
such calls through the ``nnx.jit`` machinery instead (:mod:`flatcall`):
the arguments' structure (pytree structure, graphdefs, Variable metadata)
keys one ``jax.jit``-compiled version of the transform, so the body is
traced once per structure and input shapes, the way ``nnx.jit`` caches
its traces. Under a trace (inside ``nnx.jit``, ``jax.grad``, ...) the
transform runs directly: the enclosing trace is the one that is cached.

>>> import jax.numpy as jnp
>>> from flax import nnx
>>> traces = []
>>> @nnx.scan
... def step(c, x):
...   traces.append(1)
...   return c + 1, x * 2
>>> for _ in range(3):
...   c, ys = step(jnp.array(0), jnp.arange(4))
>>> len(traces), int(c)
(1, 4)
"""

from jax._src import core

from flax.nnx.transforms.jit import flatcall


def top_level() -> bool:
  """Whether no JAX trace is active (an eager call)."""
  return isinstance(core.trace_ctx.trace, core.EvalTrace)


class EagerCache:
  """Runs ``run(*args, **kwargs)`` eagerly through one compiled function
  per call structure.

  Args:
    run: the transform's call, traced once per structure.
    name: the transform's name in error messages.
    keep_order: whether the inputs keep their attribute order (transforms
      without graph updates); graph updates leave them sorted, as
      ``nnx.jit`` does.
  """

  __slots__ = ('run', 'name', 'keep_order', 'entries', 'memo')

  def __init__(self, run, name: str, keep_order: bool):
    self.run = run
    self.name = name
    self.keep_order = keep_order
    self.entries: dict = {}
    self.memo = [None]

  def __call__(self, *args, **kwargs):
    if not top_level():
      return self.run(*args, **kwargs)
    memo = self.memo
    if memo[0] is not None and not kwargs:
      out = flatcall.run_memo(memo[0], args)
      if out is not flatcall.NOT_FAST:
        return out
    out = flatcall.run(
      self.entries,
      None,
      (args, kwargs),
      self._compile,
      None if kwargs else memo,
    )
    if out is flatcall.NOT_FAST:
      # an object reachable twice among the arguments: run uncached (the
      # transform handles, or rejects, the sharing itself)
      return self.run(*args, **kwargs)
    return out

  def _compile(self, call):
    run = self.run

    def body(tree):
      args, kwargs = tree
      return run(*args, **kwargs)

    entry = flatcall.make_entry(
      call, body, {}, set(), graph_updates=True, name=self.name
    )
    entry.orders = not self.keep_order
    entry.metadata = True  # metadata set inside comes back, as unjitted
    entries = self.entries
    if len(entries) >= flatcall._MAX_ENTRIES:
      entries.clear()
    entries[call.key] = entry
    return entry
