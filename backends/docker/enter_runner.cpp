#include "backends/docker/enter_runner.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/text.h"

extern char** environ;

namespace byd::enter {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr size_t kHoldBytes = 256 * 1024;
constexpr milliseconds kHold{10};

void sleepMs(int ms) { usleep(static_cast<useconds_t>(ms) * 1000); }

// ---- processes --------------------------------------------------------------------------

// Every process's parent, by /proc: {pid, ppid}.
std::vector<std::pair<pid_t, pid_t>> parentLinks() {
  std::vector<std::pair<pid_t, pid_t>> links;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return links;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char buf[512];
    const std::string path = std::string("/proc/") + e->d_name + "/stat";
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // gone meanwhile
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) continue;
    buf[n] = 0;
    const char* paren = strrchr(buf, ')');
    if (paren == nullptr || paren[1] == 0 || paren[2] == 0) continue;
    links.emplace_back(static_cast<pid_t>(atoi(e->d_name)),
                       static_cast<pid_t>(atoi(paren + 4)));  // ") S PPID"
  }
  closedir(dir);
  return links;
}

// This process's children (it has one thread).
std::vector<pid_t> children() {
  std::vector<pid_t> kids;
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/children", static_cast<int>(getpid()));
  if (FILE* f = fopen(path, "re")) {
    int pid = 0;
    while (fscanf(f, "%d", &pid) == 1) kids.push_back(pid);
    fclose(f);
    return kids;
  }
  for (const auto& [pid, ppid] : parentLinks()) {  // no such file in this kernel
    if (ppid == getpid()) kids.push_back(pid);
  }
  return kids;
}

// Every process below this one.
std::vector<pid_t> descendants() {
  const auto links = parentLinks();
  std::vector<pid_t> found, todo = {getpid()};
  while (!todo.empty()) {
    const pid_t parent = todo.back();
    todo.pop_back();
    for (const auto& [pid, ppid] : links) {
      if (ppid != parent) continue;
      found.push_back(pid);
      todo.push_back(pid);
    }
  }
  return found;
}

// A frame's "type", or "" when it has none that is a string.
std::string typeOf(const json& doc) {
  const auto it = doc.find("type");
  return it != doc.end() && it->is_string() ? it->get<std::string>() : "";
}

void killEach(const std::vector<pid_t>& pids) {
  for (pid_t p : pids) kill(p, SIGKILL);
}

// ---- the frames -------------------------------------------------------------------------

std::string frameHead(char kind, size_t n) {
  return {kind, static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
          static_cast<char>(n)};
}

// The frame stream to the server: blocking writes of whole frames, output held a little.
class Out {
 public:
  explicit Out(int fd) : fd_(fd) {}

