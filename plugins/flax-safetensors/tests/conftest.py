"""Eight CPU devices for the sharding tests (set before JAX starts)."""

import os

_DEVICES = '--xla_force_host_platform_device_count=8'
if 'xla_force_host_platform_device_count' not in os.environ.get(
  'XLA_FLAGS', ''
):
  os.environ['XLA_FLAGS'] = (
    f'{os.environ.get("XLA_FLAGS", "")} {_DEVICES}'.strip()
  )
os.environ.setdefault('JAX_PLATFORMS', 'cpu')
