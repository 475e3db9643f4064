#include "backends/local/path_resolver.h"

#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "tests/test_util.h"

namespace byd {
namespace {

namespace fs = std::filesystem;

std::string readFd(int fd) {
  std::string out;
  char buf[256];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

// Every test runs twice: through openat2 (kAuto on this kernel) and through the walk.
class PathResolverTest : public ::testing::TestWithParam<ResolveStrategy> {
 protected:
  void SetUp() override {
    fs::create_directories(ws_ / "a" / "b");
    tmp_.write("ws/a/c.txt", "c");
    tmp_.write("ws/f.txt", "file");
    tmp_.write("outside.txt", "secret");
    auto r = PathResolver::open(ws_.string(), "", GetParam());
    ASSERT_TRUE(r.ok()) << r.status().toString();
    resolver_ = std::make_unique<PathResolver>(std::move(r).value());
  }

  void link(const std::string& target, const std::string& rel) {
    ASSERT_EQ(::symlink(target.c_str(), (ws_ / rel).c_str()), 0) << rel;
  }

  testing::TempDir tmp_;
  fs::path ws_ = tmp_.path() / "ws";
  std::unique_ptr<PathResolver> resolver_;
};

TEST_P(PathResolverTest, ReportsStrategy) {
  if (GetParam() == ResolveStrategy::kWalk) {
    EXPECT_FALSE(resolver_->usesOpenat2());
  }
}

TEST_P(PathResolverTest, OpensBaseAndNestedFiles) {
  auto base = resolver_->open("", O_PATH | O_DIRECTORY);
  ASSERT_TRUE(base.ok()) << base.status().toString();
  auto f = resolver_->open("a/c.txt", O_RDONLY);
  ASSERT_TRUE(f.ok()) << f.status().toString();
  EXPECT_EQ(readFd(f->get()), "c");
}

TEST_P(PathResolverTest, DotDotAboveBaseIsRefused) {
  EXPECT_EQ(resolver_->openRaw("..", O_PATH), -EXDEV);
  EXPECT_EQ(resolver_->openRaw("a/../../outside.txt", O_RDONLY), -EXDEV);
  auto r = resolver_->open("a/b/../../..", O_PATH);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kPermissionDenied);
  EXPECT_EQ(r.status().message(), "'a/b/../../..' is outside the workspace");
}

TEST_P(PathResolverTest, AbsolutePathIsRefused) {
  EXPECT_EQ(resolver_->openRaw("/etc/passwd", O_RDONLY), -EXDEV);
  EXPECT_EQ(resolver_->openRaw((ws_ / "f.txt").string(), O_RDONLY), -EXDEV);
}

TEST_P(PathResolverTest, NulByteIsRejected) {
  EXPECT_EQ(resolver_->openRaw(std::string("f.txt\0x", 7), O_RDONLY), -EINVAL);
}

TEST_P(PathResolverTest, DotDotAfterSymlinkIsPhysical) {
  // l -> a/b, so l/.. is a (the kernel's rule), not the base.
  link("a/b", "l");
  auto f = resolver_->open("l/../c.txt", O_RDONLY);
  ASSERT_TRUE(f.ok()) << f.status().toString();
  EXPECT_EQ(readFd(f->get()), "c");
}

TEST_P(PathResolverTest, RelativeSymlinkInsideIsFollowed) {
  link("../f.txt", "a/up");
  auto f = resolver_->open("a/up", O_RDONLY);
  ASSERT_TRUE(f.ok()) << f.status().toString();
  EXPECT_EQ(readFd(f->get()), "file");
}

TEST_P(PathResolverTest, SymlinkLeavingBaseIsRefused) {
  link("../outside.txt", "out");
  link("../../outside.txt", "a/out2");
  link("../ws/f.txt", "roundtrip");  // leaves and comes back: still refused, as by the kernel
  for (const char* rel : {"out", "a/out2", "roundtrip"}) {
    EXPECT_EQ(resolver_->openRaw(rel, O_RDONLY), -EXDEV) << rel;
  }
}

TEST_P(PathResolverTest, AbsoluteSymlinkIsRefusedEvenWhenItPointsInside) {
  link((ws_ / "f.txt").string(), "abs_in");
  link("/etc/passwd", "passwd");
  EXPECT_EQ(resolver_->openRaw("abs_in", O_RDONLY), -EXDEV);
  EXPECT_EQ(resolver_->openRaw("passwd", O_PATH), -EXDEV);
}

TEST_P(PathResolverTest, SymlinkedDirectoryLeavingBaseIsRefused) {
  link("..", "up");
  EXPECT_EQ(resolver_->openRaw("up/outside.txt", O_RDONLY), -EXDEV);
  EXPECT_EQ(resolver_->openRaw("up", O_PATH | O_DIRECTORY), -EXDEV);
}

TEST_P(PathResolverTest, CreateThroughDanglingLinks) {
  link("made.txt", "dangling_in");
  link("../made_outside.txt", "dangling_out");
  int fd = resolver_->openRaw("dangling_in", O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0) << -fd;
  ::close(fd);
  EXPECT_TRUE(fs::exists(ws_ / "made.txt"));
  EXPECT_EQ(resolver_->openRaw("dangling_out", O_WRONLY | O_CREAT, 0644), -EXDEV);
  EXPECT_FALSE(fs::exists(tmp_.path() / "made_outside.txt"));
}

TEST_P(PathResolverTest, ExclusiveCreateDoesNotFollowSymlink) {
  link("new.txt", "dangling");
  EXPECT_EQ(resolver_->openRaw("dangling", O_WRONLY | O_CREAT | O_EXCL, 0644), -EEXIST);
  EXPECT_FALSE(fs::exists(ws_ / "new.txt"));
}

TEST_P(PathResolverTest, FortySymlinkHopsAreFollowedFortyOneAreNot) {
  // l0 -> l1 -> ... -> l39 -> f.txt is 40 links; m0 -> ... -> m40 -> f.txt is 41.
  for (int i = 0; i < 40; ++i) {
    link(i == 39 ? "f.txt" : "l" + std::to_string(i + 1), "l" + std::to_string(i));
  }
  for (int i = 0; i < 41; ++i) {
    link(i == 40 ? "f.txt" : "m" + std::to_string(i + 1), "m" + std::to_string(i));
  }
  int fd = resolver_->openRaw("l0", O_RDONLY);
  ASSERT_GE(fd, 0) << -fd;
  ::close(fd);
  EXPECT_EQ(resolver_->openRaw("m0", O_RDONLY), -ELOOP);
}

TEST_P(PathResolverTest, SymlinkLoopIsALoopNotAnEscape) {
  link("y", "x");
  link("x", "y");
  auto r = resolver_->open("x", O_RDONLY);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "'x': too many levels of symbolic links");
}

TEST_P(PathResolverTest, NotADirectoryNamesTheComponent) {
  auto r = resolver_->open("f.txt/x/y", O_RDONLY);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "'f.txt/x/y': 'f.txt' is not a directory");
  auto d = resolver_->open("f.txt", O_RDONLY | O_DIRECTORY);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(), "'f.txt' is not a directory");
}

