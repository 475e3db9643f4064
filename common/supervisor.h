#pragma once
// Supervisor: the one loop that watches a running command, for every backend (the Local
// sandbox's pipes and pidfd, a Docker exec's stream, a container's command runner). It polls the
// descriptors it is given, keeps each output stream up to a cap, reports progress about once a
// second with the latest complete output line, and enforces the deadline and cancellation
// through the caller's stop steps: step 1 as soon as the deadline passes or a cancel comes, then
// one each `grace` until the command has ended (SIGTERM then SIGKILL; a kill sent to a runner,
// then giving up on it). Single-threaded: one supervisor watches one command.

#include <poll.h>

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/cancel.h"

namespace byd {

struct SupervisorOptions {
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  std::chrono::milliseconds timeout{120000};
  size_t max_output = 100 * 1024;  // per stream
  const CancelToken* cancel = nullptr;
  // About once a second while the command runs, with the latest complete line of its output
  // ("" before the first).
  std::function<void(std::string_view line)> on_progress;
  // Stop step `step` (1, 2, ...): true to wait for the end, false to stop waiting.
  std::function<bool(int step)> stop;
  std::chrono::milliseconds grace{500};  // between stop steps
};

// What a supervised command left: its output and what stopped it. A stream within the cap is
// whole in `out`/`err`; a longer one keeps its head there and its end in `out_end`/`err_end`,
// half the cap each (a build's errors and a test run's summary are at the end).
struct Captured {
  std::string out, err;
  std::string out_end, err_end;           // set when the stream was cut
  uint64_t out_bytes = 0, err_bytes = 0;  // all the command wrote, shown or not
  bool out_truncated = false, err_truncated = false;
  bool timed_out = false, cancelled = false;
};

class Supervisor {
 public:
  explicit Supervisor(SupervisorOptions options);

  // Watches `fd` for `events`; `handler` gets what poll returned and answers the events to wait
  // for next, or 0 when done with the descriptor (which stays the caller's to close).
  using Handler = std::function<short(short revents)>;
  void watch(int fd, short events, Handler handler);

  // Output of the command: the head up to the cap, then its latest bytes (see Captured).
  void out(std::string_view data) { take(data, out_, out_tail_); }
  void err(std::string_view data) { take(data, err_, err_tail_); }
  // Bytes the command wrote that were dropped on their way here (past a cap elsewhere): they
  // count in the stream's size, and what comes after them is not joined to what came before.
  void skipped(bool to_err, uint64_t bytes);
  // A line to report as progress that the output did not carry (it came past a cap elsewhere).
  void progressLine(std::string_view line) { latest_line_.assign(line); }
  // Reads what `fd` (non-blocking) has into out() or err(): POLLIN while it may have more, 0 at
  // its end or on an error. For a pipe's handler.
  short readInto(int fd, bool to_err);

  // The command has ended: run() returns after this round.
  void finish() { finish_at_ = Clock::now(); }
  // Returns by `when` at the latest, even if descriptors are still open (a background child of
  // an ended command may hold its pipes).
  void finishBy(std::chrono::steady_clock::time_point when) {
    finish_at_ = std::min(finish_at_, when);
  }

  // Runs until finish(), until no descriptor is watched, or until a stop step gave up; false
  // in the last case.
  bool run();

  // A stop step has been taken: the deadline passed, or a cancel came.
  bool stopping() const { return step_ > 0; }
  // What the command left; call once it has ended (after run()).
  Captured& captured();
  double elapsedMs() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Watch {
    int fd;
    short events;
    Handler handler;
  };
  // One output stream as it comes.
  struct Stream {
    std::string head;  // up to the cap
    std::string end;   // past the cap: the latest bytes, up to half the cap
    uint64_t bytes = 0;
    bool gap = false;  // bytes were dropped between head and end
  };
  void take(std::string_view data, Stream& stream, std::string& tail);
  // The stream as Captured holds it.
  void seal(Stream& stream, std::string& out, std::string& end, uint64_t& bytes, bool& truncated);

  SupervisorOptions options_;
  std::vector<Watch> watches_;
  Captured captured_;
  Stream out_, err_;
  bool sealed_ = false;
  std::string out_tail_, err_tail_, latest_line_;
  Clock::time_point finish_at_ = Clock::time_point::max();
  int step_ = 0;
};

}  // namespace byd
