"""Reaching hosts: the :class:`~k3tui.remote.base.Host` protocol and its transports.

Everything above this package (freeze, ladder, demo) talks to a ``Host``; whether it is
an OpenSSH server, the embedded simulated host, or the local machine is the transport's
business.
"""
