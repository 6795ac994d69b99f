"""Reaching hosts: the :class:`~k3tui.remote.base.Host` protocol and its transports.

Everything above this package (freeze, ladder, demo) talks to a ``Host``; whether it is
an OpenSSH server, the embedded simulated host, or the local machine is the transport's
business.

- :mod:`.target` — ``[user@]host[:port]``, ssh-config aliases, groups ``a,b``.
- :mod:`.ssh` — ``connect()`` / ``connect_group()`` → ``SshHost`` (one asyncssh connection
  per host, strict host keys, reconnect with backoff, SFTP, TCP and unix-socket forwards).
- :mod:`.local` — ``LocalHost``: the same protocol with local subprocesses.
- :mod:`._host` — what every transport shares: recorded ``run``/``stream`` and detached
  runs whose ``tail`` resumes at a byte offset after a reconnect.
- :mod:`.detached` — the POSIX-sh wrapper scripts of detached runs (shared by all transports).
- :mod:`.lines` — 64 KiB chunks to whole lines.
- :mod:`.docker_api` — container facts via the Docker SDK over a forwarded socket.
"""
