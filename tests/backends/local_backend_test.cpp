#include "backends/local/local_backend.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "tests/test_util.h"

namespace byd {
namespace {

namespace fs = std::filesystem;

template <typename T>
void expectError(const Result<T>& r, Code code, const std::string& message) {
  ASSERT_FALSE(r.ok()) << "expected " << codeName(code) << " '" << message << "'";
  EXPECT_EQ(r.status().code(), code) << r.status().toString();
  EXPECT_EQ(r.status().message(), message);
}

std::vector<std::string> namesIn(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

mode_t permissionsOf(const fs::path& p) {
  struct stat st;
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

// Every test runs against openat2 (kAuto on this kernel) and against the fallback walk.
// Layout: tmp/ws is the root, tmp/extra an allowed directory, tmp/outside and tmp/ws_evil lie
// outside both.
class LocalBackendTest : public ::testing::TestWithParam<ResolveStrategy> {
 protected:
  void SetUp() override {
    for (const char* d : {"ws", "extra", "outside", "ws_evil"})
      fs::create_directory(tmp_.path() / d);
    tmp_.write("outside/secret.txt", "secret");
    tmp_.write("ws_evil/secret.txt", "evil");
    tmp_.write("ws/hello.txt", "hello world");
    auto r = LocalBackend::open(ws_.string(), {extra_.string()}, GetParam());
    ASSERT_TRUE(r.ok()) << r.status().toString();
    backend_ = std::move(r).value();
  }

  void link(const std::string& target, const fs::path& at) {
    ASSERT_EQ(::symlink(target.c_str(), at.c_str()), 0) << at;
  }

  testing::TempDir tmp_;
  fs::path ws_ = tmp_.path() / "ws";
  fs::path extra_ = tmp_.path() / "extra";
  fs::path outside_ = tmp_.path() / "outside";
  std::unique_ptr<LocalBackend> backend_;
};

// --- open, kind, root ---------------------------------------------------------------------

TEST_P(LocalBackendTest, KindAndCanonicalRoot) {
  EXPECT_EQ(backend_->kind(), "local");
  EXPECT_EQ(backend_->root(), ws_.string());
  // A non-canonical spelling of the root is made canonical.
  auto r = LocalBackend::open((ws_ / "." / ".." / "ws").string(), {}, GetParam());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->root(), ws_.string());
}

TEST_P(LocalBackendTest, OpenNamesTheBadDirectory) {
  const std::string missing = (tmp_.path() / "missing").string();
  const std::string file = (ws_ / "hello.txt").string();
  expectError(LocalBackend::open(missing, {}, GetParam()), Code::kNotFound,
              "workspace root '" + missing + "' does not exist");
  expectError(LocalBackend::open(file, {}, GetParam()), Code::kInvalidArgument,
              "workspace root '" + file + "' is not a directory");
  expectError(LocalBackend::open(ws_.string(), {missing}, GetParam()), Code::kNotFound,
              "allowed directory '" + missing + "' does not exist");
}

// --- normalize ----------------------------------------------------------------------------

TEST_P(LocalBackendTest, NormalizeRelativeAndAbsolute) {
  EXPECT_EQ(*backend_->normalize(""), "");
  EXPECT_EQ(*backend_->normalize("."), "");
  EXPECT_EQ(*backend_->normalize("a/./b//c/"), "a/b/c");
  EXPECT_EQ(*backend_->normalize("a/../b"), "b");
  EXPECT_EQ(*backend_->normalize(ws_.string()), "");
  EXPECT_EQ(*backend_->normalize((ws_ / "src/x.py").string()), "src/x.py");
  EXPECT_EQ(*backend_->normalize((extra_ / "y/z").string()), (extra_ / "y/z").string());
  EXPECT_EQ(*backend_->normalize(extra_.string() + "/"), extra_.string());
}

TEST_P(LocalBackendTest, NormalizeRefusesOutside) {
  expectError(backend_->normalize("../x"), Code::kPermissionDenied,
              "'../x' is outside the workspace");
  expectError(backend_->normalize("/etc/passwd"), Code::kPermissionDenied,
              "'/etc/passwd' is outside the workspace");
  const std::string evil = (tmp_.path() / "ws_evil/secret.txt").string();
  expectError(backend_->normalize(evil), Code::kPermissionDenied,
              "'" + evil + "' is outside the workspace");
  const std::string up = ws_.string() + "/../outside/secret.txt";
  expectError(backend_->normalize(up), Code::kPermissionDenied,
              "'" + up + "' is outside the workspace");
  expectError(backend_->normalize("/proc/self/root/etc/passwd"), Code::kPermissionDenied,
              "'/proc/self/root/etc/passwd' is outside the workspace");
}

TEST_P(LocalBackendTest, NulAndOverlongPathsAreRejected) {
  const std::string nul("a\0b", 3);
  expectError(backend_->normalize(nul), Code::kInvalidArgument, "path contains a NUL byte");
  expectError(backend_->read(nul, 0, 10), Code::kInvalidArgument, "path contains a NUL byte");
  expectError(backend_->write(nul, "x", WriteMode::kOverwrite), Code::kInvalidArgument,
              "path contains a NUL byte");
  const std::string longPath(5000, 'a');
  expectError(backend_->normalize(longPath), Code::kInvalidArgument,
              "path is 5000 characters long; the limit is 4095");
  expectError(backend_->stat(longPath), Code::kInvalidArgument,
              "path is 5000 characters long; the limit is 4095");
  // Under PATH_MAX overall but one component over NAME_MAX: the kernel's ENAMETOOLONG.
  const std::string longName(300, 'n');
  expectError(backend_->write(longName, "x", WriteMode::kOverwrite), Code::kInvalidArgument,
              "'" + longName + "': a file name is too long");
  expectError(backend_->read(longName, 0, 1), Code::kInvalidArgument,
              "'" + longName + "': a file name is too long");
}

// --- read, stat, list ---------------------------------------------------------------------

TEST_P(LocalBackendTest, ReadWholeAndPartial) {
  EXPECT_EQ(*backend_->read("hello.txt", 0, 1000), "hello world");
  EXPECT_EQ(*backend_->read("hello.txt", 6, 3), "wor");
  EXPECT_EQ(*backend_->read("hello.txt", 6, 1000), "world");
  EXPECT_EQ(*backend_->read("hello.txt", 100, 10), "");
  EXPECT_EQ(*backend_->read("hello.txt", 0, 0), "");
  EXPECT_EQ(*backend_->read(ws_.string() + "/hello.txt", 0, 5), "hello");
}

TEST_P(LocalBackendTest, ReadLargeFile) {
  std::string big(3 << 20, 'x');
  for (size_t i = 0; i < big.size(); i += 4096) big[i] = static_cast<char>('a' + i % 26);
  tmp_.write("ws/big.bin", big);
  EXPECT_EQ(*backend_->read("big.bin", 0, UINT64_MAX), big);
  EXPECT_EQ(*backend_->read("big.bin", 1000, 2 << 20), big.substr(1000, 2 << 20));
}

TEST_P(LocalBackendTest, ReadErrors) {
  fs::create_directory(ws_ / "d");
  expectError(backend_->read("nope.txt", 0, 1), Code::kNotFound, "'nope.txt' does not exist");
  expectError(backend_->read("d", 0, 1), Code::kInvalidArgument, "'d' is a directory");
  expectError(backend_->read("", 0, 1), Code::kInvalidArgument,
              "'" + ws_.string() + "' is a directory");
  expectError(backend_->read("hello.txt/x", 0, 1), Code::kInvalidArgument,
              "'hello.txt/x': 'hello.txt' is not a directory");
}

TEST_P(LocalBackendTest, StatReportsTypeSizeModeAndTime) {
  fs::create_directory(ws_ / "d");
  ASSERT_EQ(::chmod((ws_ / "hello.txt").c_str(), 0640), 0);
  auto f = backend_->stat("hello.txt");
  ASSERT_TRUE(f.ok()) << f.status().toString();
  EXPECT_EQ(f->name, "hello.txt");
  EXPECT_EQ(f->type, FileType::kFile);
  EXPECT_EQ(f->size, 11u);
  EXPECT_EQ(f->mode, 0640u);
  struct stat st;
  ASSERT_EQ(::stat((ws_ / "hello.txt").c_str(), &st), 0);
  EXPECT_EQ(f->mtime_ns, st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec);
  EXPECT_EQ(backend_->stat("d")->type, FileType::kDir);
  EXPECT_EQ(backend_->stat("")->type, FileType::kDir);
  expectError(backend_->stat("d/nope"), Code::kNotFound, "'d/nope' does not exist");
}

TEST_P(LocalBackendTest, StatFollowsInsideSymlinks) {
  fs::create_directory(ws_ / "d");
  link("hello.txt", ws_ / "ln");
  link("d", ws_ / "dln");
  auto f = backend_->stat("ln");
  ASSERT_TRUE(f.ok()) << f.status().toString();
  EXPECT_EQ(f->name, "ln");
  EXPECT_EQ(f->type, FileType::kFile);
  EXPECT_EQ(f->size, 11u);
  EXPECT_EQ(backend_->stat("dln")->type, FileType::kDir);
}

TEST_P(LocalBackendTest, ListReportsEntriesWithoutFollowing) {
  fs::create_directory(ws_ / "d");
  tmp_.write("ws/d/inner.txt", "12345");
  link("hello.txt", ws_ / "ln");
  link("../outside/secret.txt", ws_ / "out");  // listed, never followed
  ASSERT_EQ(::mkfifo((ws_ / "pipe").c_str(), 0600), 0);
  auto r = backend_->list("");
  ASSERT_TRUE(r.ok()) << r.status().toString();
  std::map<std::string, FileInfo> byName;
  for (const auto& e : *r) byName[e.name] = e;
  ASSERT_EQ(byName.size(), 5u);
  EXPECT_EQ(byName["hello.txt"].type, FileType::kFile);
  EXPECT_EQ(byName["hello.txt"].size, 11u);
  EXPECT_EQ(byName["d"].type, FileType::kDir);
  EXPECT_EQ(byName["ln"].type, FileType::kSymlink);
  EXPECT_EQ(byName["ln"].size, 9u);  // the link itself: strlen("hello.txt")
  EXPECT_EQ(byName["out"].type, FileType::kSymlink);
  EXPECT_EQ(byName["pipe"].type, FileType::kOther);
  auto d = backend_->list("d");
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->size(), 1u);
  EXPECT_EQ((*d)[0].name, "inner.txt");
  EXPECT_EQ((*d)[0].size, 5u);
}

TEST_P(LocalBackendTest, ListTypedReadsOnlyTheEntriesAskedFor) {
  fs::create_directory(ws_ / "d");
  link("hello.txt", ws_ / "ln");
  ASSERT_EQ(::mkfifo((ws_ / "pipe").c_str(), 0600), 0);
  std::map<std::string, FileType> asked;
  std::map<std::string, FileInfo> byName;
  ASSERT_TRUE(backend_
                  ->listTyped(
                      "",
                      [&](std::string_view name, FileType type) {
                        asked[std::string(name)] = type;
                        return name == "hello.txt";
                      },
                      [&](const FileInfo& e) {
                        byName[e.name] = e;
                        return true;
                      })
                  .ok());
  // Each entry's type is told before anything else of it is read, as list() reports it.
  EXPECT_EQ(asked, (std::map<std::string, FileType>{{"d", FileType::kDir},
                                                    {"hello.txt", FileType::kFile},
                                                    {"ln", FileType::kSymlink},
                                                    {"pipe", FileType::kOther}}));
  ASSERT_EQ(byName.size(), 4u);
  EXPECT_EQ(byName["hello.txt"].size, 11u);  // asked for: read in full
  EXPECT_GT(byName["hello.txt"].mtime_ns, 0);
  EXPECT_EQ(byName["ln"].type, FileType::kSymlink);
  EXPECT_EQ(byName["ln"].size, 0u);  // not asked for: no stat (list() says 9)
  EXPECT_EQ(byName["ln"].mtime_ns, 0);
  EXPECT_EQ(byName["d"].type, FileType::kDir);
  EXPECT_EQ(byName["pipe"].type, FileType::kOther);
}

// A directory listed directly (no symlink on the way, checked by the kernel) gives what
// listTyped() gives, whatever its size; through a link, or where only the walk resolves, it
// lists nothing and says so.
TEST_P(LocalBackendTest, ListsDirectlyOnlyWhereNoLinkLiesOnTheWay) {
  fs::create_directories(ws_ / "d/many");
  link("d", ws_ / "ld");
  // Names long enough that one read of the directory cannot hold them all.
  std::set<std::string> made;
  for (int i = 0; i < 2000; ++i) {
    const std::string name = "an-entry-with-a-rather-long-name-" + std::to_string(i);
    tmp_.write("ws/d/many/" + name, "x");
    made.insert(name);
  }
  auto names = [](auto&& list) {
    std::set<std::string> seen;
    size_t visits = 0;
    auto status = list([&](const FileInfo& e) {
      seen.insert(e.name);
      ++visits;
      EXPECT_EQ(e.size, 1u) << e.name;
      return true;
    });
    return std::make_tuple(std::move(seen), visits, std::move(status));
  };
  auto [typed, typed_visits, typed_status] =
      names([&](const auto& v) { return backend_->listTyped("d/many", nullptr, v); });
  ASSERT_TRUE(typed_status.ok()) << typed_status.toString();
  EXPECT_EQ(typed, made);
  EXPECT_EQ(typed_visits, made.size());

  auto noop = [](const FileInfo&) { return true; };
  if (GetParam() == ResolveStrategy::kWalk) {
    EXPECT_FALSE(backend_->listTypedDirect("d/many", nullptr, noop).has_value());
    return;
  }
  auto [direct, direct_visits, direct_status] = names([&](const auto& v) {
    std::optional<Status> s = backend_->listTypedDirect("d/many", nullptr, v);
    return s.value_or(internalError("not listed directly"));
  });
  ASSERT_TRUE(direct_status.ok()) << direct_status.toString();
  EXPECT_EQ(direct, made);
  EXPECT_EQ(direct_visits, made.size());
  int visited = 0;
  auto count = [&](const FileInfo&) { return ++visited, true; };
  EXPECT_FALSE(backend_->listTypedDirect("ld", nullptr, count).has_value());
  EXPECT_FALSE(backend_->listTypedDirect("ld/many", nullptr, count).has_value());
  EXPECT_FALSE(backend_->listTypedDirect("missing", nullptr, count).has_value());
  EXPECT_FALSE(backend_->listTypedDirect("hello.txt", nullptr, count).has_value());
  EXPECT_EQ(visited, 0);
  // Through the link, listTyped() still lists it.
  EXPECT_TRUE(backend_->listTyped("ld", nullptr, count).ok());
  EXPECT_EQ(visited, 1);  // "many"
}

// What a write syncs, seen by a child whose fsync fails: with --write-sync the write fails
// (and leaves the old file), without it nothing was synced and it succeeds.
TEST_P(LocalBackendTest, WritesSyncOnlyWhenAsked) {
  for (bool sync : {false, true}) {
    backend_->setWriteSync(sync);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
      if (ctx == nullptr || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EIO), SCMP_SYS(fsync), 0) != 0 ||
          seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EIO), SCMP_SYS(fdatasync), 0) != 0 ||
          seccomp_load(ctx) != 0) {
        _exit(3);
      }
      auto w = backend_->write("hello.txt", "new contents", WriteMode::kOverwrite);
      _exit(w.ok() ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), sync ? 1 : 0) << "write_sync " << sync;
    EXPECT_EQ(tmp_.read("ws/hello.txt"), sync ? "hello world" : "new contents");
    tmp_.write("ws/hello.txt", "hello world");
  }
}

