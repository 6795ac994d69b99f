"""Freeze the failure scene of a host, check it against a profile, diff two scenes.

``probes`` (the exact commands) → ``parsers`` (pure functions, tested on real captures)
→ ``freeze`` (runs the probes concurrently through the ``Host`` protocol and assembles a
``Scene``) → ``checks`` (the compatibility baseline) and ``diff`` (two scenes, or N nodes).
"""
