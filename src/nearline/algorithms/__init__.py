"""algorithms: see base.py."""
