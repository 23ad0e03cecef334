"""Helpers to put a Linen or NNX layer inside a bridge :class:`Module`.

``nnx_in_bridge_mdl`` builds an NNX layer from a factory of ``rngs`` as a
child of the bridge Module being defined, and ``linen_in_bridge_mdl`` wraps
a Linen Module in :class:`~flax.nnx.bridge.ToNNX` as such a child; both give
the child the next automatic name (``'ToNNX_0'``, ``'Linear_0'``, ...) when
``name`` is None. They must be called inside a method of a bridge Module
run by ``init`` or ``apply``; outside a method wrapped in
:func:`~flax.nnx.bridge.compact` (e.g. in ``setup``) the child is only
built, and is named by the attribute it is assigned to.

``nnx_jit`` and ``nnx_eval_shape`` are :func:`flax.nnx.jit` and
:func:`flax.nnx.eval_shape`.
"""

from __future__ import annotations

import typing as tp

from flax import linen
from flax.nnx.bridge import module as bdg_module
from flax.nnx.bridge import wrappers
from flax.nnx.module import Module
from flax.nnx.rnglib import Rngs
from flax.nnx.transforms.compilation import jit as nnx_jit
from flax.nnx.transforms.general import eval_shape as nnx_eval_shape

__all__ = [
  'linen_in_bridge_mdl',
  'nnx_eval_shape',
  'nnx_in_bridge_mdl',
  'nnx_jit',
]


def nnx_in_bridge_mdl(
  factory: tp.Callable[[Rngs], Module], name: str | None = None
) -> Module:
  """Builds ``factory(rngs)`` with the running bridge Module's Rngs and
  attaches it under ``name``; later calls return the attached child."""
  return bdg_module.attach_child(
    bdg_module.current_module(),
    name,
    factory,
    helper='nnx_in_bridge_mdl',
  )


def linen_in_bridge_mdl(
  linen_module: linen.Module, name: str | None = None
) -> Module:
  """Wraps ``linen_module`` in :class:`~flax.nnx.bridge.ToNNX` as a child of
  the current bridge Module (see :func:`nnx_in_bridge_mdl`)."""
  return bdg_module.attach_child(
    bdg_module.current_module(),
    name,
    lambda rngs: wrappers.ToNNX(linen_module, rngs=rngs),
    type(linen_module),
    helper='linen_in_bridge_mdl',
  )
