"""The staged objects of ``nnx.jit``: ``.trace(...)`` gives a Traced,
``.lower(...)`` a Lowered, ``Lowered.compile()`` a Compiled.

Each wraps the ``jax.stages`` object of the pure function ``nnx.jit``
compiles and the jitted function it came from (``jit_wrapped``). A
Compiled is called like the jitted function, with graph nodes: Variable
updates reach the inputs and graph nodes in the outputs are rebuilt.
``Simple*`` classes come from jitted functions without graph updates
(``graph=False`` or ``graph_updates=False``), ``SimplePartial*`` from
``nnx.jit_partial``.

>>> from flax import nnx
>>> import jax.numpy as jnp
>>> class Counter(nnx.Module):
...   def __init__(self):
...     self.n = nnx.BatchStat(jnp.array(0))
>>> def step(c, k):
...   c.n[...] += k
...   return c.n[...]
>>> c = Counter()
>>> lowered = nnx.jit(step).lower(c, 2)
>>> type(lowered).__name__, 'module' in lowered.as_text()
('Lowered', True)
>>> compiled = lowered.compile()
>>> int(compiled(c, 2)), int(compiled(c, 3)), int(c.n[...])
(2, 5, 5)
"""

import jax
from jax._src.stages import make_args_info


def _delegate(holder: str, name: str) -> property:
  """A read-only property: ``self.<holder>.<name>``."""
  return property(lambda self: getattr(getattr(self, holder), name))


class Stage:
  """What every staged object has: the input pytree structure, abstract
  values and donated positions of the pure function."""

  _attr = ''

  @property
  def _jax(self):
    return getattr(self, self._attr)

  in_tree = _delegate('_jax', 'in_tree')

  in_avals = _delegate('_jax', 'in_avals')

  donate_argnums = _delegate('_jax', 'donate_argnums')


class Traced(Stage):
  """A traced ``nnx.jit`` function (``jit_fn.trace(*args)``)."""

  _attr = 'traced'

  def __init__(self, traced: jax.stages.Traced, jit_wrapped) -> None:
    self.traced = traced
    self.jit_wrapped = jit_wrapped

  def __repr__(self):
    return f'{type(self).__name__}({self.traced!r})'

  @property
  def out_info(self):
    return self.traced.out_info

  def lower(self, *, lowering_platforms=None):
    lowered = self.traced.lower(lowering_platforms=lowering_platforms)
    return self.jit_wrapped._stages[1](lowered, self.jit_wrapped)


class Lowered(Stage):
  """A lowered ``nnx.jit`` function (``jit_fn.lower(*args)``)."""

  _attr = 'lowered'

  def __init__(self, lowered: jax.stages.Lowered, jit_wrapped) -> None:
    self.lowered = lowered
    self.jit_wrapped = jit_wrapped

  def __repr__(self):
    return f'{type(self).__name__}({self.lowered!r})'

  @classmethod
  def from_flat_info(
    cls,
    lowering,
    in_tree,
    in_avals,
    donate_argnums,
    out_tree,
    no_kwargs=False,
  ):
    """A Lowered (with no jitted function to call back into) from a JAX
    lowering and the flat facts of its inputs and outputs."""

    args_info = make_args_info(in_tree, in_avals, donate_argnums)
    lowered = jax.stages.Lowered(lowering, args_info, out_tree, no_kwargs)
    return cls(lowered, None)

  args_info = _delegate('lowered', 'args_info')

  out_tree = _delegate('lowered', 'out_tree')

  def as_text(self, dialect=None, *, debug_info=False) -> str:
    return self.lowered.as_text(dialect, debug_info=debug_info)

  def compiler_ir(self, dialect=None):
    return self.lowered.compiler_ir(dialect)

  def cost_analysis(self):
    return self.lowered.cost_analysis()

  def compile(self, compiler_options=None):
    compiled = self.lowered.compile(compiler_options)
    return self.jit_wrapped._stages[2](compiled, self.jit_wrapped)


class Compiled(Stage):
  """A compiled ``nnx.jit`` function; called with the arguments of the
  jitted function (graph nodes included)."""

  _attr = 'compiled'

  def __init__(self, compiled: jax.stages.Compiled, jit_wrapped) -> None:
    self.compiled = compiled
    self.jit_wrapped = jit_wrapped

  def __repr__(self):
    return f'{type(self).__name__}({self.compiled!r})'

  def __call__(self, *args, **kwargs):
    if self.jit_wrapped is None:
      raise ValueError(
        'This Compiled has no jitted function to convert its arguments '
        '(built from flat lowering facts): call .compiled with the pure '
        'arguments instead.'
      )
    return self.jit_wrapped._call_compiled(self.compiled, args, kwargs)

  @staticmethod
  def call(*args, **kwargs):
    """``Compiled.call(compiled, *args)``: the same as
    ``compiled(*args)``."""
    compiled, *args = args
    return compiled(*args, **kwargs)

  args_info = _delegate('compiled', 'args_info')

  out_tree = _delegate('compiled', 'out_tree')

  input_shardings = _delegate('compiled', 'input_shardings')

  output_shardings = _delegate('compiled', 'output_shardings')

  input_layouts = _delegate('compiled', 'input_formats')

  def as_text(self):
    return self.compiled.as_text()

  def cost_analysis(self):
    return self.compiled.cost_analysis()

  def memory_analysis(self):
    return self.compiled.memory_analysis()

  def runtime_executable(self):
    return self.compiled.runtime_executable()


class SimpleTraced(Traced):
  """:class:`Traced` of a jitted function without graph updates."""


class SimpleLowered(Lowered):
  """:class:`Lowered` of a jitted function without graph updates."""


class SimpleCompiled(Compiled):
  """:class:`Compiled` of a jitted function without graph updates."""


class SimplePartialTraced(Traced):
  """:class:`Traced` of an ``nnx.jit_partial`` function."""


class SimplePartialLowered(Lowered):
  """:class:`Lowered` of an ``nnx.jit_partial`` function."""


class SimplePartialCompiled(Compiled):
  """:class:`Compiled` of an ``nnx.jit_partial`` function (called without
  the bound arguments)."""
