"""The name recordings hold (``metadata.executor``): ``core.sample_agent:make_executor``."""

from .examples.sample_agent import make_executor as make_executor
