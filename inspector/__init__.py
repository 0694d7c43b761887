"""Chassis Inspector: the Textual application and the command line."""

__version__ = "0.9.0"
