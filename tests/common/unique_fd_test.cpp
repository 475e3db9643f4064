#include "common/unique_fd.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <utility>

namespace byd {
namespace {

bool isOpen(int fd) { return fcntl(fd, F_GETFD) != -1 || errno != EBADF; }

TEST(UniqueFd, ClosesWhenItGoesAndMovesOwnership) {
  int raw = -1;
  {
    UniqueFd fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
    raw = fd.get();
    ASSERT_TRUE(fd.valid());
    UniqueFd moved = std::move(fd);
    EXPECT_FALSE(fd.valid());  // NOLINT: moved-from is empty by contract
    EXPECT_EQ(moved.get(), raw);
    EXPECT_TRUE(isOpen(raw));
  }
  EXPECT_FALSE(isOpen(raw));
}

TEST(UniqueFd, ReleaseGivesUpAndResetCloses) {
  UniqueFd fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int raw = fd.release();
  EXPECT_FALSE(fd.valid());
  EXPECT_TRUE(isOpen(raw));
  fd.reset(raw);
  EXPECT_EQ(fd.get(), raw);
  fd.reset();
  EXPECT_FALSE(isOpen(raw));
}

TEST(UniqueFd, MakePipeOwnsBothEnds) {
  int r = -1, w = -1;
  {
    PipeFds p;
    ASSERT_TRUE(makePipe(p));
    r = p.read.get();
    w = p.write.get();
    ASSERT_EQ(write(w, "x", 1), 1);
    char c = 0;
    ASSERT_EQ(read(r, &c, 1), 1);
    EXPECT_EQ(c, 'x');
    EXPECT_EQ(fcntl(r, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  }
  EXPECT_FALSE(isOpen(r));
  EXPECT_FALSE(isOpen(w));
}

}  // namespace
}  // namespace byd