TEST_P(PathResolverTest, MissingFileIsNotFound) {
  auto r = resolver_->open("a/nope", O_RDONLY);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_EQ(r.status().message(), "'a/nope' does not exist");
}

TEST_P(PathResolverTest, MagicLinksInProcAreRefused) {
  // /proc/self is an ordinary symlink; /proc/self/root and cwd are magic links that would jump
  // to the file system root. Both strategies must refuse them.
  auto proc = PathResolver::open("/proc", "/proc", GetParam());
  ASSERT_TRUE(proc.ok()) << proc.status().toString();
  auto ok = proc->open("self/status", O_RDONLY);
  EXPECT_TRUE(ok.ok()) << ok.status().toString();
  for (const char* rel :
       {"self/root/etc/passwd", "self/root", "self/cwd", "thread-self/root/etc"}) {
    auto r = proc->open(rel, O_RDONLY);
    ASSERT_FALSE(r.ok()) << rel;
    EXPECT_EQ(r.status().code(), Code::kPermissionDenied) << rel;
    EXPECT_EQ(r.status().message(), "'/proc/" + std::string(rel) + "' is outside the workspace");
  }
}

TEST(PathResolverOpenat2Test, MagicLinksFailWithEloop) {
  // Pins RESOLVE_NO_MAGICLINKS: with RESOLVE_BENEATH alone the kernel says EXDEV instead.
  auto proc = PathResolver::open("/proc", "/proc", ResolveStrategy::kAuto);
  ASSERT_TRUE(proc.ok());
  if (!proc->usesOpenat2()) GTEST_SKIP() << "no openat2 on this kernel";
  EXPECT_EQ(proc->openRaw("self/root", O_PATH), -ELOOP);
  EXPECT_EQ(proc->openRaw("self/fd/0", O_PATH), -ELOOP);
}

TEST_P(PathResolverTest, KeysCarryThePrefix) {
  auto r = PathResolver::open(ws_.string(), "/data/x", GetParam());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->keyOf(""), "/data/x");
  EXPECT_EQ(r->keyOf("a/b"), "/data/x/a/b");
  EXPECT_EQ(resolver_->keyOf(""), "");
  EXPECT_EQ(resolver_->keyOf("a"), "a");
  auto e = r->open("f.txt/z", O_RDONLY);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(), "'/data/x/f.txt/z': '/data/x/f.txt' is not a directory");
}

TEST_P(PathResolverTest, OpenFailsForMissingBase) {
  auto r = PathResolver::open((tmp_.path() / "missing").string(), "", GetParam());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound);
}

INSTANTIATE_TEST_SUITE_P(Strategies, PathResolverTest,
                         ::testing::Values(ResolveStrategy::kAuto, ResolveStrategy::kWalk),
                         [](const auto& info) {
                           return info.param == ResolveStrategy::kAuto ? "Openat2" : "Walk";
                         });

TEST(PathResolverProbeTest, AutoUsesOpenat2OnThisKernel) {
  testing::TempDir tmp;
  auto r = PathResolver::open(tmp.str(), "", ResolveStrategy::kAuto);
  ASSERT_TRUE(r.ok());
  // Linux >= 5.6 has openat2; if this fails the Openat2 test instances above ran the walk.
  EXPECT_TRUE(r->usesOpenat2());
}

TEST(UniqueFdTest, MovesAndCloses) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[1]);
  UniqueFd a(fds[0]);
  UniqueFd b(std::move(a));
  EXPECT_FALSE(a.valid());
  EXPECT_EQ(b.get(), fds[0]);
  UniqueFd c;
  c = std::move(b);
  EXPECT_EQ(c.get(), fds[0]);
  c.reset();
  EXPECT_EQ(::fcntl(fds[0], F_GETFD), -1);  // closed exactly once
  EXPECT_EQ(errno, EBADF);
}

}  // namespace
TEST(ErrnoStatus, NamesThePathOrTheWorkspaceRoot) {
  EXPECT_EQ(errnoStatus(EACCES, "src/a.txt").message(), "'src/a.txt': permission denied");
  EXPECT_EQ(errnoStatus(EACCES, "").message(), "the workspace root: permission denied");
  EXPECT_EQ(errnoStatus(ENOENT, ".").message(), "the workspace root does not exist");
}

}  // namespace byd
