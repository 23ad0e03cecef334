"""Tests of flax.errors."""

import pickle

import pytest

from flax import errors

LINK = 'docs: api/errors.html'

# Every error class with its constructor arguments and its message.
CASES = [
  (
    errors.AlreadyExistsError,
    ('ckpt',),
    'Trying overwrite an existing file: "ckpt".',
  ),
  (
    errors.ApplyModuleInvalidMethodError,
    ('nope',),
    'Cannot call apply(): nope is not a valid function for apply().',
  ),
  (
    errors.ApplyScopeInvalidVariablesStructureError,
    ({},),
    'Expect the `variables` (first argument) passed to apply() to be a dict '
    'with the structure {"params": ...}, but got a dict with an extra params '
    'layer, i.e.  {"params": {"params": ... } }. You should instead pass in '
    'your dict\'s ["params"].',
  ),
  (
    errors.ApplyScopeInvalidVariablesTypeError,
    (),
    'The first argument passed to an apply function should be a dictionary '
    'of collections. Each collection should be a dictionary with string '
    'keys.',
  ),
  (
    errors.AssignSubModuleError,
    ('Conv',),
    'Submodule Conv must be defined in `setup()` or in a method wrapped in '
    '`@compact`',
  ),
  (
    errors.CallCompactUnboundModuleError,
    (),
    "Can't call compact methods on unbound modules",
  ),
  (
    errors.CallSetupUnboundModuleError,
    (),
    "Can't call compact methods on unbound modules",
  ),
  (
    errors.CallShareScopeOnUnboundModuleError,
    (),
    "Can't call `share_scope` on unbound modules",
  ),
  (
    errors.CallUnbindOnUnboundModuleError,
    (),
    "Can't call `unbind()` on unbound modules",
  ),
  (
    errors.DescriptorAttributeError,
    (),
    'Trying to access a property that is accessing a non-existent attribute.',
  ),
  (
    errors.IncorrectPostInitOverrideError,
    (),
    'Overrode `.__post_init__()` without calling `super().__post_init__()`',
  ),
  (
    errors.InvalidCheckpointError,
    ('/tmp/c', 3),
    'Trying to save an outdated checkpoint at step: "3" and path: "/tmp/c".',
  ),
  (errors.InvalidFilterError, (3,), 'Invalid Filter: "3"'),
  (
    errors.InvalidInstanceModuleError,
    (),
    'Can only call init, init_with_output or apply methods on an instance of '
    'the Module class, not the Module class itself',
  ),
  (
    errors.InvalidRngError,
    ('Dropout_0 needs PRNG for "dropout"',),
    'Dropout_0 needs PRNG for "dropout"',
  ),
  (errors.InvalidScopeError, ('s',), 'The scope "s" is no longer valid.'),
  (
    errors.JaxTransformError,
    (),
    'Jax transforms and Flax models cannot be mixed.',
  ),
  (
    errors.LazyInitError,
    ((1, 2),),
    'Lazy init encountered a value that could with the given inputs '
    '(shape: (1, 2)).',
  ),
  (
    errors.MPACheckpointingRequiredError,
    ('p', 1),
    'Checkpoint failed at step: "1" and path: "p": Target contains a '
    'multiprocess array should be saved/restored with a '
    'GlobalAsyncCheckpointManager.',
  ),
  (
    errors.MPARestoreDataCorruptedError,
    (1, 'p'),
    'Restore checkpoint failed at step: "1" on multiprocess array at  "p": '
    'No "commit_success.txt" found on this "_gda" directory. Was its save '
    'halted before completion?',
  ),
  (
    errors.MPARestoreTypeNotMatchError,
    (1, 'p'),
    'Restore checkpoint failed at step: "1" on multiprocess array at  "p": '
    'The array type provided by the target does not match the JAX global '
    'configuration, namely the jax.config.jax_array.',
  ),
  (
    errors.ModifyScopeVariableError,
    ('batch_stats', 'mean', '/'),
    'Cannot update variable "mean" in "/" because collection "batch_stats" '
    'is immutable.',
  ),
  (
    errors.MultipleMethodsCompactError,
    (),
    'Only one method per class can be @compact',
  ),
  (
    errors.NameInUseError,
    ('submodule', 'bar', 'Foo'),
    'Could not create submodule "bar" in Module Foo: Name in use.',
  ),
  (
    errors.PartitioningUnspecifiedError,
    ('box',),
    'Trying to transform a Partitioned variable but "partition_name" is not '
    'specified in metadata_params: box',
  ),
  (
    errors.ReservedModuleAttributeError,
    ({'name': str},),
    "properties `parent` and `name` are reserved: {'name': <class 'str'>}",
  ),
  (
    errors.ScopeCollectionNotFound,
    ('batch_stats', 'mean', '/BatchNorm_0'),
    'Tried to access "mean" from collection "batch_stats" in "/BatchNorm_0" '
    'but the collection is empty.',
  ),
  (
    errors.ScopeParamNotFoundError,
    ('embed', '/'),
    'Could not find parameter named "embed" in scope "/".',
  ),
  (
    errors.ScopeParamShapeError,
    ('kernel', '/', (5, 3), (6, 3)),
    'For parameter "kernel" in "/", the given initializer is expected to '
    'generate shape (6, 3), but the existing parameter it received has '
    'shape (5, 3).',
  ),
  (
    errors.ScopeVariableNotFoundError,
    ('mean', 'stats', '/'),
    'No Variable named "mean" for collection "stats" exists in "/".',
  ),
  (
    errors.SetAttributeFrozenModuleError,
    ('SomeModule', 'num_features', 10),
    "Can't set num_features=10 for Module of type SomeModule: Module "
    'instance is frozen outside of setup method.',
  ),
  (
    errors.SetAttributeInModuleSetupError,
    (),
    'Module construction attributes are frozen.',
  ),
  (
    errors.TransformTargetError,
    ('Dense(3)',),
    'Linen transformations must be applied to Modules classes or functions '
    'taking a Module instance as the first argument. The provided target is '
    'not a Module class or callable: Dense(3)',
  ),
  (
    errors.TransformedMethodReturnValueError,
    ('__call__',),
    'Transformed module method __call__ cannot return Modules or Variables.',
  ),
  (errors.TraceContextError, ('bad trace',), 'bad trace'),
  (errors.ImmutableVariableError, ('frozen',), 'frozen'),
  (
    errors.CursorFindError,
    (),
    'No object found given the conditions of the cond_fn.',
  ),
  (
    errors.TraverseTreeError,
    (None, None),
    'Both update_fn and cond_fn are None. Exactly one of them must be None.',
  ),
]


