// byd-enter: the Docker backend's way for code into a container. Started as the container's
// root (by the command runner, or by an exec for a Python kernel), it becomes the code's user
// for good, enters the working directory as that user, optionally installs the sandbox's
// seccomp filter, and executes the program. A static binary with no dependency on the image:
// copied into each container beside the runner.
//
//   byd-enter [--pid-file FILE] [--filter BPF] UID:GID DIR PROGRAM [ARG...]
//
// --pid-file: writes its pid (the program's, after the exec) to FILE first, as root, where the
// code cannot change it. --filter: the BPF program the server compiled (struct sock_filter[]).
// Exit status 126 when it cannot do one of these (said on stderr), 127 when PROGRAM cannot be
// executed; otherwise the program's.

#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace {

constexpr int kCannot = 126;
constexpr int kNoProgram = 127;

[[noreturn]] void fail(const char* what, const char* arg, int err, int code = kCannot) {
  fprintf(stderr, "byd-enter: %s%s%s: %s\n", what, arg[0] ? " " : "", arg, strerror(err));
  exit(code);
}

[[noreturn]] void usage() {
  fprintf(stderr,
          "usage: byd-enter [--pid-file FILE] [--filter BPF] UID:GID DIR PROGRAM [ARG...]\n");
  exit(kCannot);
}

bool parseId(std::string_view text, unsigned long* out) {
  if (text.empty() || text.size() > 10) return false;
  unsigned long v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<unsigned long>(c - '0');
  }
  if (v > 0xfffffffeUL) return false;
  *out = v;
  return true;
}

void writePid(const char* path) {
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot write", path, errno);
  char buf[24];
  const int n = snprintf(buf, sizeof buf, "%d\n", static_cast<int>(getpid()));
  if (write(fd, buf, static_cast<size_t>(n)) != n) fail("cannot write", path, errno);
  close(fd);
}

// Reads the whole filter (at most 64 KiB: BPF_MAXINSNS instructions) into `buf`.
size_t readFilter(const char* path, sock_filter* buf, size_t max) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot read", path, errno);
  auto* bytes = reinterpret_cast<char*>(buf);
  const size_t cap = max * sizeof(sock_filter);
  size_t got = 0;
  while (got < cap) {
    const ssize_t n = read(fd, bytes + got, cap - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("cannot read", path, errno);
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  char extra;
  if (got == cap && read(fd, &extra, 1) > 0) fail("too long a filter in", path, E2BIG);
  close(fd);
  if (got == 0 || got % sizeof(sock_filter) != 0) fail("not a BPF program:", path, EINVAL);
  return got / sizeof(sock_filter);
}

}  // namespace

int main(int argc, char** argv) {
  int i = 1;
  const char* pid_file = nullptr;
  const char* filter = nullptr;
  while (i + 1 < argc && argv[i][0] == '-' && argv[i][1] == '-') {
    const std::string_view opt = argv[i];
    if (opt == "--pid-file") {
      pid_file = argv[i + 1];
    } else if (opt == "--filter") {
      filter = argv[i + 1];
    } else {
      usage();
    }
    i += 2;
  }
  if (argc - i < 3) usage();
  const std::string_view ids = argv[i];
  const size_t colon = ids.find(':');
  unsigned long uid = 0, gid = 0;
  if (colon == std::string_view::npos || !parseId(ids.substr(0, colon), &uid) ||
      !parseId(ids.substr(colon + 1), &gid) || uid == 0) {
    fprintf(stderr, "byd-enter: UID:GID must be two numbers and not root, got '%s'\n", argv[i]);
    return kCannot;
  }
  const char* dir = argv[i + 1];
  char** program = argv + i + 2;

  if (pid_file != nullptr) writePid(pid_file);
  static sock_filter code[BPF_MAXINSNS];
  size_t code_len = 0;
  if (filter != nullptr) code_len = readFilter(filter, code, BPF_MAXINSNS);  // while root
  // For good: real, effective and saved ids, no supplementary groups; the capabilities go with
  // root.
  if (setgroups(0, nullptr) != 0) fail("cannot drop the supplementary groups", "", errno);
  if (setresgid(static_cast<gid_t>(gid), static_cast<gid_t>(gid), static_cast<gid_t>(gid)) != 0) {
    fail("cannot become gid", argv[i], errno);
  }
  if (setresuid(static_cast<uid_t>(uid), static_cast<uid_t>(uid), static_cast<uid_t>(uid)) != 0) {
    fail("cannot become uid", argv[i], errno);
  }
  uid_t r, e, s;
  if (getresuid(&r, &e, &s) != 0 || r != uid || e != uid || s != uid) {
    fail("the ids did not change to", argv[i], EPERM);
  }
  if (chdir(dir) != 0) fail("cannot enter", dir, errno);
  if (code_len > 0) {
    sock_fprog prog = {static_cast<unsigned short>(code_len), code};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail("cannot set no_new_privs", "", errno);
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0) {
      fail("the kernel refused the seccomp filter", "", errno);
    }
  }
  execvp(program[0], program);
  fail("cannot execute", program[0], errno, kNoProgram);
}
