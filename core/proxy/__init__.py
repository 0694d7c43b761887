"""The local model-API proxy: record and replay any agent, in any language, at the
boundary it already has — its OpenAI or Anthropic SDK (docs/proxy.md).

* :func:`~core.proxy.recorder.record_command` — ``record``: run a command with its SDKs'
  base URLs pointed at a loopback proxy that forwards to the real upstream and records
  every model exchange (and the tool calls the agent ran itself, observed);
* :class:`~core.proxy.command.CommandExecutor` — ``--executor 'cmd:CMD ARGS…'``: replay
  a recording by running the command again against the proxy in replay mode, every
  request answered by the replay engine's answer chain in the wire shape it asked for;
* :class:`~core.proxy.provider.ProviderExecutor` — ``--executor provider:openai`` /
  ``provider:anthropic``: a branch's model calls the recording cannot answer sent live
  to an OpenAI- or Anthropic-compatible endpoint, tools never run.

Layering: the proxy sits above the importers (it reads the wire formats with
:mod:`core.importers._llm_api`) and below the replay engine, which it reaches only
through the runtime object an executor is given.
"""

from .command import SIDE_EFFECTS_NOTE, CommandExecutor, parse_command_spec
from .provider import ProviderExecutor, parse_provider_spec
from .recorder import RecordResult, record_command

__all__ = [
    "SIDE_EFFECTS_NOTE",
    "CommandExecutor",
    "ProviderExecutor",
    "RecordResult",
    "parse_command_spec",
    "parse_provider_spec",
    "record_command",
]