  // Sends a frame now, after what is held.
  void send(char kind, std::string_view payload = {}) {
    held_ += frameHead(kind, payload.size());
    held_ += payload;
    flush();
  }
  void sendJson(char kind, const json& doc) {
    send(kind, doc.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  // Queues a frame of output: it goes with the next send, or once due.
  void hold(char kind, std::string_view payload) {
    if (held_.empty()) held_since_ = Clock::now();
    held_ += frameHead(kind, payload.size());
    held_ += payload;
    if (held_.size() >= kHoldBytes) flush();
  }
  void flush() {
    std::string_view rest = held_;
    while (!rest.empty()) {
      const ssize_t n = write(fd_, rest.data(), rest.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        // The server is gone: so is what runs for it.
        killEach(descendants());
        _exit(0);
      }
      rest.remove_prefix(static_cast<size_t>(n));
    }
    held_.clear();
  }
  // Milliseconds until what is held must go, or -1 when nothing is held.
  int dueInMs() const {
    if (held_.empty()) return -1;
    const auto left = held_since_ + kHold - Clock::now();
    return std::max<int>(0, static_cast<int>(std::chrono::ceil<milliseconds>(left).count()));
  }

 private:
  int fd_;
  std::string held_;
  Clock::time_point held_since_;
};

// Frames from the server, read as they arrive.
struct In {
  int fd;
  std::string buf;
  bool eof = false;

  void feed() {
    char chunk[1 << 16];
    const ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (n <= 0) {
      eof = true;
      return;
    }
    buf.append(chunk, static_cast<size_t>(n));
  }
  // The next whole frame, if one has come: a JSON object, or {"type": "bad"}.
  bool next(json* doc) {
    if (buf.size() < 4) return false;
    const auto* h = reinterpret_cast<const unsigned char*>(buf.data());
    const size_t size = size_t{h[0]} << 24 | size_t{h[1]} << 16 | size_t{h[2]} << 8 | h[3];
    if (buf.size() < 4 + size) return false;
    json parsed =
        json::parse(buf.begin() + 4, buf.begin() + 4 + static_cast<long>(size), nullptr, false);
    buf.erase(0, 4 + size);
    *doc = parsed.is_object() ? std::move(parsed) : json{{"type", "bad"}};
    return true;
  }
  bool nextBlocking(json* doc) {
    while (!next(doc)) {
      if (eof) return false;
      feed();
    }
    return true;
  }
};

// ---- one command --------------------------------------------------------------------------

// One output pipe of a command: what is forwarded, up to the cap, and past it the latest half
// cap of bytes (`end`, sent with the exit) and how many were dropped before them.
struct Stream {
  char kind;
  size_t room;
  size_t keep;
  int fd;
  bool truncated = false;
  bool open = true;
  std::string end;
  uint64_t past = 0;
  std::string tail;  // stdout past the cap: its latest bytes, for the latest line
  Clock::time_point last_line_at = Clock::now();

  Stream(char k, size_t cap, int f) : kind(k), room(cap), keep(cap / 2), fd(f) {}

  void take(Out& out, std::string_view data) {
    if (room > 0) {
      const std::string_view part = data.substr(0, room);
      room -= part.size();
      out.hold(kind, part);
      data.remove_prefix(part.size());
    }
    if (data.empty()) return;
    truncated = true;
    past += data.size();
    end += data;
    if (end.size() > 2 * keep) end.erase(0, end.size() - keep);
    if (kind != 'O') return;
    tail += data;
    if (tail.size() > 4096) tail.erase(0, tail.size() - 4096);
    const size_t nl = tail.rfind('\n');
    const auto now = Clock::now();
    if (nl != std::string::npos && now - last_line_at >= std::chrono::seconds(1)) {
      const size_t before = nl == 0 ? std::string::npos : tail.rfind('\n', nl - 1);
      const size_t from = before == std::string::npos ? 0 : before + 1;
      out.send('L', std::string_view(tail).substr(from, nl - from));
      last_line_at = now;
    }
  }

  json endOf() const {
    const std::string last = keep > 0 && end.size() > keep ? end.substr(end.size() - keep)
                             : keep > 0                    ? end
                                                           : std::string();
    return {{"dropped", past - last.size()}, {"data", base64Encode(last)}};
  }
};

class Runner {
 public:
  Runner(unsigned long uid, unsigned long gid, EnterFn enter, int sigfd, In& in, Out& out)
      : uid_(uid), gid_(gid), enter_(enter), sigfd_(sigfd), in_(in), out_(out) {}

  void run(const json& req);

 private:
  // Reaps every child that has ended, keeping the command's status when it is one.
  void reap() {
    int status = 0;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      if (pid == command_) status_ = status;
    }
  }
  bool commandEnded() {
    if (!status_) reap();
    return status_.has_value();
  }
  // Kills every process of the user in the container, until none is left or two seconds
  // have passed.
  void sweep() {
    const auto deadline = Clock::now() + std::chrono::seconds(2);
    for (;;) {
      std::vector<pid_t> found;
      processesOf(uid_, &found);
      reap();
      if (found.empty() || Clock::now() >= deadline) return;
      killEach(found);
      sleepMs(1);
    }
  }
  // SIGKILLs the command's group until it is empty: the leader reaped, the rest reaped as our
  // orphans or by init.
  void killGroup() {
    const auto deadline = Clock::now() + std::chrono::seconds(2);
    for (;;) {
      if (killpg(command_, SIGKILL) != 0) return;
      reap();  // the leader, and members that died as our orphans (we are their subreaper)
      if (!status_) {
        sleepMs(1);
        continue;
      }
      if (Clock::now() >= deadline) return;
      sleepMs(2);
    }
  }
  // Kills and reaps every process below this one.
  void endTree() {
    const auto deadline = Clock::now() + std::chrono::seconds(2);
    for (;;) {
      reap();
      const std::vector<pid_t> kids = children();
      if (kids.empty() || Clock::now() >= deadline) return;
      killEach(kids);
      sleepMs(1);  // for them to die; their own children come to us next round
    }
  }
  // Ends a command that still runs: its whole tree while the parent links still hold it
  // together, then its group, then what became our orphans, then the user's every process.
  void killCommand() {
    killed_ = true;
    killEach(descendants());
    killGroup();
    endTree();
    sweep();
  }
  // Takes the frames that came; a kill, or the end of the server's frames, ends the command.
  void takeFrames() {
    json doc;
    while (in_.next(&doc)) {
      if (typeOf(doc) == "kill" && !killed_) killCommand();
    }
    if (in_.eof && !killed_) killCommand();
  }
  [[noreturn]] void child(const std::vector<std::string>& args, std::vector<std::string>& env,
                          int stdin_fd, int out_fd, int err_fd);

  const unsigned long uid_, gid_;
  const EnterFn enter_;
  const int sigfd_;
  In& in_;
  Out& out_;
  pid_t command_ = -1;
  std::optional<int> status_;
  bool killed_ = false;
};

void Runner::child(const std::vector<std::string>& args, std::vector<std::string>& env,
                   int stdin_fd, int out_fd, int err_fd) {
  setsid();
  if (stdin_fd < 0) stdin_fd = open("/dev/null", O_RDONLY);
  dup2(stdin_fd, 0);
  dup2(out_fd, 1);
  dup2(err_fd, 2);
  // What the runner set for itself is not the command's.
  signal(SIGPIPE, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  std::vector<char*> argv, envp;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  environ = envp.data();
  enter_(static_cast<int>(args.size()), argv.data());
  _exit(126);  // not reached
}

bool stringList(const json& v) {
  if (!v.is_array()) return false;
  for (const json& s : v) {
    if (!s.is_string()) return false;
  }
  return true;
}

void Runner::run(const json& req) {
  const json nonce = req.contains("nonce") ? req["nonce"] : json(nullptr);
  const json& argv = req.contains("argv") ? req["argv"] : json::array();
  const json& enter = req.contains("enter") ? req["enter"] : json::array();
  if (!stringList(enter)) {
    out_.sendJson('X', {{"error", "malformed enter options"}, {"nonce", nonce}});
    return;
  }
  if (!stringList(argv) || argv.empty()) {
    out_.sendJson('X', {{"error", "cannot start the command: argv must be a list of strings"},
                        {"nonce", nonce}});
    return;
  }
  // The environment, its last value of a name winning.
  std::map<std::string, std::string> vars;
  if (req.contains("env") && stringList(req["env"])) {
    for (const json& e : req["env"]) {
      const std::string kv = e.get<std::string>();
      const size_t eq = kv.find('=');
      if (eq != std::string::npos) vars[kv.substr(0, eq)] = kv;
    }
  }
  std::vector<std::string> env;
  for (auto& [name, kv] : vars) env.push_back(std::move(kv));
  const json& stdin_json = req.contains("stdin") ? req["stdin"] : json("");
  const std::string stdin_data = stdin_json.is_string() ? stdin_json.get<std::string>() : "";
  const json& cwd_json = req.contains("cwd") ? req["cwd"] : json("");
  std::string cwd = cwd_json.is_string() ? cwd_json.get<std::string>() : "";
  if (cwd.empty()) cwd = "/";
  size_t cap = 100 * 1024;
  if (req.contains("max_output") && req["max_output"].is_number_integer()) {
    cap = static_cast<size_t>(std::max<int64_t>(0, req["max_output"].get<int64_t>()));
  }

  // byd-enter's own arguments: its options, then the user, the directory and the command.
  std::vector<std::string> args = {"byd-enter"};
  for (const json& a : enter) args.push_back(a.get<std::string>());
  args.push_back(std::to_string(uid_) + ":" + std::to_string(gid_));
  args.push_back(cwd);
  for (const json& a : argv) args.push_back(a.get<std::string>());

  int outp[2], errp[2], inp[2] = {-1, -1};
  if (pipe2(outp, O_CLOEXEC) != 0) {
    out_.sendJson('X', {{"error", std::string("cannot start the command: ") + strerror(errno)},
                        {"nonce", nonce}});
    return;
  }
  if (pipe2(errp, O_CLOEXEC) != 0 || (!stdin_data.empty() && pipe2(inp, O_CLOEXEC) != 0)) {
    const std::string why = strerror(errno);
    for (int fd : {outp[0], outp[1], errp[0], errp[1]}) close(fd);
    out_.sendJson('X', {{"error", "cannot start the command: " + why}, {"nonce", nonce}});
    return;
  }
  command_ = -1;
  status_.reset();
  killed_ = false;
  const pid_t pid = fork();
  if (pid == 0) child(args, env, inp[0], outp[1], errp[1]);
  close(outp[1]);
  close(errp[1]);
  if (inp[0] >= 0) close(inp[0]);
  if (pid < 0) {
    const std::string why = strerror(errno);
    for (int fd : {outp[0], errp[0], inp[1]}) {
      if (fd >= 0) close(fd);
    }
    out_.sendJson('X', {{"error", "cannot start the command: " + why}, {"nonce", nonce}});
    return;
  }
  command_ = pid;
  out_.send('S');

  Stream streams[2] = {Stream('O', cap, outp[0]), Stream('E', cap, errp[0])};
  for (Stream& s : streams) fcntl(s.fd, F_SETFL, fcntl(s.fd, F_GETFL) | O_NONBLOCK);
  std::string_view pending = stdin_data;
  int stdin_fd = inp[1];
  if (stdin_fd >= 0) fcntl(stdin_fd, F_SETFL, fcntl(stdin_fd, F_GETFL) | O_NONBLOCK);
  bool listening = true;  // to the server's frames
  std::optional<Clock::time_point> exited_at;
  // A kill may have come in the same read as the request.
  takeFrames();
  listening = !in_.eof;
  char buf[1 << 16];
  while (streams[0].open || streams[1].open) {
    int timeout = -1;
    if (exited_at) {
      timeout = std::max<int>(0, static_cast<int>(std::chrono::ceil<milliseconds>(
                                                      *exited_at + milliseconds(100) - Clock::now())
                                                      .count()));
    }
    const int due = out_.dueInMs();
    if (due >= 0) timeout = timeout < 0 ? due : std::min(timeout, due);
    pollfd fds[5];
    int n = 0;
    for (Stream& s : streams) {
      if (s.open) fds[n++] = {s.fd, POLLIN, 0};
    }
    if (stdin_fd >= 0) fds[n++] = {stdin_fd, POLLOUT, 0};
    if (listening) fds[n++] = {in_.fd, POLLIN, 0};
    fds[n++] = {sigfd_, POLLIN, 0};
    const int ready = poll(fds, static_cast<nfds_t>(n), timeout);
    if (ready < 0 && errno != EINTR) break;
    if (out_.dueInMs() == 0) out_.flush();
    if (ready == 0 && exited_at && Clock::now() >= *exited_at + milliseconds(100)) {
      break;  // the command is gone; what still holds its pipes is not below us
    }
    for (int i = 0; i < n && ready > 0; ++i) {
      if (fds[i].revents == 0) continue;
      const int fd = fds[i].fd;
      if (fd == sigfd_) {
        signalfd_siginfo info;
        while (read(sigfd_, &info, sizeof info) > 0) {
        }
      } else if (fd == in_.fd) {
        in_.feed();
        takeFrames();
        if (in_.eof) listening = false;
      } else if (fd == stdin_fd) {
        const ssize_t w = write(stdin_fd, pending.data(), pending.size());
        if (w > 0) {
          pending.remove_prefix(static_cast<size_t>(w));
        } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
          pending = {};  // the command closed its stdin
        }
        if (pending.empty()) {
          close(stdin_fd);
          stdin_fd = -1;
        }
      } else {
        for (Stream& s : streams) {
          if (s.fd != fd || !s.open) continue;
          const ssize_t got = read(fd, buf, sizeof buf);
          if (got > 0) {
            s.take(out_, std::string_view(buf, static_cast<size_t>(got)));
          } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
            s.open = false;
          }
        }
      }
    }
    if (!exited_at && commandEnded()) {
      exited_at = Clock::now();
      killGroup();  // what it left running goes with it
      endTree();
      sweep();
    }
  }
  if (stdin_fd >= 0) close(stdin_fd);
  for (Stream& s : streams) close(s.fd);
  killGroup();
  while (!status_) {
    int status = 0;
    const pid_t got = waitpid(command_, &status, 0);
    if (got == command_) status_ = status;
    if (got < 0 && errno != EINTR) status_ = 0;  // not ours to wait for: cannot happen
  }
  endTree();
  if (!exited_at) sweep();  // else swept when it exited, and nothing of the user was left
  const int st = *status_;
  const int sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
  out_.sendJson('X', {{"exit_code", sig != 0 ? 128 + sig : WEXITSTATUS(st)},
                      {"signal", sig},
                      {"killed", killed_},
                      {"truncated", {streams[0].truncated, streams[1].truncated}},
                      {"ends", {streams[0].endOf(), streams[1].endOf()}},
                      {"nonce", nonce}});
}

}  // namespace