TEST_P(LocalBackendTest, ListErrors) {
  expectError(backend_->list("hello.txt"), Code::kInvalidArgument,
              "'hello.txt' is not a directory");
  expectError(backend_->list("nope"), Code::kNotFound, "'nope' does not exist");
}

TEST_P(LocalBackendTest, NonUtf8NamesAreListedAsBytes) {
  const std::string name = "bad\xff\xfe-\xc3(.txt";
  tmp_.write("ws/" + name, "bytes");
  auto r = backend_->list("");
  ASSERT_TRUE(r.ok());
  bool found = false;
  for (const auto& e : *r) found |= e.name == name;
  EXPECT_TRUE(found);
  EXPECT_EQ(*backend_->read(name, 0, 100), "bytes");
  ASSERT_TRUE(backend_->write("dir\xff/" + name, "w", WriteMode::kCreate).ok());
  EXPECT_EQ(tmp_.read("ws/dir\xff/" + name), "w");
}

TEST_P(LocalBackendTest, FifoReadDoesNotBlock) {
  const fs::path fifo = ws_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto pending = std::async(std::launch::async, [&] { return backend_->read("fifo", 0, 10); });
  if (pending.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    // Unblock the reader so the test can end, then fail.
    int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
    FAIL() << "read of a FIFO blocked";
  }
  expectError(pending.get(), Code::kInvalidArgument, "'fifo' is not a regular file");
  expectError(backend_->write("fifo", "x", WriteMode::kOverwrite), Code::kInvalidArgument,
              "'fifo' is not a regular file");
  EXPECT_EQ(backend_->stat("fifo")->type, FileType::kOther);
}

