"""A graph's cached flat view does not keep the graph alive: objects passed
to a transform are freed by reference counting when the user drops them,
so their arrays go at once (as in Flax 0.12.8), not at the next run of
Python's cycle collector."""

import pathlib
import sys
import functools
import gc
import weakref

import pytest

import jax
import jax.numpy as jnp
from flax import nnx
from flax.nnx import graphlib

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import stand_in_layers  # noqa: E402


@pytest.fixture
def no_cycle_collector():
  gc.collect()
  gc.disable()
  try:
    yield
  finally:
    gc.enable()


class TwoLayerMLP(nnx.Module):
  def __init__(self, dim, rngs):
    self.linear1 = stand_in_layers.Linear(dim, dim, rngs=rngs)
    self.linear2 = stand_in_layers.Linear(dim, dim, rngs=rngs)

  def __call__(self, x):
    return self.linear2(self.linear1(x))


def _live():
  return len(jax.live_arrays())


def test_partial_init_surgery_adds_six_arrays(no_cycle_collector):
  old_state = nnx.state(TwoLayerMLP(4, rngs=nnx.Rngs(0)))

  @functools.partial(nnx.jit, donate_argnums=0)
  def partial_init(old_state, rngs):
    model = TwoLayerMLP(4, rngs=rngs)
    model.linear1 = stand_in_layers.LoRALinear(4, 4, lora_rank=3, rngs=rngs)
    nnx.update(model, old_state)
    return model

  for _ in range(2):  # compiled, then cached
    start = _live()
    model = partial_init(old_state, nnx.Rngs(42))
    # 6 of the model's 8 arrays (the 4 others are old_state's, which CPU
    # does not donate); the temporary Rngs is gone. Flax 0.12.8: 6.
    assert _live() - start == 6
    del model
  x = jnp.ones((1, 4))
  model = partial_init(old_state, nnx.Rngs(42))
  assert model(x).shape == (1, 4)


@pytest.mark.parametrize(
  'call',
  [
    lambda r: nnx.jit(lambda r: r.default())(r),
    lambda r: nnx.jit(lambda r: stand_in_layers.Linear(2, 2, rngs=r))(r),
    lambda r: nnx.split(r),
    lambda r: nnx.state(r),
    lambda r: nnx.grad(lambda m, x: m(x).sum())(
      stand_in_layers.Linear(2, 2, rngs=r), jnp.ones((1, 2))
    ),
  ],
)
@pytest.mark.parametrize('graph', [True, False])
def test_transform_arguments_freed_by_refcount(no_cycle_collector, call, graph):
  with nnx.set_graph_mode(graph):
    rngs = nnx.Rngs(42)
    call(rngs)  # builds (and caches) the flat view of rngs
    ref = weakref.ref(rngs)
    start = _live()
    del rngs
    assert ref() is None
    assert _live() - start == -2  # its key and count


def test_view_is_kept_and_invalidated_by_root_changes():
  model = TwoLayerMLP(2, rngs=nnx.Rngs(0))
  view = graphlib.flat_view(model)
  assert graphlib.flat_view(model) is view
  assert view.nodes[0] is model
  assert view.nodes[1:] == [n for n in view.nodes if n is not model]
  model.extra = nnx.Param(jnp.zeros(1))  # an attribute set on the root
  rebuilt = graphlib.flat_view(model)
  assert rebuilt is not view
  assert ('extra',) in rebuilt.paths
  model.linear1.extra = nnx.Param(jnp.zeros(1))  # and on a child
  again = graphlib.flat_view(model)
  assert again is not rebuilt
  assert ('linear1', 'extra') in again.paths


def test_uncached_views_keep_their_nodes():
  # Views of other roots (a list, a Variable) are not kept by a record:
  # they hold their nodes strongly, for as long as a caller uses them.
  layers = [stand_in_layers.Linear(2, 2, rngs=nnx.Rngs(0))]
  view = graphlib.flat_view(layers)
  ref = weakref.ref(layers[0])
  del layers
  assert view.nodes[0] is ref() is not None
  variable = nnx.Param(jnp.zeros(1))
  view = graphlib.flat_view(variable)
  del variable
  assert isinstance(view.nodes[0], nnx.Param)