bool processesOf(unsigned long uid, std::vector<pid_t>* found) {
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return false;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && uidOf(e->d_name) == static_cast<long>(uid)) {
      found->push_back(static_cast<pid_t>(atoi(e->d_name)));
    }
  }
  closedir(dir);
  return true;
}

long uidOf(const char* pid) {
  const std::string path = std::string("/proc/") + pid + "/status";
  FILE* f = fopen(path.c_str(), "re");
  if (f == nullptr) return -1;
  char line[256];
  long uid = -1;
  while (fgets(line, sizeof line, f) != nullptr) {
    if (strncmp(line, "Uid:", 4) == 0) {
      uid = strtol(line + 4, nullptr, 10);
      break;
    }
  }
  fclose(f);
  return uid;
}

int runner(unsigned long uid, unsigned long gid, EnterFn enter) {
  In in{fcntl(0, F_DUPFD_CLOEXEC, 3), {}, false};
  Out out(fcntl(1, F_DUPFD_CLOEXEC, 3));
  const int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  dup2(devnull, 0);
  dup2(2, 1);  // stray prints go to the server's log, never into the frames
  close(devnull);
  signal(SIGPIPE, SIG_IGN);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, nullptr);
  const int sigfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
  if (in.fd < 0 || sigfd < 0) {
    fprintf(stderr, "byd-enter: the runner cannot start: %s\n", strerror(errno));
    return 1;
  }
  // Orphans below come to it instead of to init; nothing but root may read its memory or open
  // its descriptors through /proc.
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  out.sendJson('R', {{"pid", getpid()}});
  Runner r(uid, gid, enter, sigfd, in, out);
  json req;
  while (in.nextBlocking(&req)) {
    if (typeOf(req) != "run") continue;  // a kill after its command ended
    try {
      r.run(req);
    } catch (const std::exception& e) {  // a bug here: say so, and let the server start another
      out.sendJson('X', {{"error", std::string("the command runner failed: ") + e.what()},
                         {"nonce", req.contains("nonce") ? req["nonce"] : json(nullptr)}});
      killEach(descendants());
      return 1;
    }
  }
  return 0;
}

}  // namespace byd::enter
