"""archive: see base.py."""
