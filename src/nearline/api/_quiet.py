"""stac-fastapi builds default settings when it is imported and logs a warning that they are
defaults; nearline's own settings (api/_app.py) replace them, so that warning is noise."""

import logging

logging.getLogger("stac_fastapi.types.config").setLevel(logging.ERROR)
