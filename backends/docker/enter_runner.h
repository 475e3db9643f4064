#pragma once
// byd-enter's command runner (`byd-enter --runner UID:GID`): one long-lived process in a
// container that starts the commands of `execute`, so that a command costs a fork instead of
// an engine exec (create, start, inspect: tens of milliseconds). Started as the container's
// root through one exec; with `--connect SOCKET` (the server's, in its rendezvous directory)
// its stdin and stdout become one connection to the server, so that its frames pass neither
// the engine nor the container's shim; else they are the exec's (ContainerRunner).
//
// Each command is a child of the runner that enters as byd-enter does (its masks, its user
// with no supplementary groups and no capabilities, its directory entered as that user, its
// seccomp filter) and executes the command: one exec per command, none for the way in. The
// code cannot signal, trace or open the descriptors of the runner, and when a command ends
// every process of UID in the container is killed too (the runner's container holds no other
// code: a command that killed its parent, or left the runner's tree some other way, does not
// outlive it).
//
// It runs one command at a time, to its end. In (stdin): frames of a 4-byte big-endian length
// and that much UTF-8 JSON:
//   {"type": "run", "argv": [...], "enter": [...], "env": ["K=V", ...], "cwd": DIR,
//    "stdin": TEXT, "max_output": BYTES, "nonce": TEXT}
//   ("enter": byd-enter's options for the command, before its user: its seccomp filter and
//   the masks of its workspace)
//   {"type": "kill"}        ends the running command's process group
// Out (stdout): frames of a kind byte, a 4-byte big-endian length and that many bytes:
//   R ready ({"pid"}), S started, O / E stdout / stderr bytes (each cut at max_output, the rest
//   read and dropped), L the latest complete stdout line past the cut (at most once a second),
//   X exit ({"exit_code", "signal", "killed", "truncated": [out, err], "ends": [out, err]
//   ({"dropped": BYTES, "data": BASE64}: past the cap, the bytes dropped, then the last ones),
//   "nonce"} or {"error": TEXT, "nonce"}; the nonce is the request's, which the command never
//   sees, so an exit frame the command wrote into the runner's output itself is told from the
//   runner's).
// A command's output is held up to 10 ms (or 256 KiB) and goes out with what follows it: each
// write wakes the server (and, without --connect, the engine's exec stream), and a short
// command's output and exit go out together.
// Each command leads a process group of its own, and the runner is a child subreaper, so what
// a command starts stays below the runner even when it leaves the group (setsid) or its parent
// dies. When the command ends, or is killed, its group and then everything else below the
// runner is killed too. Kills are system calls from this process, so they work even when the
// container's process limit leaves no room for another process.

#include <sys/types.h>

#include <vector>

namespace byd::enter {

// Enters as byd-enter's argv says ({"byd-enter", options..., "UID:GID", DIR, PROGRAM, ARG...})
// and executes PROGRAM; never returns (exit 126 or 127 when it cannot, said on stderr).
using EnterFn = void (*)(int argc, char** argv);

// Serves frames until its stdin ends: 0, or 1 after a failure of its own (said on stderr and,
// when a command was asked for, in its exit frame).
int runner(unsigned long uid, unsigned long gid, EnterFn enter);

// The real uid of process `pid` (a /proc name), or -1 once it is gone.
long uidOf(const char* pid);
// The processes whose real uid is `uid`, by /proc; false when /proc cannot be read.
bool processesOf(unsigned long uid, std::vector<pid_t>* found);

}  // namespace byd::enter