TEST_P(LocalBackendTest, DeviceIsNotRead) {
  auto r = LocalBackend::open("/dev", {}, GetParam());
  ASSERT_TRUE(r.ok());
  expectError((*r)->read("null", 0, 10), Code::kInvalidArgument, "'null' is not a regular file");
}

// --- write --------------------------------------------------------------------------------

TEST_P(LocalBackendTest, WriteModes) {
  auto created = backend_->write("new.txt", "one", WriteMode::kCreate);
  ASSERT_TRUE(created.ok()) << created.status().toString();
  EXPECT_TRUE(created->created);
  EXPECT_EQ(created->size, 3u);
  expectError(backend_->write("new.txt", "two", WriteMode::kCreate), Code::kAlreadyExists,
              "'new.txt' already exists");
  EXPECT_EQ(tmp_.read("ws/new.txt"), "one");

  auto appended = backend_->write("new.txt", "+two", WriteMode::kAppend);
  ASSERT_TRUE(appended.ok()) << appended.status().toString();
  EXPECT_FALSE(appended->created);
  EXPECT_EQ(appended->size, 7u);
  EXPECT_EQ(tmp_.read("ws/new.txt"), "one+two");

  auto replaced = backend_->write("new.txt", "3", WriteMode::kOverwrite);
  ASSERT_TRUE(replaced.ok());
  EXPECT_FALSE(replaced->created);
  EXPECT_EQ(replaced->size, 1u);
  EXPECT_EQ(tmp_.read("ws/new.txt"), "3");

  auto fresh = backend_->write("fresh.txt", "abc", WriteMode::kAppend);
  ASSERT_TRUE(fresh.ok());
  EXPECT_TRUE(fresh->created);
  EXPECT_EQ(tmp_.read("ws/fresh.txt"), "abc");

  auto empty = backend_->write("empty.txt", "", WriteMode::kOverwrite);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->size, 0u);
  EXPECT_TRUE(fs::is_regular_file(ws_ / "empty.txt"));
}

