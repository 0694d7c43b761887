"""``python -m inspector`` — same as the ``chassis-inspector`` command."""

from inspector.cli import run

if __name__ == "__main__":
    run()
