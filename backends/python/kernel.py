"""The run_python kernel: one long-lived process per session, driven by the server.

Started as `/usr/bin/python3 -I -S -u kernel.py`. It speaks framed JSON on the stdin/stdout it
was given (4-byte big-endian length, then that many bytes of UTF-8 JSON) and never writes
anything else there: user output is captured and returned in the replies. See README.md.
"""

import _signal  # getsignal without signal's enum wrapping: ~3 us less per cell
import _thread
import ast
import base64
import builtins
import gc
import io
import json
import linecache
import os
import select
import signal
import struct
import sys
import time
import traceback
import types

MAX_FRAME = 64 << 20  # largest request we accept; a bigger one is skipped, not read into memory
DEFAULT_MAX_OUTPUT = 100 * 1024
# The most base64 text of figures one reply carries; the server caps a reply's frame at six
# times (JSON escapes) four texts of max_output bytes, plus this, and ends a session that sends
# more.
IMAGE_BUDGET = 8 << 20
STANDBY_IDLE_S = 0.02  # see Kernel.keep_standby
KERNEL_FILE = sys._getframe().f_code.co_filename  # frames from here are hidden from users
KERNEL_PID = os.getpid()
_HEADER = struct.Struct(">I")
# The kernel's own references: a cell that replaces json.dumps or os.write (they are shared
# modules) must not break the replies.
_dumps, _loads, _write, _exit = json.dumps, json.loads, os.write, os._exit


class _ForkedChildren:
    """Children that cells made with os.fork. Each ends when its copy of the cell does, and
    nothing in the kernel would wait for it: such zombies would hold the sandbox's process
    limit until the session ends. The exited ones are reaped after each cell and on SIGCHLD
    between cells (a later cell's os.waitpid on one of them then gets ChildProcessError);
    never while a cell runs, which may be waiting for its own child. subprocess's children
    are not made with os.fork and stay the user's to wait for."""

    def __init__(self):
        self.pids = set()
        self.in_cell = False
        self._fork = os.fork
        os.fork = self.fork
        signal.signal(signal.SIGCHLD, lambda signum, frame: None if self.in_cell else self.reap())

    def fork(self):
        pid = self._fork()
        if pid > 0:
            self.pids.add(pid)
        return pid

    def reap(self):
        for pid in list(self.pids):
            try:
                done = os.waitpid(pid, os.WNOHANG)[0] == pid
            except ChildProcessError:  # the cell waited for it itself
                done = True
            if done:
                self.pids.discard(pid)


def _wipe(path, dev):
    """Removes what is below `path` on file system `dev`; other mounts are left alone. True
    when nothing of it is left."""
    try:
        entries = list(os.scandir(path))
    except OSError:
        return False
    clean, me = True, os.getuid()
    for entry in entries:
        try:
            st = entry.stat(follow_symlinks=False)
            if st.st_dev != dev:
                continue  # a mount point (a workspace below /tmp)
            if entry.is_dir(follow_symlinks=False):
                if st.st_uid == me:
                    os.chmod(entry.path, 0o700)  # a run may have closed it to itself
                clean = _wipe(entry.path, dev) and clean
                if st.st_uid == me:
                    os.rmdir(entry.path)
            elif st.st_uid == me:
                os.unlink(entry.path)
            # else: not a run's (the sandbox's own): left as it is
        except OSError:
            clean = False
    return clean


def _remove_sysv_ipc():
    """Removes the System V shared memory, semaphores and message queues of this uid, which
    outlive their processes. True when all are gone (or there is no ctypes to try)."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
    except (ImportError, OSError):
        return True
    clean = True
    for kind, call in (("shm", "shmctl"), ("sem", "semctl"), ("msg", "msgctl")):
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                rows = f.read().splitlines()
        except OSError:
            continue
        head = rows[0].split() if rows else []
        for row in rows[1:]:
            fields = dict(zip(head, row.split()))
            if fields.get("uid") != str(os.getuid()):
                continue
            ipc_id = int(fields["shmid" if kind == "shm" else "semid" if kind == "sem" else "msqid"])
            rc = (libc.semctl(ipc_id, 0, 0, None) if kind == "sem"
                  else getattr(libc, call)(ipc_id, 0, None))  # 0 is IPC_RMID
            clean = clean and rc == 0
    return clean


def _undumpable():
    """No process of the same uid (a run) may open this one's descriptors through /proc or
    trace it: the template's channel is its alone."""
    try:
        import ctypes
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
    except (ImportError, OSError, AttributeError):
        pass


