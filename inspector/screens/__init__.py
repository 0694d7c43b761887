"""Screens of the inspector app, one per module."""
