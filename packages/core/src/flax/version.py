"""Version of the flax-core distribution (and so of ``flax.__version__``)."""

__version__ = '0.12.0'