def _end_run(group, sweep):
    """After an isolated run: its process group ends, and with `sweep` (the kernel has a pid
    namespace, a /tmp and a /dev/shm of its own: the server says so) every process this kernel
    may signal but itself (kill(-1) spares the namespace's init and the caller), and /tmp and
    /dev/shm are emptied, and its System V IPC objects removed. True when nothing is left."""
    for target in (-group, -1) if sweep else (-group,):
        try:
            os.kill(target, signal.SIGKILL)
        except OSError:
            pass
    clean = True
    deadline = time.monotonic() + 2
    while sweep and time.monotonic() < deadline:  # until none is left (a fork bomb refills)
        others = []
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) in (1, KERNEL_PID):
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    stat = f.read()
                if stat[stat.rindex(b")") + 2:][:1] not in (b"Z", b"X"):
                    os.kill(int(name), 0)  # only those it may signal: the rest are root's
                    others.append(name)
            except (OSError, ValueError):
                pass
        if not others:
            break
        if time.monotonic() + 0.002 >= deadline:
            clean = False
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        time.sleep(0.001)
    while True:  # its children; the rest are the namespace's init's
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break
    for top in ("/tmp", "/dev/shm") if sweep else ():
        try:
            clean = _wipe(top, os.stat(top).st_dev) and clean
        except OSError:
            clean = False
    if sweep:
        clean = _remove_sysv_ipc() and clean
    return clean


def _on_sigtstp(signum, frame):
    """The kernel ignores the group's halt; its forks (which inherit this handler) obey it."""
    if os.getpid() != KERNEL_PID:
        os.kill(os.getpid(), signal.SIGSTOP)


def _end_processes_since(began_ns, budget_s=0.5):
    """Ends what an interrupted cell left running: every process of the kernel's process group
    (its forks and their subprocesses) that began in the clock tick the cell began in or later
    (`began_ns` is CLOCK_BOOTTIME, the clock of /proc's start times).

    Processes of earlier cells (a server a notebook started on purpose) stay, unless one began
    within the same tick (10 ms) just before the cell; the interrupt halted the whole group
    (SIGTSTP), and they are resumed. What ignored the halt is stopped here, since a fork bomb at
    the process limit refills every slot a kill frees; once none of them runs, all are killed.
    Forks reparented to the namespace's init keep the group, so they are found too.
    """
    try:
        hz, pgid = os.sysconf("SC_CLK_TCK"), os.getpgid(0)
    except (OSError, ValueError):
        return
    first_tick = began_ns * hz // 1_000_000_000

    def members():
        found = []
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == KERNEL_PID:
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    stat = f.read()
                fields = stat[stat.rindex(b")") + 2:].split()
                state, group, start = fields[0], int(fields[2]), int(fields[19])
            except (OSError, ValueError, IndexError):  # gone meanwhile
                continue
            if group == pgid and state not in (b"Z", b"X") and start >= first_tick:
                found.append((int(name), state))
        return found

    deadline = time.monotonic() + budget_s
    while True:
        found = members()
        running = [pid for pid, state in found if state not in (b"T", b"t")]
        final = not running or time.monotonic() >= deadline
        for pid in [pid for pid, _ in found] if final else running:
            try:
                os.kill(pid, signal.SIGKILL if final else signal.SIGSTOP)
            except OSError:
                pass
        if final:
            break
    # A SIGKILL lands when its target next runs: on a busy machine, wait (a little) until none
    # of them is alive, so that the reply finds them gone.
    settle = time.monotonic() + 2
    while members() and time.monotonic() < settle:
        time.sleep(0.002)
    try:  # the older processes that the interrupt halted go on
        os.killpg(0, signal.SIGCONT)
    except OSError:
        pass


