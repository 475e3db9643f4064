"""The Docker backend's command runner: one long-lived process in the container that starts the
commands of `execute`, so that a command costs a fork instead of an engine exec (create, start,
inspect: tens of milliseconds).

Started as `python3 -I -S -u runner.py [--user UID:GID --enter BYD_ENTER]` through one exec
whose stdin and stdout are the server's. With --user (the Docker backend starts it so, as the
container's root), every command runs as UID:GID through byd-enter (which becomes that user and
enters the directory as it, then executes the command; a fork of this process could not be a
vfork once it changes ids, and costs twice as much under gVisor), with no supplementary groups
and no capabilities: it cannot signal,
trace or open the descriptors of the runner, and when it ends every process of UID in the
container is killed too (the runner's container holds no other code: a command that killed its
parent, or left the runner's tree some other way, does not outlive it).
It runs one command at a time, to its end. In (stdin): frames of a 4-byte big-endian length and
that much UTF-8 JSON:
  {"type": "run", "argv": [...], "enter": [...], "env": ["K=V", ...], "cwd": DIR,
   "stdin": TEXT, "max_output": BYTES, "nonce": TEXT}
  ("enter": byd-enter's options for the command, before its user: its seccomp filter and the
  masks of its workspace, which byd-enter mounts before the command starts)
  {"type": "kill"}        ends the running command's process group
Out (stdout): frames of a kind byte, a 4-byte big-endian length and that many bytes:
  R ready (JSON {"pid"}), S started, O / E stdout / stderr bytes (each cut at max_output, the
  rest read and dropped), L the latest complete stdout line past the cut (at most once a
  second), X exit (JSON {"exit_code", "signal", "truncated": [out, err], "ends": [out, err]
  ({"dropped": BYTES, "data": BASE64}: past the cap, the bytes dropped, then the last ones),
  "nonce"} or {"error": TEXT,
  "nonce"}; the nonce is the request's, which the command never sees, so an exit frame the command
  wrote into the runner's output itself is told from the runner's).
Each command leads a process group of its own, and the runner is a child subreaper, so what a
command starts stays below the runner even when it leaves the group (setsid) or its parent
dies. When the command ends, or is killed, its group and then everything else below the runner
is killed too: nothing a command started outlives it. Kills are system calls from this process,
so they work even when the container's process limit leaves no room for another process.
"""

import base64
import json
import os
import selectors
import signal
import struct
import subprocess
import sys
import time

_LEN = struct.Struct(">I")
_FRAME = struct.Struct(">cI")


class _Out:
    """The frame stream to the server (blocking writes, whole frames)."""

    def __init__(self, fd):
        self.fd = fd

    def send(self, kind, payload=b""):
        view = memoryview(_FRAME.pack(kind, len(payload)) + payload)
        while view:
            view = view[os.write(self.fd, view):]

    def send_json(self, kind, doc):
        self.send(kind, json.dumps(doc).encode())


class _In:
    """Frames from the server, read as they arrive."""

    def __init__(self, fd):
        self.fd, self.buf, self.eof = fd, b"", False

    def feed(self):
        chunk = os.read(self.fd, 1 << 16)
        if not chunk:
            self.eof = True
        self.buf += chunk

    def frames(self):
        while len(self.buf) >= 4:
            (size,) = _LEN.unpack_from(self.buf)
            if len(self.buf) < 4 + size:
                return
            body, self.buf = self.buf[4:4 + size], self.buf[4 + size:]
            try:
                doc = json.loads(body)
            except ValueError:
                doc = None
            yield doc if isinstance(doc, dict) else {"type": "bad"}

    def next_blocking(self):
        while True:
            for doc in self.frames():
                return doc
            if self.eof:
                return None
            self.feed()


def _become_subreaper():
    """Orphans below this process are reparented to it instead of to init
    (PR_SET_CHILD_SUBREAPER), and it is not dumpable (PR_SET_DUMPABLE 0): nothing in the
    container but root may read its memory or open its descriptors through /proc."""
    try:
        import ctypes
        prctl = ctypes.CDLL(None, use_errno=True).prctl
        return prctl(36, 1, 0, 0, 0) == 0 and prctl(4, 0, 0, 0, 0) == 0
    except (ImportError, OSError, AttributeError):
        return False


def _children_by_parent():
    """Every process's children, by /proc's parent links: {ppid: [pid, ...]}."""
    below = {}
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
            below.setdefault(int(stat[stat.rindex(b")") + 2:].split()[1]), []).append(int(name))
        except (OSError, ValueError, IndexError):  # not a process, or gone meanwhile
            continue
    return below


