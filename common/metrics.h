#pragma once
// The server's metrics, process-wide, for /metrics in Prometheus' text exposition format
// (version 0.0.4). Every family is declared once in metrics.cpp (name, type, help, labels,
// buckets); a sample names its family and gives its label values in the declared order.
// Counters and histograms are kept here; gauges are read at scrape time from whoever owns
// what they count (a Gauge registered for the scrape). Thread-safe.

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace byd::metrics {

// Label values, in the order the family declares its labels.
using Values = std::vector<std::string>;

// Adds `by` to a counter.
void add(std::string_view family, const Values& values, double by = 1);
// One observation (in seconds, for the *_seconds families) of a histogram.
void observe(std::string_view family, const Values& values, double value);

// A gauge family's samples, computed when /metrics is read.
using GaugeSamples = std::vector<std::pair<Values, double>>;
// Registers what a gauge family reads while the returned object lives.
class Gauge {
 public:
  Gauge(std::string_view family, std::function<GaugeSamples()> read);
  ~Gauge();
  Gauge(const Gauge&) = delete;
  Gauge& operator=(const Gauge&) = delete;

 private:
  std::string family_;
  size_t id_;
};

// Every family, with HELP and TYPE lines, as the text exposition format has them.
std::string exposition();

// The value of one counter, or of one histogram's count (tests).
double valueOf(std::string_view family, const Values& values);

}  // namespace byd::metrics
