"""A JupyterHub for a class on one machine: `python -m hub --help` (see hub/README.md)."""
