"""Whether golden files are rewritten rather than compared (``pytest --nnprofile-update``): set by
the plugin, or by ``NNPROFILE_UPDATE_GOLDEN=1`` outside pytest."""

import os
from typing import List

UPDATE = os.environ.get("NNPROFILE_UPDATE_GOLDEN", "") not in ("", "0")
WRITTEN: List[str] = []  # the golden files rewritten in this session (the plugin's summary lists them)
