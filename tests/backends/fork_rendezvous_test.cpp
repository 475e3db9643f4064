#include "backends/local/fork_rendezvous.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace byd::testing {
namespace {

// The directory is this user's, the same for every server (a kept container binds it for
// good), and cannot be listed by others; a socket goes once its fork has connected.
TEST(ForkRendezvous, TheDirectoryIsTheUsersAndEachSocketIsSpentOnce) {
  auto dir = ForkRendezvous::dir();
  ASSERT_TRUE(dir.ok()) << dir.status().toString();
  const char* env = getenv("XDG_RUNTIME_DIR");
  const std::string base = env && *env ? env : "/tmp";
  EXPECT_EQ(*dir, base + "/backyard-mcp-forks-" + std::to_string(geteuid()));
  struct stat st;
  ASSERT_EQ(lstat(dir->c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_uid, geteuid());
  EXPECT_EQ(st.st_mode & 07777, 0711u);

  auto waiting = ForkRendezvous::open();
  ASSERT_TRUE(waiting.ok()) << waiting.status().toString();
  const std::string path = *dir + "/" + waiting->name();
  EXPECT_EQ(waiting->name().size(), 32u + 5);  // 128 random bits in hex, ".sock"
  ASSERT_TRUE(std::filesystem::exists(path));
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << strerror(errno);
  auto peer = waiting->accept(std::chrono::seconds(5));
  ASSERT_TRUE(peer.ok()) << peer.status().toString();
  EXPECT_EQ(peer->pid, getpid());
  EXPECT_FALSE(std::filesystem::exists(path));  // spent
  close(fd);

  // One that no fork reached is removed with its waiter; the directory stays.
  std::string unused;
  {
    auto other = ForkRendezvous::open();
    ASSERT_TRUE(other.ok());
    unused = *dir + "/" + other->name();
    EXPECT_TRUE(std::filesystem::exists(unused));
  }
  EXPECT_FALSE(std::filesystem::exists(unused));
  EXPECT_TRUE(std::filesystem::is_directory(*dir));
}

}  // namespace
}  // namespace byd::testing