TEST_P(LocalBackendTest, WriteCreatesNestedParents) {
  auto r = backend_->write("a/b/c/d.txt", "deep", WriteMode::kOverwrite);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(tmp_.read("ws/a/b/c/d.txt"), "deep");
  EXPECT_EQ(*backend_->read("a/b/c/d.txt", 0, 100), "deep");
  EXPECT_EQ(backend_->stat("a/b")->type, FileType::kDir);
}

TEST_P(LocalBackendTest, WriteErrors) {
  fs::create_directory(ws_ / "d");
  expectError(backend_->write("d", "x", WriteMode::kOverwrite), Code::kInvalidArgument,
              "'d' is a directory");
  expectError(backend_->write("", "x", WriteMode::kOverwrite), Code::kInvalidArgument,
              "'" + ws_.string() + "' is a directory");
  expectError(backend_->write("hello.txt/x", "x", WriteMode::kOverwrite), Code::kInvalidArgument,
              "'hello.txt/x': 'hello.txt' is not a directory");
  expectError(backend_->write("hello.txt/x/y", "x", WriteMode::kOverwrite), Code::kInvalidArgument,
              "'hello.txt/x/y': 'hello.txt' is not a directory");
  EXPECT_EQ(tmp_.read("ws/hello.txt"), "hello world");
}

