"""monitor: see base.py."""
