"""The module paths flax.nnx.graph / extract / proxy_caller / traversals
and the identity of re-exported names."""

import flax
import flax.typing
import report
from flax import nnx
from flax.nnx import extract, graphlib, proxy_caller, statelib, traversals
import flax.nnx.graph as graph

report.value('graph', [graph.__name__, graph is graphlib, nnx.graph is graph])
report.value(
  'same-objects',
  [
    graph.GraphDef is graphlib.GraphDef,
    graph.set_graph_mode is graphlib.set_graph_mode,
    nnx.set_graph_mode is graphlib.set_graph_mode,
  ],
)
report.value(
  'typing',
  [
    graphlib.BaseConfigContext is flax.typing.BaseConfigContext,
    graphlib.HashableMapping is flax.typing.HashableMapping,
    graphlib.Key is flax.typing.Key,
    statelib.Key is flax.typing.Key,
  ],
)
report.value(
  'proxy',
  [
    graphlib.ApplyCaller is proxy_caller.ApplyCaller,
    graphlib.CallableProxy is proxy_caller.CallableProxy,
    graphlib.DelayedAccessor is proxy_caller.DelayedAccessor,
  ],
)
report.value(
  'config',
  [
    graphlib.config is flax.config,
    graphlib.is_key_like is flax.typing.is_key_like,
  ],
)
report.value(
  'extract',
  [
    extract.State is statelib.State,
    extract.Pytree is nnx.Pytree,
    extract.Missing is flax.typing.Missing,
  ],
)
report.value(
  'reexports',
  [
    graphlib.vars_as is nnx.vars_as,
    graphlib.set_metadata is nnx.set_metadata,
    graphlib.GraphState is nnx.GraphState,
  ],
)
report.value(
  'attrs',
  [
    nnx.extract is extract,
    nnx.proxy_caller is proxy_caller,
    nnx.traversals is traversals,
  ],
)
acc = proxy_caller.DelayedAccessor().real
report.value('accessor', acc(3 + 4j))
proxy = proxy_caller.CallableProxy(
  lambda a, *args: a({'f': lambda x: x + 1})(*args)
)
report.value('proxy-call', proxy['f'](1))