TEST_P(LocalBackendTest, OverwriteKeepsPermissionBits) {
  ASSERT_EQ(::chmod((ws_ / "hello.txt").c_str(), 0600), 0);
  ASSERT_TRUE(backend_->write("hello.txt", "new", WriteMode::kOverwrite).ok());
  EXPECT_EQ(permissionsOf(ws_ / "hello.txt"), 0600u);
  ASSERT_EQ(::chmod((ws_ / "hello.txt").c_str(), 0751), 0);
  ASSERT_TRUE(backend_->write("hello.txt", "more", WriteMode::kAppend).ok());
  EXPECT_EQ(permissionsOf(ws_ / "hello.txt"), 0751u);
  EXPECT_EQ(backend_->stat("hello.txt")->mode, 0751u);
}

TEST_P(LocalBackendTest, NewFilesGetDefaultPermissionsMinusUmask) {
  const mode_t old = ::umask(027);
  auto r = backend_->write("u/new.txt", "x", WriteMode::kCreate);
  ::umask(old);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(permissionsOf(ws_ / "u/new.txt"), 0640u);
  EXPECT_EQ(permissionsOf(ws_ / "u"), 0750u);
}

TEST_P(LocalBackendTest, SuccessfulWritesLeaveNoTempFiles) {
  ASSERT_TRUE(backend_->write("hello.txt", "1", WriteMode::kOverwrite).ok());
  ASSERT_TRUE(backend_->write("hello.txt", "2", WriteMode::kAppend).ok());
  ASSERT_TRUE(backend_->write("n.txt", "3", WriteMode::kCreate).ok());
  EXPECT_FALSE(backend_->write("n.txt", "4", WriteMode::kCreate).ok());
  EXPECT_EQ(namesIn(ws_), (std::vector<std::string>{"hello.txt", "n.txt"}));
}

TEST_P(LocalBackendTest, FailedWriteLeavesTargetAndNoTempFile) {
  // RLIMIT_FSIZE makes write() fail with EFBIG after the temp file exists.
  struct sigaction ignore = {}, old_action = {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGXFSZ, &ignore, &old_action), 0);
  struct rlimit old_limit;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  struct rlimit small = old_limit;
  small.rlim_cur = 1024;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  auto r = backend_->write("hello.txt", std::string(4096, 'x'), WriteMode::kOverwrite);
  auto fresh = backend_->write("sub/fresh.txt", std::string(4096, 'x'), WriteMode::kCreate);
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  ::sigaction(SIGXFSZ, &old_action, nullptr);
  expectError(r, Code::kResourceExhausted, "'hello.txt': file too large");
  expectError(fresh, Code::kResourceExhausted, "'sub/fresh.txt': file too large");
  EXPECT_EQ(tmp_.read("ws/hello.txt"), "hello world");
  EXPECT_EQ(namesIn(ws_), (std::vector<std::string>{"hello.txt", "sub"}));
  EXPECT_TRUE(namesIn(ws_ / "sub").empty());
}

