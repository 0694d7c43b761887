"""Reusable widgets of the inspector app (each with its own DEFAULT_CSS)."""
