"""Chassis Inspector: the Textual application and the command line."""

from core import __version__

__all__ = ["__version__"]
