"""k3tui core: headless, never imports Textual.

Freeze the failure scene of a vLLM deployment, then reproduce it one variable at a time,
recording every fact as an event in a replayable, tamper-evident session file.
"""

__version__ = "0.1.0"

import warnings as _warnings

# cryptography >= 51 warns, when asyncssh is imported, that DSA is deprecated: one line on stderr
# before every command's own output, which breaks the one-line errors the CLI promises. k3tui never
# offers DSA keys; the warning says nothing to the on-call engineer.
_warnings.filterwarnings("ignore", message=r"DSA is deprecated", module=r"asyncssh(\.|$)")
