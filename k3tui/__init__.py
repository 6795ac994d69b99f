"""k3tui core: headless, never imports Textual.

Freeze the failure scene of a vLLM deployment, then reproduce it one variable at a time,
recording every fact as an event in a replayable, tamper-evident session file.
"""

__version__ = "0.1.0"
