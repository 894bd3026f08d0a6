"""Facts about where tileconv runs, read once at import."""

import os

# Triton reads TRITON_INTERPRET when a kernel is decorated, so this must match import time.
INTERPRET: bool = os.environ.get("TRITON_INTERPRET", "0") == "1"

INT32_LIMIT = 2**31  # element counts at or past this need int64 index math
