// byd-enter: the Docker backend's way for code into a container. Started as the container's
// root (by the command runner, or by an exec for a Python kernel), it optionally masks the
// workspace as the file rules say, becomes the code's user for good,
// enters the working directory as that user, optionally installs the sandbox's seccomp filter,
// and executes the program. A static binary with no dependency on the image: copied into each
// container beside the runner. It also changes the masks of a kernel's container between cells,
// and relays the container's connections to the server's proxy.
//
//   byd-enter [--pid-file FILE] [--filter BPF] [--masks-root DIR [--mask KPATH]...]
//             UID:GID DIR PROGRAM [ARG...]
//   byd-enter --update-masks UID --masks-root DIR [--mask KPATH]...
//   byd-enter --relay SOCKET PORT
//   byd-enter --runner UID:GID
//
// --pid-file: writes its pid (the program's, after the exec) to FILE first, as root, where the
// code cannot change it. --filter: the BPF program the server compiled (struct sock_filter[]).
// --masks-root: the masks (enter_masks.h) of the workspace mounted at DIR become those given by
// --mask (none: no mask), before the program starts. --update-masks: the same alone, the
// processes of UID stopped meanwhile (a kernel's, between cells). --relay: enter_relay.h.
// --runner: the command runner (enter_runner.h), each command entered as the first form does.
// Exit status 126 when it cannot do one of these (said on stderr), 127 when PROGRAM cannot be
// executed; otherwise the program's.

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "backends/docker/enter_masks.h"
#include "backends/docker/enter_relay.h"
#include "backends/docker/enter_runner.h"

