"""api: see base.py."""
