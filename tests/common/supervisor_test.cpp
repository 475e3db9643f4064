#include "common/supervisor.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "common/unique_fd.h"

namespace byd {
namespace {

using namespace std::chrono_literals;

struct Pipe {
  UniqueFd r, w;
  Pipe() {
    int p[2];
    EXPECT_EQ(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
    r.reset(p[0]);
    w.reset(p[1]);
  }
  void write(std::string_view s) {
    ASSERT_EQ(::write(w.get(), s.data(), s.size()), ssize_t(s.size()));
  }
};

void watchOutput(Supervisor& sup, Pipe& out, Pipe& err) {
  sup.watch(out.r.get(), POLLIN, [&](short) { return sup.readInto(out.r.get(), false); });
  sup.watch(err.r.get(), POLLIN, [&](short) { return sup.readInto(err.r.get(), true); });
}

TEST(Supervisor, ReadsEachStreamToItsEndAndKeepsItsHeadAndItsEnd) {
  Pipe out, err;
  SupervisorOptions o;
  o.max_output = 6;
  Supervisor sup(o);
  watchOutput(sup, out, err);
  out.write("hello world");
  err.write("oops");
  out.w.reset();
  err.w.reset();
  EXPECT_TRUE(sup.run());
  const Captured& c = sup.captured();
  EXPECT_EQ(c.out, "hel");
  EXPECT_EQ(c.out_end, "rld");
  EXPECT_EQ(c.out_bytes, 11u);
  EXPECT_TRUE(c.out_truncated);
  EXPECT_EQ(c.err, "oops");
  EXPECT_EQ(c.err_end, "");
  EXPECT_EQ(c.err_bytes, 4u);
  EXPECT_FALSE(c.err_truncated);
  EXPECT_FALSE(sup.stopping());
}

TEST(Supervisor, TheEndOfALongStreamIsItsLastBytesWhateverTheChunks) {
  SupervisorOptions o;
  o.max_output = 100;
  Supervisor sup(o);
  std::string all;
  for (int i = 0; i < 5000; ++i) {
    const std::string piece = std::to_string(i) + (i % 7 == 0 ? "\n" : ",");
    all += piece;
    sup.out(piece);
  }
  sup.err(std::string(101, 'e'));  // just past the cap: the end continues the head
  const Captured& c = sup.captured();
  EXPECT_EQ(c.out, all.substr(0, 50));
  EXPECT_EQ(c.out_end, all.substr(all.size() - 50));
  EXPECT_EQ(c.out_bytes, all.size());
  EXPECT_EQ(c.err, std::string(50, 'e'));
  EXPECT_EQ(c.err_end, std::string(50, 'e'));
  EXPECT_EQ(c.err_bytes, 101u);
}

TEST(Supervisor, BytesDroppedOnTheWayCountAndSeparateTheEnd) {
  SupervisorOptions o;
  o.max_output = 10;
  Supervisor sup(o);
  sup.out("0123456789");  // the head, as a runner forwards it up to the cap
  sup.skipped(false, 1000);
  sup.out("xyz");  // the last bytes the runner kept
  const Captured& c = sup.captured();
  EXPECT_EQ(c.out, "01234");
  EXPECT_EQ(c.out_end, "xyz");  // not joined to the head's "56789": bytes lie between
  EXPECT_EQ(c.out_bytes, 1013u);
  EXPECT_TRUE(c.out_truncated);
}

TEST(Supervisor, TakesStopStepsAGraceApartFromTheDeadlineUntilTheEnd) {
  Pipe out, err;
  std::vector<std::pair<int, double>> steps;
  SupervisorOptions o;
  o.timeout = 100ms;
  o.grace = 100ms;
  Supervisor* self = nullptr;
  o.stop = [&](int step) {
    steps.emplace_back(step, self->elapsedMs());
    if (step == 3) out.w.reset(), err.w.reset();  // the command ends at the third step
    return true;
  };
  Supervisor sup(o);
  self = &sup;
  watchOutput(sup, out, err);
  EXPECT_TRUE(sup.run());
  ASSERT_EQ(steps.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(steps[i].first, i + 1);
    EXPECT_GE(steps[i].second, 100.0 + 100.0 * i);  // never early
  }
  EXPECT_TRUE(sup.captured().timed_out);
  EXPECT_FALSE(sup.captured().cancelled);
  EXPECT_TRUE(sup.stopping());
}

TEST(Supervisor, AStepThatGivesUpEndsTheRun) {
  Pipe out, err;
  SupervisorOptions o;
  o.timeout = 10ms;
  o.grace = 10ms;
  int taken = 0;
  o.stop = [&](int step) {
    taken = step;
    return step < 2;
  };
  Supervisor sup(o);
  watchOutput(sup, out, err);  // the pipes never end
  EXPECT_FALSE(sup.run());
  EXPECT_EQ(taken, 2);
}

TEST(Supervisor, ACancelIsSeenWhileTheCommandRuns) {
  Pipe out, err;
  CancelToken cancel;
  SupervisorOptions o;
  o.timeout = 60s;
  o.cancel = &cancel;
  o.stop = [&](int) {
    out.w.reset();
    err.w.reset();
    return true;
  };
  Supervisor sup(o);
  watchOutput(sup, out, err);
  std::thread canceller([&] {
    std::this_thread::sleep_for(50ms);
    cancel.cancel();
  });
  EXPECT_TRUE(sup.run());
  canceller.join();
  EXPECT_TRUE(sup.captured().cancelled);
  EXPECT_FALSE(sup.captured().timed_out);
  EXPECT_LT(sup.elapsedMs(), 10000.0);
}

TEST(Supervisor, ReportsTheLatestCompleteLineOfEitherStreamAboutOnceASecond) {
  Pipe out, err;
  std::vector<std::string> lines;
  std::vector<double> at;
  SupervisorOptions o;
  Supervisor* self = nullptr;
  o.on_progress = [&](std::string_view line) {
    lines.emplace_back(line);
    at.push_back(self->elapsedMs());
    if (lines.size() == 1) out.write("ee\n"), err.write("err line\nfive");
    if (lines.size() == 2) out.write("four\n");
    if (lines.size() == 3) out.w.reset(), err.w.reset();
  };
  Supervisor sup(o);
  self = &sup;
  watchOutput(sup, out, err);
  out.write("one\ntwo\nthr");  // "thr" is not a complete line yet
  EXPECT_TRUE(sup.run());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "two");
  // Both streams had a new line in the same round: stderr's is read after stdout's.
  EXPECT_EQ(lines[1], "err line");
  EXPECT_EQ(lines[2], "four");
  for (size_t i = 0; i < at.size(); ++i) EXPECT_GE(at[i], 1000.0 * (i + 1));
}

TEST(Supervisor, FinishByReturnsWhileADescriptorIsStillOpen) {
  Pipe out, err;
  Supervisor sup(SupervisorOptions{});
  watchOutput(sup, out, err);  // held open, as by a background child
  sup.finishBy(std::chrono::steady_clock::now() + 50ms);
  EXPECT_TRUE(sup.run());
  EXPECT_FALSE(sup.stopping());
}

TEST(Supervisor, AHandlerChangesWhatItWaitsForAndFinishes) {
  Pipe in, out, err;
  Supervisor sup(SupervisorOptions{});
  std::string to_send = "abc";
  // Writes to `in` first, then reads back from it, then finishes: the events it asks for
  // are the ones it gets.
  sup.watch(in.w.get(), POLLOUT, [&](short revents) -> short {
    EXPECT_TRUE(revents & POLLOUT);
    in.write(to_send);
    return 0;
  });
  sup.watch(in.r.get(), POLLIN, [&](short) -> short {
    char buf[8];
    const ssize_t n = read(in.r.get(), buf, sizeof buf);
    if (n > 0) sup.out(std::string_view(buf, n));
    if (sup.captured().out == to_send) sup.finish();
    return POLLIN;
  });
  EXPECT_TRUE(sup.run());
  EXPECT_EQ(sup.captured().out, "abc");
}

}  // namespace
}  // namespace byd