@pytest.mark.parametrize(
  'cls,args,message', CASES, ids=[c[0].__name__ for c in CASES]
)
def test_message_and_link(cls, args, message):
  error = cls(*args)
  assert isinstance(error, errors.FlaxError)
  assert isinstance(error, Exception)
  assert str(error) == f'{message} ({LINK}#flax.errors.{cls.__name__})'


def test_every_flax_0_6_error_class_exists():
  names = {
    'AlreadyExistsError',
    'ApplyModuleInvalidMethodError',
    'ApplyScopeInvalidVariablesStructureError',
    'ApplyScopeInvalidVariablesTypeError',
    'AssignSubModuleError',
    'CallCompactUnboundModuleError',
    'CallSetupUnboundModuleError',
    'CallUnbindOnUnboundModuleError',
    'DescriptorAttributeError',
    'IncorrectPostInitOverrideError',
    'InvalidCheckpointError',
    'InvalidFilterError',
    'InvalidInstanceModuleError',
    'InvalidRngError',
    'InvalidScopeError',
    'JaxTransformError',
    'LazyInitError',
    'MPACheckpointingRequiredError',
    'MPARestoreDataCorruptedError',
    'MPARestoreTargetRequiredError',
    'MPARestoreTypeNotMatchError',
    'ModifyScopeVariableError',
    'MultipleMethodsCompactError',
    'NameInUseError',
    'PartitioningUnspecifiedError',
    'ReservedModuleAttributeError',
    'ScopeCollectionNotFound',
    'ScopeParamNotFoundError',
    'ScopeParamShapeError',
    'ScopeVariableNotFoundError',
    'SetAttributeFrozenModuleError',
    'SetAttributeInModuleSetupError',
    'TransformTargetError',
    'TransformedMethodReturnValueError',
  }
  assert len(names) == 34
  assert names <= set(errors.__all__)
  tested = {c[0].__name__ for c in CASES} | {'MPARestoreTargetRequiredError'}
  assert set(errors.__all__) - {'FlaxError'} == tested


def test_mpa_restore_target_required_with_and_without_key():
  base = (
    'Restore checkpoint failed at step: "2" and path: "p": Checkpoints '
    'containing a multiprocess array need to be restored with a target with '
    'pre-created arrays. If you cannot provide a full valid target, consider '
    '``allow_partial_mpa_restoration=True``. '
  )
  # Flax's message ends with a space, so two spaces precede the link.
  assert str(errors.MPARestoreTargetRequiredError('p', 2)).startswith(
    base + ' (docs: '
  )
  with_key = str(errors.MPARestoreTargetRequiredError('p', 2, key='a/b'))
  assert with_key.startswith(
    base + 'This error fired when trying to restore array at a/b. (docs: '
  )


def test_cursor_find_error_with_two_matches():
  from flax.cursor import cursor

  assert str(errors.CursorFindError(cursor([1]), cursor([2]))).startswith(
    'More than one object found given the conditions of the cond_fn. The '
    'first two objects found have the following paths:  and  '
  )
  c = cursor({'a': [{'b': 1}]})
  assert str(errors.CursorFindError(c['a'][0], c['a'])).startswith(
    'More than one object found given the conditions of the cond_fn. The '
    "first two objects found have the following paths: ['a'][0] and ['a'] "
  )
  # An empty value makes a cursor falsy: the message is the no-match one.
  c = cursor({'a': [{}]})
  assert str(errors.CursorFindError(c['a'][0], c['a'])).startswith(
    'No object found given the conditions of the cond_fn.'
  )


def test_errors_can_be_raised_caught_and_pickled():
  with pytest.raises(errors.FlaxError, match='Could not find parameter'):
    raise errors.ScopeParamNotFoundError('w', '/')
  error = errors.NameInUseError('param', 'w', 'Foo')
  restored = pickle.loads(pickle.dumps(error))
  assert type(restored) is errors.NameInUseError
  assert str(restored) == str(error)
  assert (
    error.message == 'Could not create param "w" in Module Foo: Name in use.'
  )
