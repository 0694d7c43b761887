"""Ray, the optional engine that runs sweeps and batches on a cluster (``--ray-address``).

Ray is an optional extra (``pip install 'chassis-inspector[ray]'``): nothing imports it
until :func:`ray_connection` is entered. The address is what ``ray.init(address=...)``
takes — ``auto``, ``HOST:PORT`` of a running cluster's head, or ``ray://HOST:PORT``
(Ray Client, which needs ``ray[client]``) — or ``local``: start a Ray instance in this
process for the duration (no dashboard), as a laptop's "cluster".

Tasks run the same functions as the local worker processes, so the files they read
(recordings, a workspace folder, an outcome predicate's module) must be reachable from
every node at the same paths: on one machine they are; on a cluster, a shared folder.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from ..errors import AnalysisError

__all__ = ["LOCAL", "RAY_INSTALL", "RayError", "import_ray", "ray_connection", "ray_results"]

RAY_INSTALL = "pip install 'chassis-inspector[ray]'"
"""How to install the optional Ray extra (what the error says)."""

LOCAL = "local"
"""The ``--ray-address`` that starts a Ray instance in this process."""


class RayError(AnalysisError):
    """Ray is not installed, or the cluster at the address cannot be reached; the
    message says how to install it or names the address and Ray's reason."""

    title = "ray"


def import_ray() -> ModuleType:
    """The ``ray`` module. Raises RayError saying how to install it when it is missing
    (:data:`RAY_INSTALL`)."""
    try:
        ray: ModuleType = importlib.import_module("ray")  # an optional extra: typed the same with or without it
    except ImportError as exc:
        raise RayError(
            f"--ray-address needs Ray, which is not installed ({exc}); install it with: {RAY_INSTALL}"
        ) from None
    return ray


@contextmanager
def ray_connection(address: str, *, num_cpus: int | None = None) -> Iterator[ModuleType]:
    """Connect to the Ray cluster at ``address`` (module docstring; :data:`LOCAL` starts
    one here with ``num_cpus`` CPUs, default all) and yield the ``ray`` module; shut the
    connection down on exit — unless Ray was already initialized in this process (a
    caller's own ``ray.init``), which is used as it is and left running.

    Workers' output is not forwarded to this process (``log_to_driver=False``) and Ray
    logs its errors only: a command's output holds its own report.

    Raises:
        RayError: Ray is not installed, or ``ray.init`` failed (no cluster at the
            address, a bad address).
    """
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    kwargs: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR}
    try:
        if address == LOCAL:
            ray.init(num_cpus=num_cpus, include_dashboard=False, **kwargs)
        else:
            ray.init(address=address, **kwargs)
    except Exception as exc:  # noqa: BLE001 — Ray raises ConnectionError, ValueError, RuntimeError...
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise RayError(f"--ray-address {address}: cannot start or reach Ray: {reason}") from None
    try:
        yield ray
    finally:
        ray.shutdown()


def ray_results(ray: ModuleType, refs: Sequence[Any]) -> list[Any]:
    """``ray.get(refs)``, with a task's own exception raised as itself (Ray wraps it in
    a ``RayTaskError`` whose text holds the remote traceback): a core error raised on a
    worker reaches the command line as its one-line message."""
    try:
        return list(ray.get(list(refs)))
    except ray.exceptions.RayTaskError as exc:
        raise unwrap(exc) from None
    except ray.exceptions.RayError as exc:  # a worker or node lost, not the task's own error
        raise RayError(f"a Ray task failed: {' '.join(str(exc).split())}") from None


def unwrap(exc: BaseException) -> BaseException:
    """The exception a Ray task raised, from the ``RayTaskError`` around it (itself
    when it holds none)."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, BaseException) else exc
