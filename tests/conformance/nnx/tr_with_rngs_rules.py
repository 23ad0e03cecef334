"""nnx.with_rngs: which of split / broadcast / fork a stream takes, and the
error for a stream two explicit rules name (graph and tree mode)."""

import report
from flax import nnx


def show(r):
  return {
    k: [list(v.key.shape), v.count[...].tolist()] for k, v in sorted(r.items())
  }


CASES = {
  'split-fork': dict(split={'params': 4}, fork='params'),
  'split-broadcast': dict(split={'params': 4}, broadcast={'params': 2}),
  'broadcast-fork': dict(broadcast={'params': 2}, fork=('dropout', 'params')),
  'three': dict(split={'params': 4}, broadcast={...: 2}, fork='params'),
  'everything-is-explicit': dict(split={nnx.Everything(): 4}, fork='params'),
  'split-default': dict(split=4, fork='params'),
  'broadcast-default-wins-fork': dict(fork='params', broadcast={...: 2}),
  'fork-default': dict(split={'params': 4}, fork=...),
  'fork-true': dict(split={'params': 4}, fork=(True,)),
  'fork-first-default': dict(split={'params': 4}, fork=[..., 'params']),
  'mapping-first-match': dict(split={...: 2, 'params': 4}, fork='params'),
  'disjoint': dict(split={'params': 4}, broadcast={'dropout': 3}),
  'only-excludes': dict(split={'params': 4}, fork='params', only='dropout'),
}

for graph in (False, True):
  for name, kwargs in CASES.items():
    rngs = nnx.Rngs(params=0, dropout=1)
    label = f'{name}-graph={graph}'
    try:
      out = nnx.with_rngs(rngs, graph=graph, graph_updates=False, **kwargs)
    except ValueError as e:
      report.text(label, str(e))
    else:
      report.value(label, show(out))
    report.value(label + '-original', show(rngs))


@nnx.with_rngs(split={'params': 2}, broadcast={'params': 3}, graph=False)
def f(tree):
  return tree


with report.raises('decorator'):
  f({'a': nnx.Rngs(params=0)})
try:
  f({'a': nnx.Rngs(params=0)})
except ValueError as e:
  report.text('decorator-message', str(e))
