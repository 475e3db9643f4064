"""Confines the process it runs in, and all that process starts, with the sandbox's seccomp
filter, makes it undumpable, then runs the script named by its first argument as __main__.

Started as `python3 -I -S -u confine.py FILTER SCRIPT ARGS...` for the Docker backend's Python
kernels (each command gets the filter from byd-enter). FILTER is the BPF program the server compiled (the same one
the Local sandbox installs). The engine's profile holds the same refusals, but gVisor applies
it to a container's first process only, not to what `docker exec` starts, so the processes
that run the user's code install it themselves.
"""

import ctypes
import runpy
import sys

PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
SOCK_FILTER_SIZE = 8  # struct sock_filter: u16 code, u8 jt, u8 jf, u32 k


class _Program(ctypes.Structure):  # struct sock_fprog
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def confine(path):
    with open(path, "rb") as f:
        bpf = f.read()
    if not bpf or len(bpf) % SOCK_FILTER_SIZE:
        raise SystemExit(f"confine: {path} is not a BPF program")
    code = ctypes.create_string_buffer(bpf, len(bpf))
    program = _Program(len(bpf) // SOCK_FILTER_SIZE, ctypes.cast(code, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    if (libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or
            libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(program), 0, 0) != 0):
        raise SystemExit(f"confine: the kernel refused the seccomp filter: errno "
                         f"{ctypes.get_errno()}")
    # Not dumpable: other processes of the container's user (another session's code) cannot
    # open this one's descriptors through /proc/PID/fd (its protocol pipes) or read its
    # memory. What it starts with exec is dumpable again, as usual.
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise SystemExit(f"confine: cannot make the process undumpable: errno "
                         f"{ctypes.get_errno()}")


def main():
    if len(sys.argv) < 3:
        raise SystemExit("usage: confine.py FILTER SCRIPT [ARGS...]")
    confine(sys.argv[1])
    script = sys.argv[2]
    sys.argv = sys.argv[2:]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