TEST_P(LocalBackendTest, ConcurrentWritersAndReaders) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([this, t] {
      for (int i = 0; i < 25; ++i) {
        const std::string key = "t" + std::to_string(t) + "/f" + std::to_string(i % 5);
        const std::string body(100 + i, static_cast<char>('a' + t));
        EXPECT_TRUE(backend_->write(key, body, WriteMode::kOverwrite).ok());
        auto r = backend_->read(key, 0, 1000);
        EXPECT_TRUE(r.ok());
        EXPECT_EQ(r.ok() ? *r : "", body);
        EXPECT_TRUE(backend_->write("shared.txt", body, WriteMode::kOverwrite).ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  const std::string shared = tmp_.read("ws/shared.txt");
  EXPECT_EQ(shared.size(), 124u);  // one writer's whole content, never a mix
  EXPECT_EQ(std::count(shared.begin(), shared.end(), shared[0]), 124);
  EXPECT_EQ(namesIn(ws_).size(), 6u);  // hello, shared, t0..t3: no temp files
}

// --- symlinks inside the workspace --------------------------------------------------------

TEST_P(LocalBackendTest, InsideSymlinkIsFollowedForReadAndWrite) {
  fs::create_directory(ws_ / "d");
  link("hello.txt", ws_ / "ln");
  link("../hello.txt", ws_ / "d" / "up");
  EXPECT_EQ(*backend_->read("ln", 0, 100), "hello world");
  EXPECT_EQ(*backend_->read("d/up", 0, 5), "hello");
  auto w = backend_->write("ln", "via link", WriteMode::kOverwrite);
  ASSERT_TRUE(w.ok()) << w.status().toString();
  EXPECT_FALSE(w->created);
  EXPECT_TRUE(fs::is_symlink(ws_ / "ln"));  // the link is kept, its target replaced
  EXPECT_EQ(tmp_.read("ws/hello.txt"), "via link");
  ASSERT_TRUE(backend_->write("d/up", "!", WriteMode::kAppend).ok());
  EXPECT_EQ(tmp_.read("ws/hello.txt"), "via link!");
  expectError(backend_->write("ln", "x", WriteMode::kCreate), Code::kAlreadyExists,
              "'ln' already exists");
}

TEST_P(LocalBackendTest, InsideSymlinkedDirectoryIsFollowed) {
  fs::create_directories(ws_ / "real");
  link("real", ws_ / "dl");
  ASSERT_TRUE(backend_->write("dl/x.txt", "x", WriteMode::kCreate).ok());
  ASSERT_TRUE(backend_->write("dl/sub/y.txt", "y", WriteMode::kCreate).ok());
  EXPECT_EQ(tmp_.read("ws/real/x.txt"), "x");
  EXPECT_EQ(tmp_.read("ws/real/sub/y.txt"), "y");
  auto l = backend_->list("dl");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->size(), 2u);
}

TEST_P(LocalBackendTest, DanglingInsideSymlinkCreatesItsTarget) {
  link("later/made.txt", ws_ / "ln");
  auto w = backend_->write("ln", "made", WriteMode::kCreate);
  ASSERT_TRUE(w.ok()) << w.status().toString();
  EXPECT_TRUE(w->created);
  EXPECT_TRUE(fs::is_symlink(ws_ / "ln"));
  EXPECT_EQ(tmp_.read("ws/later/made.txt"), "made");
}

TEST_P(LocalBackendTest, AbsoluteSymlinkIntoTheWorkspaceIsRefused) {
  // Documented limit: absolute link targets are refused even when they point inside (the
  // RESOLVE_BENEATH rule), so both resolution strategies behave the same.
  link((ws_ / "hello.txt").string(), ws_ / "abs");
  expectError(backend_->read("abs", 0, 10), Code::kPermissionDenied,
              "'abs' is outside the workspace");
  expectError(backend_->write("abs", "x", WriteMode::kOverwrite), Code::kPermissionDenied,
              "'abs' is outside the workspace");
  EXPECT_EQ(tmp_.read("ws/hello.txt"), "hello world");
}

TEST_P(LocalBackendTest, SymlinkLoopIsReported) {
  link("b", ws_ / "a");
  link("a", ws_ / "b");
  expectError(backend_->read("a", 0, 1), Code::kInvalidArgument,
              "'a': too many levels of symbolic links");
  expectError(backend_->write("a", "x", WriteMode::kOverwrite), Code::kInvalidArgument,
              "'a': too many levels of symbolic links");
}

// --- escapes ------------------------------------------------------------------------------

TEST_P(LocalBackendTest, DotDotEscapesAreRefused) {
  for (const char* key : {"../outside/secret.txt", "a/../../outside/secret.txt", ".."}) {
    expectError(backend_->read(key, 0, 100), Code::kPermissionDenied,
                std::string("'") + key + "' is outside the workspace");
    expectError(backend_->write(key, "x", WriteMode::kOverwrite), Code::kPermissionDenied,
                std::string("'") + key + "' is outside the workspace");
  }
  EXPECT_EQ(tmp_.read("outside/secret.txt"), "secret");
}

TEST_P(LocalBackendTest, SiblingPrefixDirectoryIsOutside) {
  const std::string evil = (tmp_.path() / "ws_evil" / "secret.txt").string();
  expectError(backend_->read(evil, 0, 100), Code::kPermissionDenied,
              "'" + evil + "' is outside the workspace");
  expectError(backend_->write(evil, "x", WriteMode::kOverwrite), Code::kPermissionDenied,
              "'" + evil + "' is outside the workspace");
  link("../ws_evil/secret.txt", ws_ / "evil");
  expectError(backend_->read("evil", 0, 100), Code::kPermissionDenied,
              "'evil' is outside the workspace");
  EXPECT_EQ(tmp_.read("ws_evil/secret.txt"), "evil");
}

TEST_P(LocalBackendTest, SymlinkToEtcPasswdIsRefused) {
  link("/etc/passwd", ws_ / "passwd");
  expectError(backend_->read("passwd", 0, 100), Code::kPermissionDenied,
              "'passwd' is outside the workspace");
  expectError(backend_->stat("passwd"), Code::kPermissionDenied,
              "'passwd' is outside the workspace");
  // Listing shows the link itself without following it.
  auto l = backend_->list("");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->size(), 2u);
}

TEST_P(LocalBackendTest, SymlinkToOutsideFileIsRefused) {
  link("../outside/secret.txt", ws_ / "rel");
  link((outside_ / "secret.txt").string(), ws_ / "abs");
  for (const char* key : {"rel", "abs"}) {
    const std::string msg = std::string("'") + key + "' is outside the workspace";
    expectError(backend_->read(key, 0, 100), Code::kPermissionDenied, msg);
    expectError(backend_->stat(key), Code::kPermissionDenied, msg);
    for (WriteMode mode : {WriteMode::kOverwrite, WriteMode::kAppend, WriteMode::kCreate}) {
      expectError(backend_->write(key, "pwned", mode), Code::kPermissionDenied, msg);
    }
  }
  EXPECT_EQ(tmp_.read("outside/secret.txt"), "secret");
  EXPECT_EQ(namesIn(outside_), std::vector<std::string>{"secret.txt"});
  EXPECT_TRUE(fs::is_symlink(ws_ / "rel"));
}

TEST_P(LocalBackendTest, DanglingSymlinkOutIsRefusedAndCreatesNothing) {
  link("../outside/created.txt", ws_ / "rel");
  link((outside_ / "created_abs.txt").string(), ws_ / "abs");
  link("../outside/newdir/created.txt", ws_ / "deep");
  // One absolute component: must not be taken as relative to the directory holding the link.
  const std::string top = "/" + tmp_.path().filename().string() + "-dangling";
  link(top, ws_ / "top");
  for (const char* key : {"rel", "abs", "deep", "top"}) {
    for (WriteMode mode : {WriteMode::kOverwrite, WriteMode::kAppend, WriteMode::kCreate}) {
      expectError(backend_->write(key, "pwned", mode), Code::kPermissionDenied,
                  std::string("'") + key + "' is outside the workspace");
    }
  }
  EXPECT_EQ(namesIn(outside_), std::vector<std::string>{"secret.txt"});
  EXPECT_EQ(namesIn(ws_), (std::vector<std::string>{"abs", "deep", "hello.txt", "rel", "top"}));
  EXPECT_FALSE(fs::exists(top));
}

TEST_P(LocalBackendTest, SymlinkedParentPointingOutIsRefused) {
  link("../outside", ws_ / "out");
  link(outside_.string(), ws_ / "outabs");
  for (const std::string dir : {"out", "outabs"}) {
    for (const std::string rest : {"/secret.txt", "/new.txt", "/sub/new.txt"}) {
      const std::string key = dir + rest;
      const std::string msg = "'" + key + "' is outside the workspace";
      expectError(backend_->write(key, "pwned", WriteMode::kOverwrite), Code::kPermissionDenied,
                  msg);
      expectError(backend_->read(key, 0, 10), Code::kPermissionDenied, msg);
    }
    expectError(backend_->list(dir), Code::kPermissionDenied,
                "'" + dir + "' is outside the workspace");
  }
  EXPECT_EQ(tmp_.read("outside/secret.txt"), "secret");
  EXPECT_EQ(namesIn(outside_), std::vector<std::string>{"secret.txt"});
}

TEST_P(LocalBackendTest, ProcSelfRootIsRefused) {
  link("/proc/self/root/etc/passwd", ws_ / "proc");
  expectError(backend_->read("proc", 0, 10), Code::kPermissionDenied,
              "'proc' is outside the workspace");
  // Even with /proc itself allowed, its magic links cannot jump out of it.
  auto r = LocalBackend::open(ws_.string(), {"/proc"}, GetParam());
  ASSERT_TRUE(r.ok()) << r.status().toString();
  auto& withProc = **r;
  EXPECT_TRUE(withProc.read("/proc/self/status", 0, 10).ok());
  expectError(withProc.read("/proc/self/root/etc/passwd", 0, 10), Code::kPermissionDenied,
              "'/proc/self/root/etc/passwd' is outside the workspace");
  expectError(withProc.stat("/proc/self/cwd"), Code::kPermissionDenied,
              "'/proc/self/cwd' is outside the workspace");
  expectError(withProc.write("/proc/self/root" + ws_.string() + "/x", "x", WriteMode::kCreate),
              Code::kPermissionDenied,
              "'/proc/self/root" + ws_.string() + "/x' is outside the workspace");
  EXPECT_FALSE(fs::exists(ws_ / "x"));
}

// --- extra allowed directories -------------------------------------------------------------

TEST_P(LocalBackendTest, AllowedDirectoryUsesAbsoluteKeys) {
  const std::string key = (extra_ / "sub/data.txt").string();
  EXPECT_EQ(*backend_->normalize(key), key);
  auto w = backend_->write(key, "extra", WriteMode::kCreate);
  ASSERT_TRUE(w.ok()) << w.status().toString();
  EXPECT_TRUE(w->created);
  EXPECT_EQ(tmp_.read("extra/sub/data.txt"), "extra");
  EXPECT_EQ(*backend_->read(key, 0, 100), "extra");
  auto s = backend_->stat(key);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->name, key);
  auto l = backend_->list(extra_.string());
  ASSERT_TRUE(l.ok());
  ASSERT_EQ(l->size(), 1u);
  EXPECT_EQ((*l)[0].name, "sub");
  expectError(backend_->read(extra_.string() + "/nope", 0, 1), Code::kNotFound,
              "'" + extra_.string() + "/nope' does not exist");
}

