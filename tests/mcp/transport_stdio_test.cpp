#include "mcp/transport_stdio.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

namespace byd::mcp {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class Pipe {
 public:
  Pipe() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) ADD_FAILURE() << "pipe2 failed";
    read_ = fds[0];
    write_ = fds[1];
  }
  ~Pipe() {
    closeRead();
    closeWrite();
  }
  int readFd() const { return read_; }
  int writeFd() const { return write_; }
  void closeRead() {
    if (read_ >= 0) close(read_);
    read_ = -1;
  }
  void closeWrite() {
    if (write_ >= 0) close(write_);
    write_ = -1;
  }
  // Everything until the write end is closed.
  std::string drain() const {
    std::string out;
    char buf[1 << 16];
    ssize_t n;
    while ((n = read(read_, buf, sizeof buf)) > 0) out.append(buf, n);
    return out;
  }

 private:
  int read_ = -1, write_ = -1;
};

TEST(StdioTransportSend, ConcurrentSendsArriveWholeOnceAndInOrder) {
  Pipe out;
  constexpr int kThreads = 8, kEach = 1500;
  std::string text;
  {
    StdioTransport transport(-1, out.writeFd(), 1 << 20);
    std::thread reader([&] {
      // Start late, so that the pipe fills and senders queue behind the one writing.
      std::this_thread::sleep_for(50ms);
      text = out.drain();
    });
    std::vector<std::thread> senders;
    for (int t = 0; t < kThreads; ++t) {
      senders.emplace_back([&, t] {
        for (int n = 0; n < kEach; ++n) {
          transport.send({{"t", t}, {"n", n}, {"pad", std::string(300 + n % 7, 'x')}});
        }
      });
    }
    for (auto& s : senders) s.join();
    out.closeWrite();
    reader.join();
  }
  std::map<int, int> next;  // per thread, the n expected next
  std::istringstream lines(text);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    const json v = json::parse(line);  // throws, failing the test, on a torn line
    const int t = v["t"], n = v["n"];
    ASSERT_EQ(n, next[t]) << "thread " << t << " out of order";
    ASSERT_EQ(v["pad"].get<std::string>().size(), static_cast<size_t>(300 + n % 7));
    next[t] = n + 1;
    ++count;
  }
  EXPECT_EQ(count, kThreads * kEach);
}

TEST(StdioTransportSend, APeerThatStopsReadingHoldsSendersBackUntilItReads) {
  Pipe out;
  StdioTransport transport(-1, out.writeFd(), 1 << 20);
  // Messages under the size that is written while serialized: they queue.
  const std::string big(128 << 10, 'y');
  // The first sender's write fills the pipe and blocks; the second queues behind it, up to the
  // bound (4 MiB, so 32 of these), and must then wait too.
  std::thread writer([&] { transport.send({{"i", -1}, {"big", big}}); });
  std::this_thread::sleep_for(50ms);
  constexpr int kQueued = 48;
  std::atomic<int> sent = 0;
  std::thread sender([&] {
    for (int i = 0; i < kQueued; ++i) {
      transport.send({{"i", i}, {"big", big}});
      ++sent;
    }
  });
  std::this_thread::sleep_for(300ms);
  EXPECT_LE(sent.load(), 33) << "the queue grew without bound while nobody read";
  std::string text;
  std::thread reader([&] { text = out.drain(); });
  writer.join();
  sender.join();
  out.closeWrite();
  reader.join();
  EXPECT_EQ(sent.load(), kQueued);
  EXPECT_EQ(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')), kQueued + 1);
}

TEST(StdioTransportSend, LargeMessagesWrittenAsTheyAreSerializedArriveWholeAndInOrder) {
  // Messages over the streaming size (written piece by piece) among small ones (queued), from
  // several threads: each line whole and intact, each thread's in the order it sent them.
  Pipe out;
  constexpr int kThreads = 4, kEach = 12;
  std::string large;
  for (int i = 0; large.size() < (700 << 10); ++i) {
    large += "line " + std::to_string(i) + "\t\"caf\xC3\xA9\" \xE2\x82\xAC\n";
  }
  std::string text;
  {
    StdioTransport transport(-1, out.writeFd(), 1 << 20);
    std::thread reader([&] {
      std::this_thread::sleep_for(20ms);
      text = out.drain();
    });
    std::vector<std::thread> senders;
    for (int t = 0; t < kThreads; ++t) {
      senders.emplace_back([&, t] {
        for (int n = 0; n < kEach; ++n) {
          const bool big = (n + t) % 3 == 0;
          transport.send({{"t", t}, {"n", n}, {"text", big ? large : std::string(100, 'z')}});
        }
      });
    }
    for (auto& s : senders) s.join();
    out.closeWrite();
    reader.join();
  }
  std::map<int, int> next;
  std::istringstream lines(text);
  std::string line;
  int count = 0, bigs = 0;
  while (std::getline(lines, line)) {
    const json v = json::parse(line);  // throws, failing the test, on a torn line
    const int t = v["t"], n = v["n"];
    ASSERT_EQ(n, next[t]) << "thread " << t << " out of order";
    const bool big = (n + t) % 3 == 0;
    ASSERT_EQ(v["text"].get<std::string>(), big ? large : std::string(100, 'z'));
    bigs += big;
    next[t] = n + 1;
    ++count;
  }
  EXPECT_EQ(count, kThreads * kEach);
  EXPECT_EQ(bigs, kThreads * kEach / 3);
}

TEST(StdioTransportSend, APeerThatHasGoneEndsWritingWithoutBlockingOrCrashing) {
  struct sigaction ignore = {}, old = {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old);  // as the server's main() does
  Pipe out;
  out.closeRead();
  std::atomic<int> returned = 0;
  {
    StdioTransport transport(-1, out.writeFd(), 1 << 20);
    std::vector<std::thread> senders;
    for (int t = 0; t < 4; ++t) {
      senders.emplace_back([&] {
        for (int n = 0; n < 200; ++n) {
          transport.send({{"n", n}});
          ++returned;
        }
      });
    }
    for (auto& s : senders) s.join();  // a hang here fails the test by its timeout
  }
  sigaction(SIGPIPE, &old, nullptr);
  EXPECT_EQ(returned.load(), 800);
}

TEST(StdioTransportSend, AfterFirstSendRunsOnceWithTheFirstMessageAlreadyWritten) {
  Pipe out;
  StdioTransport transport(-1, out.writeFd(), 1 << 20);
  int runs = 0;
  std::string seen;
  transport.afterFirstSend([&] {
    ++runs;
    char buf[256];
    const ssize_t n = read(out.readFd(), buf, sizeof buf);  // there already: does not block
    if (n > 0) seen.assign(buf, static_cast<size_t>(n));
  });
  EXPECT_EQ(runs, 0);
  transport.send({{"n", 1}});
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(seen, "{\"n\":1}\n");
  transport.send({{"n", 2}});
  EXPECT_EQ(runs, 1);
  out.closeWrite();
  EXPECT_EQ(out.drain(), "{\"n\":2}\n");
}

}  // namespace
}  // namespace byd::mcp
