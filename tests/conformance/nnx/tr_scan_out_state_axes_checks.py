"""nnx.scan (graph mode, graph updates): an output StateAxes entry that
broadcasts or carries a substate is refused when scan is created."""

import report
from flax import nnx

CASES = {
  'ellipsis-none': (nnx.Carry, nnx.StateAxes({...: None})),
  'param-0-rest-none': (nnx.Carry, nnx.StateAxes({nnx.Param: 0, ...: None})),
  'param-none-rest-carry': (
    nnx.Carry,
    nnx.StateAxes({nnx.Param: None, ...: nnx.Carry}),
  ),
  'param-carry-rest-none': (
    nnx.Carry,
    nnx.StateAxes({nnx.Param: nnx.Carry, ...: None}),
  ),
  'ellipsis-carry': (nnx.Carry, nnx.StateAxes({...: nnx.Carry})),
  'nested': (nnx.Carry, [nnx.StateAxes({'a': 0, 'b': None})]),
  'in-dict': (nnx.Carry, {'k': nnx.StateAxes({...: None})}),
  'top-level': nnx.StateAxes({...: None}),
  'stacked': (nnx.Carry, nnx.StateAxes({...: 0})),
}

for name, out_axes in CASES.items():
  try:
    nnx.scan(
      lambda c, x: (c, x),
      in_axes=(nnx.Carry, 0),
      out_axes=out_axes,
      graph=True,
      graph_updates=True,
    )
  except ValueError as e:
    report.text(name, str(e).split(';')[0])
  else:
    report.value(name, 'created')