def _take_protocol_fds():
    """Move the protocol onto private fds, so that nothing the user runs can touch it.

    fd 0 becomes an empty pipe (input() sees EOF instead of eating requests); fd 1 becomes
    stderr (os.write(1, ...), C extensions and child processes write to the server's log, not
    into the frame stream). os.dup makes the private copies non-inheritable by children.
    """
    proto_in, proto_out = os.dup(0), os.dup(1)
    r, w = os.pipe()  # a pipe needs no /dev/null inside the sandbox
    os.close(w)
    os.dup2(r, 0)
    os.close(r)
    os.dup2(2, 1)
    return io.open(proto_in, "rb", buffering=1 << 16), proto_out


def _write_frame(fd, msg):
    body = _dumps(msg, ensure_ascii=False, separators=(",", ":"))
    try:
        data = body.encode()
    except UnicodeEncodeError:  # lone surrogates (e.g. from a user print) are not UTF-8
        data = body.encode("utf-8", "replace")
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:  # a pipe write may be partial
        view = view[_write(fd, view):]


class _Capture(io.TextIOBase):
    """Stands in for sys.stdout / sys.stderr during a cell; keeps at most `limit` UTF-8 bytes."""

    encoding, errors = "utf-8", "strict"

    def __init__(self, limit):
        self.parts, self.room, self.truncated = [], limit, False
        self.buffer = _ByteSink(self)  # for code that writes bytes to sys.stdout.buffer

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        if self.truncated:
            return len(s)
        size = len(s) if s.isascii() else len(s.encode("utf-8", "surrogatepass"))
        if size <= self.room:
            self.parts.append(s)
            self.room -= size
        else:  # cut at a byte boundary, dropping a character split in two
            cut = s.encode("utf-8", "surrogatepass")[: self.room]
            self.parts.append(cut.decode("utf-8", "ignore"))
            self.room, self.truncated = 0, True
        return len(s)

    def writable(self):
        return True

    def isatty(self):
        return False

    def getvalue(self):
        return "".join(self.parts)


class _ByteSink:
    def __init__(self, text):
        self.text = text

    def write(self, b):
        self.text.write(bytes(b).decode("utf-8", "replace"))
        return len(b)

    def flush(self):
        pass


def _clip(s, limit):
    """A result string cut to `limit` UTF-8 bytes, and whether it was cut."""
    if len(s) <= limit // 4 or len(s.encode("utf-8", "surrogatepass")) <= limit:
        return s, False
    return s.encode("utf-8", "surrogatepass")[:limit].decode("utf-8", "ignore"), True


def _thread_idents():
    """The live threads' idents, when the threading module is in use (a cell that never
    imported it started no thread it could name)."""
    threading = sys.modules.get("threading")
    if threading is None:
        return set()
    main = threading.main_thread()
    return {t.ident for t in threading.enumerate() if t is not main and t.is_alive()}


def _describe(exc, timed_out, limit):
    """The error object of a reply: user frames only, chained exceptions included."""
    te = traceback.TracebackException(type(exc), exc, exc.__traceback__, compact=True)
    seen = set()
    todo = [te]
    while todo:  # hide the kernel's frames in the exception and everything chained to it
        t = todo.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        t.stack[:] = [f for f in t.stack if f.filename != KERNEL_FILE]
        todo += [c for c in (t.__cause__, t.__context__) if c is not None]
    if timed_out and isinstance(exc, KeyboardInterrupt):
        message = "interrupted (timeout)"
    else:
        try:
            message = str(exc)
        except Exception:  # a user exception whose __str__ fails
            message = "<str() failed>"
    error = {"type": type(exc).__name__, "message": _clip(message, limit)[0],
             "traceback": _clip("".join(te.format()), limit)[0]}
    if isinstance(exc, ModuleNotFoundError) and isinstance(exc.name, str):
        error["module"] = exc.name  # what the server may install
        # and then run the cell again: its next look at the path must see the new directories.
        import importlib
        importlib.invalidate_caches()
    return error