namespace {

constexpr int kCannot = 126;
constexpr int kNoProgram = 127;

[[noreturn]] void fail(const char* what, const char* arg, int err, int code = kCannot) {
  fprintf(stderr, "byd-enter: %s%s%s: %s\n", what, arg[0] ? " " : "", arg, strerror(err));
  exit(code);
}

[[noreturn]] void usage() {
  fprintf(stderr,
          "usage: byd-enter [--pid-file FILE] [--filter BPF] [--masks-root DIR [--mask KPATH]...]\n"
          "                 UID:GID DIR PROGRAM [ARG...]\n"
          "       byd-enter --update-masks UID --masks-root DIR [--mask KPATH]...\n"
          "       byd-enter --relay SOCKET PORT\n"
          "       byd-enter --runner UID:GID [--connect SOCKET]\n");
  exit(kCannot);
}

// Makes the masks of the workspace at `root` `wanted`, from what the last call left. One call
// at a time: a container runs one command, or one kernel, at a time. Exits when it cannot,
// saying why.
void syncMasks(const std::string& root, const std::vector<byd::enter::Mask>& wanted) {
  const std::string state = std::string(byd::enter::kMaskSource) + "/state";
  // No mask wanted and none was ever made here: nothing to do (most workspaces, most calls).
  if (wanted.empty() && access(state.c_str(), F_OK) != 0 && errno == ENOENT) return;
  byd::enter::Masks masks(root, byd::enter::kMaskSource);
  std::string error = masks.load();
  const bool loaded = error.empty();
  if (loaded) error = masks.apply(wanted);
  if (loaded) {
    // What was made, also when a mask failed: the next call starts from it.
    const std::string saved = masks.save();
    if (error.empty()) error = saved;
  }
  if (!error.empty()) {
    fprintf(stderr, "byd-enter: the file rules' masks: %s\n", error.c_str());
    exit(kCannot);
  }
}

// --masks-root DIR and --mask KPATH, at argv[i] and argv[i + 1]; false when it is neither.
bool maskOption(char** argv, int i, std::string* root, std::vector<byd::enter::Mask>* wanted) {
  const std::string_view opt = argv[i];
  byd::enter::Mask mask;
  if (opt == "--masks-root" && argv[i + 1][0] == '/') {
    *root = argv[i + 1];
    return true;
  }
  if (opt == "--mask" && byd::enter::parseMask(argv[i + 1], &mask)) {
    wanted->push_back(std::move(mask));
    return true;
  }
  return false;
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

// Whether process `pid` is stopped (or gone).
bool stopped(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = fopen(path, "re");
  if (f == nullptr) return true;
  char buf[512];
  const size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  const char* paren = strrchr(buf, ')');
  return paren == nullptr || paren[1] == 0 || paren[2] == 'T' || paren[2] == 't' ||
         paren[2] == 'Z' || paren[2] == 'X';
}

// Stops every process of `uid` (again until no new one appears) and waits until each has.
std::vector<pid_t> stopUser(unsigned long uid) {
  std::vector<pid_t> all;
  for (bool more = true; more;) {
    more = false;
    std::vector<pid_t> found;
    if (!byd::enter::processesOf(uid, &found)) fail("cannot read", "/proc", errno);
    for (const pid_t pid : found) {
      if (pid == getpid()) continue;
      bool known = false;
      for (pid_t p : all) known = known || p == pid;
      if (known) continue;
      if (kill(pid, SIGSTOP) == 0) {
        all.push_back(pid);
        more = true;
      }
    }
  }
  for (int tries = 0; tries < 200; ++tries) {
    bool all_stopped = true;
    for (pid_t p : all) all_stopped = all_stopped && stopped(p);
    if (all_stopped) break;
    usleep(10000);
  }
  return all;
}

// --update-masks UID --masks-root DIR [--mask KPATH]...
int updateMasks(int argc, char** argv) {
  unsigned long uid = 0;
  if (argc < 5 || !parseId(argv[2], &uid) || uid == 0) usage();
  std::string root;
  std::vector<byd::enter::Mask> wanted;
  for (int i = 3; i < argc; i += 2) {
    if (i + 1 >= argc || !maskOption(argv, i, &root, &wanted)) usage();
  }
  if (root.empty()) usage();
  const std::vector<pid_t> held = stopUser(uid);
  syncMasks(root, wanted);  // on failure the server ends them all
  for (pid_t p : held) kill(p, SIGCONT);
  return 0;
}

// Parses "UID:GID" (not root) into `uid` and `gid`; exits saying why when it cannot.
void parseIds(const char* text, unsigned long* uid, unsigned long* gid) {
  const std::string_view ids = text;
  const size_t colon = ids.find(':');
  if (colon == std::string_view::npos || !parseId(ids.substr(0, colon), uid) ||
      !parseId(ids.substr(colon + 1), gid) || *uid == 0) {
    fprintf(stderr, "byd-enter: UID:GID must be two numbers and not root, got '%s'\n", text);
    exit(kCannot);
  }
}

// [--pid-file FILE] [--filter BPF] [--masks-root DIR [--mask KPATH]...] UID:GID DIR PROGRAM...
[[noreturn]] void enterAndExec(int argc, char** argv) {
  int i = 1;
  const char* pid_file = nullptr;
  const char* filter = nullptr;
  std::string root;  // with masks
  std::vector<byd::enter::Mask> wanted;
  while (i + 1 < argc && argv[i][0] == '-' && argv[i][1] == '-') {
    const std::string_view opt = argv[i];
    if (opt == "--pid-file") {
      pid_file = argv[i + 1];
    } else if (opt == "--filter") {
      filter = argv[i + 1];
    } else if (!maskOption(argv, i, &root, &wanted)) {
      usage();
    }
    i += 2;
  }
  if (root.empty() && !wanted.empty()) usage();
  if (argc - i < 3) usage();
  unsigned long uid = 0, gid = 0;
  parseIds(argv[i], &uid, &gid);
  const char* dir = argv[i + 1];
  char** program = argv + i + 2;

  if (pid_file != nullptr) writePid(pid_file);
  if (!root.empty()) syncMasks(root, wanted);
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

// The runner's stdin and stdout become one connection to the unix socket at `path` (the
// server's, in its rendezvous directory): its frames then pass between it and the server
// alone. When that cannot be, they stay its exec's, and it says why on stderr.
void connectStdio(const char* path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (strlen(path) < sizeof addr.sun_path) memcpy(addr.sun_path, path, strlen(path) + 1);
  if (sock >= 0 && addr.sun_path[0] != '\0' &&
      connect(sock, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0 &&
      dup2(sock, 0) == 0 && dup2(sock, 1) == 1) {
    close(sock);
    return;
  }
  fprintf(stderr, "cannot connect to %s (%s); frames go through the exec\n", path, strerror(errno));
  if (sock >= 0) close(sock);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string_view mode = argc > 1 ? argv[1] : "";
  if (mode == "--update-masks") return updateMasks(argc, argv);
  if (mode == "--relay") {
    if (argc != 4) usage();
    return byd::enter::relay(argv[2], atoi(argv[3]));
  }
  if (mode == "--runner") {
    if (argc != 3 && !(argc == 5 && std::string_view(argv[3]) == "--connect")) usage();
    unsigned long uid = 0, gid = 0;
    parseIds(argv[2], &uid, &gid);
    if (argc == 5) connectStdio(argv[4]);
    return byd::enter::runner(uid, gid, enterAndExec);
  }
  enterAndExec(argc, argv);
}