def _children():
    """This process's children (it has one thread)."""
    me = os.getpid()
    try:
        with open(f"/proc/self/task/{me}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:  # no such file in this kernel: look at every process's parent
        return _children_by_parent().get(me, [])


def _reap():
    """Waits for every child that has ended (only once the command itself is reaped)."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def _descendants():
    """Every process below this one, by a walk over /proc's parent links."""
    below = _children_by_parent()
    found, todo = [], [os.getpid()]
    while todo:
        kids = below.get(todo.pop(), [])
        found += kids
        todo += kids
    return found


def _kill_each(pids):
    """SIGKILLs each of `pids` that is still there."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _uid_of(pid):
    """The real uid of process `pid`, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def _sweep(uid):
    """Kills every process of `uid` in the container (with --user: what the command left, wherever
    it went), until none is left or two seconds have passed."""
    if uid is None:
        return
    deadline = time.monotonic() + 2
    while True:
        found = [int(n) for n in os.listdir("/proc") if n.isdigit() and _uid_of(int(n)) == uid]
        _reap()
        if not found or time.monotonic() >= deadline:
            return
        _kill_each(found)
        time.sleep(0.001)


def _kill_command(proc):
    """Ends a command that is still running: first its whole tree while the parent links still
    hold it together (a member that left the group is found there), then its group, then what
    became our orphans."""
    _kill_each(_descendants())
    _kill_group(proc.pid, proc)
    _end_tree()
    _sweep(_USER[0] if _USER else None)


def _end_tree():
    """Kills and reaps every process below this one (once the command is reaped)."""
    deadline = time.monotonic() + 2
    while True:
        _reap()
        kids = _children()
        if not kids or time.monotonic() >= deadline:
            return
        _kill_each(kids)
        time.sleep(0.001)  # for them to die; their own children come to us next round


def _kill_group(pgid, leader):
    """SIGKILLs the group until it is empty: the leader reaped, the rest reaped by init."""
    deadline = time.monotonic() + 2
    while True:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            return
        except OSError:
            return
        if leader.poll() is None:
            try:
                leader.wait(0.05)
            except subprocess.TimeoutExpired:
                pass
            continue
        _reap()  # members that died as our orphans (we are their subreaper) are ours to reap
        if time.monotonic() >= deadline:
            return
        time.sleep(0.002)


class _Stream:
    """One output pipe of a command: what is forwarded, up to the cap, and past it the latest
    half cap of bytes (`end`, sent with the exit) and how many were dropped before them."""

    def __init__(self, kind, room):
        self.kind, self.room, self.truncated = kind, room, False
        self.keep, self.end, self.past = room // 2, bytearray(), 0
        self.tail, self.last_line_at = b"", time.monotonic()

    def take(self, out, data):
        if self.room > 0:
            part = data[:self.room]
            self.room -= len(part)
            out.send(self.kind, part)
            data = data[len(part):]
        if not data:
            return
        self.truncated = True
        self.past += len(data)
        self.end += data
        if len(self.end) > 2 * self.keep:
            del self.end[:len(self.end) - self.keep]
        if self.kind != b"O":
            return
        self.tail = (self.tail + data)[-4096:]  # the latest line, for progress
        now = time.monotonic()
        end = self.tail.rfind(b"\n")
        if end >= 0 and now - self.last_line_at >= 1:
            out.send(b"L", self.tail[self.tail.rfind(b"\n", 0, end) + 1:end])
            self.last_line_at = now


def _end_of(stream):
    """What the exit frame says of a stream past its cap: bytes dropped, then its last bytes."""
    end = bytes(stream.end[-stream.keep:]) if stream.keep else b""
    return {"dropped": stream.past - len(end), "data": base64.b64encode(end).decode("ascii")}


def _run(req, proto_in, out, wake_r, user):
    env = dict(e.split("=", 1) for e in req.get("env", []) if "=" in e)
    stdin_data = req.get("stdin", "").encode("utf-8", "surrogateescape")
    nonce = req.get("nonce")
    cwd = req.get("cwd") or None
    argv = req.get("argv")
    enter = req.get("enter", [])
    if not isinstance(enter, list) or not all(isinstance(a, str) for a in enter):
        out.send_json(b"X", {"error": "malformed enter options", "nonce": nonce})
        return
    if user is not None and isinstance(argv, list):
        # The directory is entered as the user (after the ids change), not as root; an error
        # there is the command's (exit status 126, said on its stderr).
        argv = [_ENTER, *enter, f"{user[0]}:{user[1]}", cwd or "/", *argv]
        cwd = None
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=env,
                                stdin=subprocess.PIPE if stdin_data else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True, close_fds=True)
    except (OSError, KeyError, TypeError, ValueError) as exc:
        out.send_json(b"X", {"error": f"cannot start the command: {exc}", "nonce": nonce})
        return
    out.send(b"S")
    cap = max(0, int(req.get("max_output", 100 * 1024)))
    streams = {proc.stdout.fileno(): _Stream(b"O", cap), proc.stderr.fileno(): _Stream(b"E", cap)}
    sel = selectors.DefaultSelector()
    for fd in streams:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    sel.register(proto_in.fd, selectors.EVENT_READ)
    sel.register(wake_r, selectors.EVENT_READ)
    pending = memoryview(stdin_data)
    stdin_fd = -1  # while there is input left to write
    if proc.stdin is not None:
        stdin_fd = proc.stdin.fileno()
        os.set_blocking(stdin_fd, False)
        sel.register(stdin_fd, selectors.EVENT_WRITE)
    open_streams, killed, exited_at = len(streams), False, None
    # A kill may have come in the same read as the request.
    if any(doc.get("type") == "kill" for doc in proto_in.frames()):
        killed = True
        _kill_command(proc)
    while open_streams:
        timeout = None if exited_at is None else max(0, exited_at + 0.1 - time.monotonic())
        events = sel.select(timeout)
        if not events and exited_at is not None:
            break  # the command is gone; what still holds its pipes is not below us
        for key, _ in events:
            fd = key.fd
            if fd in streams:
                try:
                    data = os.read(fd, 1 << 16)
                except BlockingIOError:
                    continue
                if data:
                    streams[fd].take(out, data)
                else:
                    sel.unregister(fd)
                    open_streams -= 1
            elif fd == stdin_fd:
                try:
                    pending = pending[os.write(fd, pending):]
                except BlockingIOError:
                    continue
                except OSError:  # the command closed its stdin
                    pending = pending[:0]
                if not pending:
                    sel.unregister(fd)
                    proc.stdin.close()
                    stdin_fd = -1
            elif fd == proto_in.fd:
                proto_in.feed()
                for doc in proto_in.frames():
                    if doc.get("type") == "kill":
                        killed = True
                        _kill_command(proc)
                if proto_in.eof:  # the server is gone: so is the command
                    sel.unregister(fd)
                    killed = True
                    _kill_command(proc)
            elif fd == wake_r:  # a SIGCHLD: checked below
                os.read(wake_r, 512)
        if exited_at is None and proc.poll() is not None:
            exited_at = time.monotonic()
            _kill_group(proc.pid, proc)  # what it left running goes with it
            _end_tree()
            _sweep(user[0] if user else None)
    if proc.stdin is not None and not proc.stdin.closed:
        proc.stdin.close()
    sel.close()
    for pipe in (proc.stdout, proc.stderr):
        pipe.close()
    _kill_group(proc.pid, proc)
    status = proc.wait()
    _end_tree()
    if exited_at is None:  # else swept when it exited, and nothing of the user was left to fork
        _sweep(user[0] if user else None)
    out.send_json(b"X", {"exit_code": 128 - status if status < 0 else status,
                         "signal": -status if status < 0 else 0, "killed": killed,
                         "truncated": [s.truncated for s in streams.values()],
                         "ends": [_end_of(s) for s in streams.values()], "nonce": nonce})


