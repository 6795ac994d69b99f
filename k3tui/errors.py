"""The project's exceptions: one small tree, each message actionable at 3 a.m.

::

    K3Error
    ├── UsageError            bad arguments, missing files, wrong kind of file
    ├── RecordingError        a session file cannot be read or written
    │   ├── NotARecording     not a .k3rec at all (wrong header, binary garbage)
    │   ├── NewerSchema       written by a newer k3tui
    │   └── CorruptLine       a line in the middle is not valid
    ├── HostError             reaching or using a remote host
    │   ├── HostUnreachable   refused, timeout, DNS
    │   ├── HostKeyUnknown    first contact: fingerprint shown, how to accept it
    │   ├── HostKeyChanged    the key differs from known_hosts: always a stop
    │   ├── AuthFailed        no key was accepted
    │   └── ConnectionLost    dropped mid-session (reconnect may follow)
    ├── ProfileError          a profile or scenario file is invalid
    ├── OneVariableRule       a change touches more than one variable without a reason
    ├── HardwareStop          a host fault (Xid, ECC, NVLink, IMEX) stops the ladder until drained or overridden
    └── PackageError          a repro package is malformed or hostile

The CLI prints ``str(error)`` as one line and exits non-zero; no traceback reaches the user.
"""


class K3Error(Exception):
    """Root of every error k3tui raises on purpose."""

    exit_code = 2


class UsageError(K3Error):
    """Bad arguments or input files."""


class RecordingError(K3Error):
    """A session file cannot be read or written."""


class NotARecording(RecordingError):
    """The file is not a k3rec session file."""


class NewerSchema(RecordingError):
    """The file was written by a newer k3tui with a schema this one cannot read."""


class CorruptLine(RecordingError):
    """A line that is not the last one cannot be decoded."""

    def __init__(self, path: str, line_number: int, why: str) -> None:
        super().__init__(f"{path}: line {line_number} is corrupt: {why}")
        self.line_number = line_number


class HostError(K3Error):
    """Reaching or using a remote host failed."""


class HostUnreachable(HostError):
    """Connection refused, timed out, or the name does not resolve."""


class HostKeyUnknown(HostError):
    """The host presented a key that is not in known_hosts."""

    def __init__(self, host: str, fingerprint: str, known_hosts: str = "") -> None:
        where = f" in {known_hosts}" if known_hosts else ""
        super().__init__(
            f"host key for {host} is not known{where}: it offers {fingerprint}. "
            f"Check it with the host's owner, then re-run with --accept-new-host-key"
        )
        self.host = host
        self.fingerprint = fingerprint


class HostKeyChanged(HostError):
    """The host presented a key that differs from the one on record."""

    def __init__(self, host: str, fingerprint: str, expected: str = "") -> None:
        exp = f"expected {expected}, got {fingerprint}" if expected else f"got {fingerprint}"
        super().__init__(
            f"host key for {host} CHANGED ({exp}): possible man-in-the-middle or a "
            f"reinstalled host. Refusing to connect; fix known_hosts after verifying"
        )
        self.host = host
        self.fingerprint = fingerprint


class AuthFailed(HostError):
    """Authentication was refused."""


class ConnectionLost(HostError):
    """The connection dropped."""


class ProfileError(K3Error):
    """A profile, scenario or inventory file is invalid."""


class OneVariableRule(K3Error):
    """A run changes more than one variable and no reason was given."""


class HardwareStop(K3Error):
    """A host has a hardware fault: no further rung until the node is drained and the GPU reset, or a reason is recorded."""


class PackageError(K3Error):
    """A repro package is malformed, tampered with or hostile."""
