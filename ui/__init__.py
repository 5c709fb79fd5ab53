"""Web apps: patient chat (/), clinician review (/review), Likert evaluation (/evaluate) over one server."""

import os

# Before anything imports gradio: no analytics, no hub calls, no browser-side run history.
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_RUN_HISTORY", "False")
