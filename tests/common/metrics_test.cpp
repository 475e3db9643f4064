#include "common/metrics.h"

#include <gtest/gtest.h>

namespace byd::metrics {
namespace {

// The lines of `text` that start with `prefix`.
std::vector<std::string> linesStarting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
    at = end + 1;
  }
  return out;
}

TEST(Metrics, CountersAddUpPerLabelSetAndEscapeTheirValues) {
  const double before = valueOf("byd_tool_calls_total", {"t\"x\\y\nz", "ok"});
  add("byd_tool_calls_total", {"t\"x\\y\nz", "ok"});
  add("byd_tool_calls_total", {"t\"x\\y\nz", "ok"}, 2);
  EXPECT_EQ(valueOf("byd_tool_calls_total", {"t\"x\\y\nz", "ok"}), before + 3);
  const std::string text = exposition();
  EXPECT_NE(text.find("# TYPE byd_tool_calls_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("byd_tool_calls_total{tool=\"t\\\"x\\\\y\\nz\",outcome=\"ok\"} " +
                      std::to_string(static_cast<int>(before + 3)) + "\n"),
            std::string::npos)
      << text;
}

TEST(Metrics, HistogramBucketsAreCumulativeWithSumAndCount) {
  observe("byd_tool_call_duration_seconds", {"histogram-test"}, 0.003);
  observe("byd_tool_call_duration_seconds", {"histogram-test"}, 0.2);
  observe("byd_tool_call_duration_seconds", {"histogram-test"}, 100);
  const std::string text = exposition();
  const auto buckets =
      linesStarting(text, "byd_tool_call_duration_seconds_bucket{tool=\"histogram-test\"");
  ASSERT_EQ(buckets.size(), 15u) << text;  // 14 bounds and +Inf
  EXPECT_EQ(buckets[0],
            "byd_tool_call_duration_seconds_bucket{tool=\"histogram-test\",le=\"0.001\"} 0");
  EXPECT_EQ(buckets[2],
            "byd_tool_call_duration_seconds_bucket{tool=\"histogram-test\",le=\"0.005\"} 1");
  EXPECT_EQ(buckets[7],
            "byd_tool_call_duration_seconds_bucket{tool=\"histogram-test\",le=\"0.25\"} 2");
  EXPECT_EQ(buckets[13],
            "byd_tool_call_duration_seconds_bucket{tool=\"histogram-test\",le=\"30\"} 2");
  EXPECT_EQ(buckets[14],
            "byd_tool_call_duration_seconds_bucket{tool=\"histogram-test\",le=\"+Inf\"} 3");
  EXPECT_EQ(
      linesStarting(text, "byd_tool_call_duration_seconds_count{tool=\"histogram-test\"}"),
      std::vector<std::string>{"byd_tool_call_duration_seconds_count{tool=\"histogram-test\"} 3"});
  EXPECT_EQ(linesStarting(text, "byd_tool_call_duration_seconds_sum{tool=\"histogram-test\"}"),
            std::vector<std::string>{
                "byd_tool_call_duration_seconds_sum{tool=\"histogram-test\"} 100.203"});
}

TEST(Metrics, GaugesAreReadAtScrapeTimeWhileTheirOwnerLives) {
  double open = 2;
  {
    Gauge gauge("byd_sessions", [&] { return GaugeSamples{{{"gauge-test"}, open}}; });
    EXPECT_EQ(linesStarting(exposition(), "byd_sessions{tenant=\"gauge-test\"}"),
              std::vector<std::string>{"byd_sessions{tenant=\"gauge-test\"} 2"});
    open = 5;
    EXPECT_EQ(linesStarting(exposition(), "byd_sessions{tenant=\"gauge-test\"}"),
              std::vector<std::string>{"byd_sessions{tenant=\"gauge-test\"} 5"});
  }
  EXPECT_TRUE(linesStarting(exposition(), "byd_sessions{tenant=\"gauge-test\"}").empty());
}

TEST(Metrics, AFamilyWithoutLabelsHasBareSamples) {
  add("byd_sandbox_starts_total", {});
  EXPECT_EQ(linesStarting(exposition(), "byd_sandbox_starts_total ").size(), 1u);
}

}  // namespace
}  // namespace byd::metrics