def _compile_cell(code, filename):
    """Code objects for the cell body and, if the cell ends in an expression, for that."""
    tree = compile(code, filename, "exec", ast.PyCF_ONLY_AST)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = compile(ast.Expression(tree.body.pop().value), filename, "eval")
    return compile(tree, filename, "exec"), last


def _figures(render=True):
    """PNGs of every open pyplot figure, then closes them all so the next cell starts clean.

    Only if the user imported pyplot: importing it here would cost a cell ~0.5 s.
    """
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return []
    images, left_out, budget = [], 0, IMAGE_BUDGET
    try:
        for num in plt.get_fignums() if render else ():
            buf = io.BytesIO()
            plt.figure(num).savefig(buf, format="png", bbox_inches="tight")
            data = base64.b64encode(buf.getvalue()).decode()
            if len(data) > budget:
                left_out += 1
                continue
            budget -= len(data)
            images.append({"mime": "image/png", "data": data})
    finally:
        plt.close("all")
    if left_out:
        print(f"{left_out} figure(s) left out: the figures of one cell are limited to "
              f"{IMAGE_BUDGET >> 20} MiB of PNG (base64)", file=sys.stderr)
    return images


class Kernel:
    def __init__(self, proto_in, proto_out):
        self.proto_in, self.proto_out = proto_in, proto_out
        self.count = 0
        self.busy = False  # SIGINT interrupts only while a cell runs; otherwise it is stale
        self.timed_out = False  # the server's SIGINT, not a KeyboardInterrupt the user raised
        # User code runs as a fresh __main__ module (pickle finds its classes there), never in
        # the kernel's own globals.
        self.main = types.ModuleType("__main__")
        self.main.__builtins__ = builtins
        self.kernel_module = sys.modules["__main__"]  # keep our globals alive
        sys.modules["__main__"] = self.main
        self.forked = _ForkedChildren()
        # A template (of isolated runs) runs no cell itself; one that could not clean up after
        # a run retires: it exits after its reply.
        self.template = self.retiring = False
        # Forks (fork_session): whether this session was ever forked, and a fork of it made
        # ahead of the next request, (pid, pipe) (see keep_standby).
        self.forks_asked = False
        self.standby = None
        self.cwd = os.getcwd()  # as the last cell left it
        self.sigint_handler = self._on_sigint  # one bound method, so `is` can recognise it
        signal.signal(signal.SIGINT, self.sigint_handler)
        signal.signal(signal.SIGTSTP, _on_sigtstp)

    def _on_sigint(self, signum, frame):
        if self.busy:
            self.timed_out = True
            # Halt the group before anything else: under a fork bomb this process gets a
            # sliver of the CPU until its copies stop (the kernel itself does not).
            try:
                os.killpg(0, signal.SIGTSTP)
            except OSError:
                pass
            raise KeyboardInterrupt

    def run_cell(self, req_id, code, max_output):
        self.count += 1
        # Its directory entered again by the path that names it: a read-only view mounted over
        # it since the last cell (the file rules' masks) is then what the cell works in, and
        # one unmounted since (which leaves no path to the directory) is left.
        try:
            self.cwd = os.getcwd()
        except OSError:
            pass
        try:
            os.chdir(self.cwd)
        except OSError:
            pass
        filename = f"<cell {self.count}>"
        # Registered so tracebacks show source lines, even for functions called from later cells.
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        out, err = _Capture(max_output), _Capture(max_output)
        saved = sys.stdout, sys.stderr
        result = error = None
        images, clipped = [], False
        threads_before = _thread_idents()
        start, began = time.perf_counter(), time.clock_gettime_ns(time.CLOCK_BOOTTIME)
        try:
            self.busy, self.timed_out = True, False
            self.forked.in_cell = True
            sys.stdout, sys.stderr = out, err
            body, last = _compile_cell(code, filename)
            exec(body, self.main.__dict__)
            if last is not None:
                value = eval(last, self.main.__dict__)
                if value is not None:
                    result, clipped = _clip(repr(value), max_output)
            images = _figures()
        except BaseException as exc:  # the user's SystemExit and KeyboardInterrupt too
            error = exc
        finally:
            self.busy = False  # first, so a late SIGINT cannot escape from here
            self.forked.in_cell = False
            sys.stdout, sys.stderr = saved
        if error is not None:
            try:  # a failed cell's figures are dropped, not carried into the next one
                _figures(render=False)
            except Exception:
                pass
        duration = (time.perf_counter() - start) * 1000
        if os.getpid() != KERNEL_PID:  # the cell forked and this is the child: never reply
            os._exit(0)
        try:
            self.cwd = os.getcwd()
        except OSError:
            pass
        if self.timed_out:  # the server interrupted the cell: what it started ends with it
            _end_processes_since(began)
        self.forked.reap()
        if _signal.getsignal(signal.SIGINT) is not self.sigint_handler:  # the cell replaced it
            signal.signal(signal.SIGINT, self.sigint_handler)
        if error is not None:
            error = _describe(error, self.timed_out, max_output)
            if self.timed_out:
                # Threads cannot be interrupted: what the cell started goes on, and says so.
                running = len(_thread_idents() - threads_before)
                if running:
                    error["message"] += (f"; {running} thread(s) the cell started are still "
                                         "running (threads cannot be interrupted): reset the "
                                         "session to stop them")
                    error["threads_running"] = running
        return {"type": "result", "id": req_id, "stdout": out.getvalue(),
                "stderr": err.getvalue(), "result": result, "error": error,
                "duration_ms": round(duration, 3), "images": images,
                "truncated": out.truncated or err.truncated or clipped}

    def run_isolated(self, req_id, code, max_output, timeout_ms, memory, stdin, sweep):
        """Runs `code` in a fork of this kernel, a template that runs no cell itself: a fresh
        __main__, nothing of any other run. The fork ends with the run (at `timeout_ms` it is
        killed); then what it started (see _end_run), so the next run finds nothing of it.
        The reply says `retire` when that could not be made sure: the server drops the
        template then, and it exits."""
        global KERNEL_PID
        self.template = True
        _undumpable()
        r, w = os.pipe()
        began = time.monotonic()
        try:
            pid = self.forked._fork()
        except OSError as exc:
            os.close(r)
            os.close(w)
            return _error(req_id, f"cannot start the run: {exc}")
        if pid == 0:  # the run
            try:
                os.setpgid(0, 0)
                os.close(r)
                os.close(self.proto_in.fileno())
                os.close(self.proto_out)
                KERNEL_PID = os.getpid()
                signal.signal(signal.SIGINT, signal.default_int_handler)
                if memory:
                    import resource
                    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
                    if hard != resource.RLIM_INFINITY:
                        memory = min(memory, hard)  # the sandbox's own limit is the ceiling
                    resource.setrlimit(resource.RLIMIT_AS, (memory, hard))
                sys.stdin = io.TextIOWrapper(io.BytesIO((stdin or "").encode()), encoding="utf-8")
                self.main = types.ModuleType("__main__")
                self.main.__builtins__ = builtins
                sys.modules["__main__"] = self.main
                reply = self.run_cell(req_id, code, max_output)
                data = _dumps(reply, ensure_ascii=False).encode("utf-8", "replace")
                # Length first: a fork of the run may hold the pipe open after it ends.
                view = memoryview(struct.pack(">Q", len(data)) + data)
                while view:
                    view = view[_write(w, view):]
            except BaseException as exc:  # a kernel bug: the template reports the run ended
                print(f"kernel: isolated run: {exc!r}", file=sys.__stderr__)
            finally:
                _exit(0)
        os.close(w)
        data, timed_out, interrupted = b"", False, False
        deadline = began + timeout_ms / 1000
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            while len(data) < 8 or len(data) < 8 + struct.unpack(">Q", data[:8])[0]:
                left = deadline - time.monotonic()
                if left <= 0:
                    timed_out = True
                    break
                ready, _, _ = select.select([r], [], [], left)
                if ready:
                    chunk = os.read(r, 1 << 16)
                    if not chunk:
                        break
                    data += chunk
        except KeyboardInterrupt:  # the server cancelled the call
            interrupted = True
        finally:
            signal.signal(signal.SIGINT, previous)
            os.close(r)
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            _, status = os.waitpid(pid, 0)
            clean = _end_run(pid, sweep)
            # The server sends nothing while it waits for this reply: anything to read now was
            # written by the run (where the runtime lets it open this process's descriptors,
            # as gVisor does), and is never served.
            if select.select([self.proto_in.fileno()], [], [], 0)[0]:
                clean = False
                print("kernel: a run wrote to the template's channel; it retires",
                      file=sys.__stderr__)
        reply = None
        if len(data) >= 8 and not timed_out and not interrupted:
            try:
                reply = _loads(data[8:8 + struct.unpack(">Q", data[:8])[0]])
            except ValueError:
                reply = None
            if not isinstance(reply, dict):
                reply = None
        if reply is None:
            if timed_out:
                why = ("KeyboardInterrupt", "interrupted (timeout)")
            elif interrupted:
                why = ("KeyboardInterrupt", "cancelled")
            elif os.WIFSIGNALED(status):
                sig = os.WTERMSIG(status)
                why = ("RunKilled", f"the run was killed by signal {sig}"
                       + (" (out of memory?)" if sig == signal.SIGKILL else ""))
            else:
                why = ("RunEnded", "the run ended without a result (it closed the kernel's "
                       f"channel or exited with status {os.waitstatus_to_exitcode(status)})")
            reply = {"type": "result", "id": req_id, "stdout": "", "stderr": "", "result": None,
                     "error": {"type": why[0], "message": why[1], "traceback": ""},
                     "duration_ms": round((time.monotonic() - began) * 1000, 3), "images": [],
                     "truncated": False}
        reply["type"] = "result"
        reply["id"] = req_id
        reply["timed_out"] = timed_out
        if not clean:
            reply["retire"] = True
            self.retiring = True
        return reply

    def _spawn_fork(self):
        """A fork of this kernel as it is now, in a process group of its own (an interrupt of
        it halts nothing of its parent's), waiting on a pipe for the path of the server's
        socket. Given one, it connects there and serves that channel as a new session with a
        copy of this one's state; given none (the pipe closed), it exits. Returns its pid and
        the pipe's write end."""
        import _socket  # before the fork, so a fork does not pay for the import
        r, w = os.pipe()
        # What exists now is left out of the fork's garbage collections: a full collection
        # writes to every object it visits, which would copy all of the shared memory.
        gc.freeze()
        try:
            pid = self.forked.fork()
        except OSError:
            gc.unfreeze()
            os.close(r)
            os.close(w)
            raise
        if pid:
            gc.unfreeze()
            os.close(r)
            return pid, w
        global KERNEL_PID
        try:
            os.setpgid(0, 0)
            os.close(w)
            # The parent's channel: closed through its file object, which would otherwise
            # close its number again when collected (by then another descriptor's).
            self.proto_in.close()
            os.close(self.proto_out)
            # Stray output (fd 1 and 2) had the parent's log pipe, which only the parent's
            # reader drains: a fork's goes nowhere, so it can never block on it.
            try:
                null = os.open("/dev/null", os.O_WRONLY)
                os.dup2(null, 1)
                os.dup2(null, 2)
                os.close(null)
            except OSError:
                pass
            path = b""
            while chunk := os.read(r, 4096):
                path += chunk
            os.close(r)
            if not path:
                _exit(0)  # not wanted after all
            sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            sock.connect(path.decode())
            fd = sock.detach()
            self.proto_in = io.open(os.dup(fd), "rb", buffering=1 << 16)
            self.proto_out = fd
            KERNEL_PID = os.getpid()
            self.forked.pids = set()
            self.standby, self.forks_asked = None, False
            self.busy = self.timed_out = False
            self.serve()
        except BaseException as exc:  # noqa: B036 - the fork never returns to its parent
            print(f"kernel: fork: {exc!r}", file=sys.__stderr__)
        finally:
            _exit(0)

    def drop_standby(self):
        if self.standby is not None:
            os.close(self.standby[1])  # it exits
            self.standby = None

    def keep_standby(self, after_fork):
        """After a reply: a session forked once is likely forked again (rollouts from one
        prepared state), so a fork of it waits ready, made while nobody waits for this
        kernel: at once after a fork (they come in runs), after a cell once no request has
        come for STANDBY_IDLE_S (cells in a row do not each pay for one). Not while threads a
        cell started run on: a fork must copy the state of the moment it is asked for."""
        if not self.forks_asked or self.standby is not None or self.template:
            return
        if not after_fork and select.select([self.proto_in], [], [], STANDBY_IDLE_S)[0]:
            return  # the next request came first
        if _thread._count():
            return
        try:
            self.standby = self._spawn_fork()
        except OSError:
            pass

    def fork_session(self, req_id, path):
        """Forks this kernel into a new session that serves on the server's unix socket at
        `path`, with a copy of this session's state. Neither sees the other's later changes."""
        if self.template:
            return _error(req_id, "this kernel is a template of isolated runs: it cannot fork")
        self.forks_asked = True
        if self.standby is not None and _thread._count():
            self.drop_standby()  # threads ran since it was made: the state may have moved on
        for attempt in range(2):
            if self.standby is None:
                try:
                    self.standby = self._spawn_fork()
                except OSError as exc:
                    return _error(req_id, f"cannot fork the session: {exc}")
            pid, w = self.standby
            self.standby = None
            try:
                os.write(w, path.encode())
                break
            except OSError:  # it died while it waited (its memory was taken back, say)
                if attempt:
                    return _error(req_id, "cannot fork the session: the fork ended at once")
            finally:
                os.close(w)
        return {"type": "result", "id": req_id, "forked": pid}

    def handle(self, req):
        """The reply to one decoded request, or None to exit."""
        kind = req.get("type")
        req_id = req.get("id")
        if kind == "exec":
            code, max_output = req.get("code"), req.get("max_output", DEFAULT_MAX_OUTPUT)
            if not isinstance(code, str):
                return _error(req_id, "exec needs a string \"code\"")
            if type(max_output) is not int or max_output < 0:
                return _error(req_id, "\"max_output\" must be a non-negative integer")
            if self.template:
                return _error(req_id, "this kernel is a template of isolated runs: it runs no "
                              "cell itself")
            self.drop_standby()  # the cell changes what a fork would copy
            return self.run_cell(req_id, code, max_output)
        if kind == "isolated":
            self.drop_standby()
            code, max_output = req.get("code"), req.get("max_output", DEFAULT_MAX_OUTPUT)
            timeout_ms, memory = req.get("timeout_ms", 30000), req.get("memory", 0)
            stdin, sweep = req.get("stdin", ""), req.get("sweep") is True
            if not isinstance(code, str) or not isinstance(stdin, str):
                return _error(req_id, "isolated needs a string \"code\" (and \"stdin\")")
            for value in (max_output, timeout_ms, memory):
                if type(value) is not int or value < 0:
                    return _error(req_id, "\"max_output\", \"timeout_ms\" and \"memory\" "
                                  "must be non-negative integers")
            return self.run_isolated(req_id, code, max_output, timeout_ms, memory, stdin, sweep)
        if kind == "fork":
            path = req.get("path")
            if not isinstance(path, str) or not path:
                return _error(req_id, "fork needs a string \"path\"")
            return self.fork_session(req_id, path)
        if kind == "preload":
            self.drop_standby()
            self.template = True
            _undumpable()
            failed = []
            for name in req.get("modules", []):
                try:
                    __import__(name)
                except BaseException as exc:  # noqa: B036 - a module may raise anything
                    failed.append(f"{name}: {type(exc).__name__}: {exc}")
            return {"type": "preloaded", "id": req_id, "failed": failed}
        if kind == "ping":
            return {"type": "pong", "id": req_id}
        if kind == "shutdown":
            return None
        return _error(req_id, f"unknown request type {kind!r}")

    def read_request(self):
        """The next request as a dict, or None at EOF; raises _BadFrame for a malformed one."""
        header = self.proto_in.read(4)
        if len(header) < 4:
            return None
        (size,) = _HEADER.unpack(header)
        if size > MAX_FRAME:
            while size:  # skip it to stay in step with the stream
                chunk = self.proto_in.read(min(size, 1 << 16))
                if not chunk:
                    return None
                size -= len(chunk)
            raise _BadFrame(f"frame larger than {MAX_FRAME} bytes")
        body = self.proto_in.read(size)
        if len(body) < size:
            return None
        try:
            req = _loads(body)
        except ValueError as exc:  # includes invalid UTF-8
            raise _BadFrame(f"malformed request: {exc}") from None
        if not isinstance(req, dict):
            raise _BadFrame("malformed request: not a JSON object")
        return req

    def serve(self):
        _write_frame(self.proto_out, {"type": "ready", "python": "%d.%d.%d" % sys.version_info[:3],
                                      "pid": os.getpid()})
        while True:
            try:
                req = self.read_request()
            except _BadFrame as exc:
                _write_frame(self.proto_out, _error(None, str(exc)))
                continue
            if req is None:
                return
            try:
                reply = self.handle(req)
            except BaseException as exc:  # a kernel bug, or memory exhausted while replying
                print(f"kernel: internal error: {exc!r}", file=sys.__stderr__)
                reply = _error(req.get("id"), f"internal error: {type(exc).__name__}: {exc}")
            if reply is None:
                return
            _write_frame(self.proto_out, reply)
            if self.retiring:
                return
            self.keep_standby(req.get("type") == "fork")