TEST_P(LocalBackendTest, AllowedDirectoryEscapesAreRefused) {
  link("../outside/secret.txt", extra_ / "rel");
  link("../ws/hello.txt", extra_ / "to_ws");  // leaves extra, even though it lands in the root
  link("..", extra_ / "up");
  for (const char* name : {"rel", "to_ws", "up/outside/secret.txt"}) {
    const std::string key = extra_.string() + "/" + name;
    const std::string msg = "'" + key + "' is outside the workspace";
    expectError(backend_->read(key, 0, 10), Code::kPermissionDenied, msg);
    expectError(backend_->write(key, "x", WriteMode::kOverwrite), Code::kPermissionDenied, msg);
  }
  const std::string sibling = extra_.string() + "_evil/x";
  expectError(backend_->normalize(sibling), Code::kPermissionDenied,
              "'" + sibling + "' is outside the workspace");
  EXPECT_EQ(tmp_.read("outside/secret.txt"), "secret");
  EXPECT_EQ(tmp_.read("ws/hello.txt"), "hello world");
}

TEST_P(LocalBackendTest, RealKeyFollowsLinksInside) {
  std::ofstream(ws_ / ".env") << "KEY=1";
  fs::create_directories(ws_ / "sub");
  fs::create_symlink(".env", ws_ / "notes.txt");
  fs::create_symlink("../.env", ws_ / "sub" / "deep");
  fs::create_symlink("sub", ws_ / "dirlink");
  EXPECT_EQ(backend_->realKey("notes.txt").value(), ".env");
  EXPECT_EQ(backend_->realKey("sub/deep").value(), ".env");
  EXPECT_EQ(backend_->realKey("dirlink/deep").value(), ".env");
  EXPECT_EQ(backend_->realKey(".env").value(), ".env");
  EXPECT_EQ(backend_->realKey("missing.txt").value(), "missing.txt");
  EXPECT_EQ(backend_->realKey("").value(), "");
}

