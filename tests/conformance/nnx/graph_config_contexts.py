"""set_graph_mode / set_graph_updates as a call, a context manager and a
decorator, and their defaults from flax.config."""

import flax
import report
from flax import nnx

for name in ('set_graph_updates', 'set_graph_mode'):
  S = getattr(nnx, name)
  log = [S.get_default(), S.current_value(), list(S.get_stack())]
  S(False)
  log.append(list(S.get_stack()))
  with S(True) as entered:
    log.append([entered, list(S.get_stack())])
    S(False)
    log.append(list(S.get_stack()))
  log.append([list(S.get_stack()), S.current_value()])
  S(True)
  log.append(list(S.get_stack()))

  @S(False)
  def f():
    return list(S.get_stack())

  log.append([list(S.get_stack()), f(), list(S.get_stack())])
  report.value(name, log)
  S.get_stack().clear()

flax.config.update('nnx_graph_updates', False)
report.value(
  'flag-default',
  [nnx.set_graph_updates.get_default(), nnx.set_graph_updates.current_value()],
)
flax.config.update('nnx_graph_updates', True)
report.value(
  'config-flags', [flax.config.nnx_graph_mode, flax.config.nnx_graph_updates]
)
