"""orders: see base.py."""