// What does not exist yet is judged where a write would create it.
TEST_P(LocalBackendTest, RealKeyOfAMissingFileIsWhereAWriteWouldPutIt) {
  fs::create_directories(ws_ / ".ssh");
  fs::create_symlink(".ssh", ws_ / "keys");
  fs::create_symlink(".ssh/authorized_keys", ws_ / "dangling");
  fs::create_symlink("../.ssh/config", ws_ / "keys" / "up");
  fs::create_symlink("loop2", ws_ / "loop1");
  fs::create_symlink("loop1", ws_ / "loop2");
  EXPECT_EQ(backend_->realKey("keys/authorized_keys").value(), ".ssh/authorized_keys");
  EXPECT_EQ(backend_->realKey("keys/new/deeper.txt").value(), ".ssh/new/deeper.txt");
  EXPECT_EQ(backend_->realKey("dangling").value(), ".ssh/authorized_keys");
  EXPECT_EQ(backend_->realKey("keys/up").value(), ".ssh/config");
  EXPECT_EQ(backend_->realKey("plain/missing.txt").value(), "plain/missing.txt");
  EXPECT_FALSE(backend_->realKey("loop1").ok());
  // And the write lands there indeed.
  ASSERT_TRUE(backend_->write("dangling", "k", WriteMode::kOverwrite).ok());
  EXPECT_TRUE(fs::exists(ws_ / ".ssh" / "authorized_keys"));
}

INSTANTIATE_TEST_SUITE_P(Strategies, LocalBackendTest,
                         ::testing::Values(ResolveStrategy::kAuto, ResolveStrategy::kWalk),
                         [](const auto& info) {
                           return info.param == ResolveStrategy::kAuto ? "Openat2" : "Walk";
                         });

}  // namespace
}  // namespace byd