_USER = None  # (uid, gid) with --user
_ENTER = None  # the path of byd-enter, with --user


def _parse_user(argv):
    if not argv:
        return None, None
    try:
        if argv[0] != "--user" or argv[2] != "--enter" or len(argv) != 4:
            raise ValueError
        uid, gid = (int(part) for part in argv[1].split(":"))
    except (IndexError, ValueError):
        raise SystemExit("usage: runner.py [--user UID:GID --enter BYD_ENTER]")
    if uid == 0:
        raise SystemExit("runner.py: --user must not be root")
    return (uid, gid), argv[3]


def main():
    global _USER, _ENTER
    _USER, _ENTER = _parse_user(sys.argv[1:])
    proto_in = _In(os.dup(0))
    out = _Out(os.dup(1))
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # stray prints go to the server's log, never into the frames
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    _become_subreaper()
    out.send_json(b"R", {"pid": os.getpid()})
    while True:
        req = proto_in.next_blocking()
        if req is None:
            return
        if req.get("type") == "run":
            try:
                _run(req, proto_in, out, wake_r, _USER)
            except Exception as exc:  # a bug here: say so, and let the server start another
                out.send_json(b"X", {"error": f"the command runner failed: {exc!r}",
                                     "nonce": req.get("nonce")})
                raise
        # a kill that came after its command ended has nothing left to do


if __name__ == "__main__":
    sys.exit(main())
