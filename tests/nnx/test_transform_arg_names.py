"""JAX's errors inside NNX transforms name the user function's arguments."""

import jax.numpy as jnp
import pytest

from flax import nnx

MODES = [{}, {'graph': False}, {'graph_updates': False}]


@pytest.mark.parametrize('kw', MODES)
def test_vmap_size_mismatch_names_arguments(kw):
  with pytest.raises(ValueError) as info:
    nnx.vmap(lambda a, b: a + b, **kw)(jnp.ones(3), jnp.ones(4))
  assert str(info.value) == (
    'vmap got inconsistent sizes for array axes to be mapped:\n'
    '  * one axis had size 3: axis 0 of argument a of type float32[3];\n'
    '  * one axis had size 4: axis 0 of argument b of type float32[4]'
  )


@pytest.mark.parametrize('kw', MODES)
def test_grad_non_scalar_output(kw):
  with pytest.raises(TypeError, match=r'Output had shape: \(3,\)'):
    nnx.grad(lambda a, b: a, **kw)(jnp.ones(3), 1.0)


def test_wrapper_classes_keep_their_constructor_signature():
  import inspect

  from flax.nnx.transforms.autodiff import GradFn
  from flax.nnx.transforms.iteration import SimpleVmapFn, VmapFn

  assert 'transform_metadata' in inspect.signature(VmapFn).parameters
  assert 'update_axes' in inspect.signature(SimpleVmapFn).parameters
  assert 'has_aux' in inspect.signature(GradFn).parameters