class _BadFrame(Exception):
    pass


def _error(req_id, message):
    return {"type": "error", "id": req_id, "message": message}


def _setup_environment():
    # Before any user import, so pyplot never tries a GUI backend.
    os.environ["MPLBACKEND"] = "Agg"
    # -S keeps site.py's customisations out, but also the system's installed packages
    # (numpy, matplotlib from apt); add those directories and their .pth files back, and
    # nothing else (no sitecustomize, no user site).
    if sys.flags.no_site:
        import site
        site.addsitepackages(set(site.removeduppaths()))
    # Packages the server installed on demand (read-only in here), ahead of the system's as
    # PYTHONPATH puts them for commands: pip resolved them as one set.
    # Where sessions share a container (Docker, --python-new-sessions fork), each process is
    # held to a session's memory, as the Local sandbox holds each of its processes.
    memory = os.environ.pop("BYD_PROCESS_MEMORY", "")
    if memory.isdigit():
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (int(memory), int(memory)))
    packages = os.environ.pop("BYD_PYTHON_PACKAGES", "")
    if packages:
        sys.path.insert(0, packages)
    # Like a notebook, modules in the working directory (the workspace) are importable.
    sys.path.insert(0, "")


def main():
    try:  # a group of its own: what a cell starts is told apart from its launcher's processes
        os.setpgid(0, 0)
    except OSError:  # already a session leader, so already a group leader
        pass
    proto_in, proto_out = _take_protocol_fds()
    _setup_environment()
    Kernel(proto_in, proto_out).serve()


if __name__ == "__main__":
    main()
