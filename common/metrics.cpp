#include "common/metrics.h"

#include <cassert>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>

#include <fmt/format.h>

namespace byd::metrics {
namespace {

enum class Type { kCounter, kGauge, kHistogram };

struct Family {
  const char* name;
  Type type;
  const char* help;
  std::vector<const char*> labels;
  std::vector<double> buckets = {};  // histograms: upper bounds, ascending
};

// Call latencies: from a cached read to a long build.
const std::vector<double> kCallBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                          0.25,  0.5,    1,     2.5,  5,     10,   30};
const std::vector<double> kBuildBuckets = {1, 5, 15, 30, 60, 120, 300, 600, 1200};

const std::vector<Family>& families() {
  static const std::vector<Family> all = {
      {"byd_sessions", Type::kGauge, "Open HTTP sessions, by tenant.", {"tenant"}},
      {"byd_session_pool_ready",
       Type::kGauge,
       "Sessions made ahead and ready to be taken (--session-pool), by tenant.",
       {"tenant"}},
      {"byd_tool_calls_total",
       Type::kCounter,
       "Tool calls answered, by tool and outcome (ok, error, denied, cancelled).",
       {"tool", "outcome"}},
      {"byd_tool_call_duration_seconds",
       Type::kHistogram,
       "How long tool calls took, by tool.",
       {"tool"},
       kCallBuckets},
      {"byd_permission_decisions_total",
       Type::kCounter,
       "Permission decisions, by operation and the action the rules gave (allow, deny, ask).",
       {"operation", "action"}},
      {"byd_sandbox_starts_total",
       Type::kCounter,
       "Local sandboxes started (a session's helper inside bubblewrap).",
       {}},
      {"byd_container_starts_total",
       Type::kCounter,
       "Containers started, by how (created, or restarted when kept).",
       {"how"}},
      {"byd_runtime_builds_total",
       Type::kCounter,
       "Runtime images built, by runtime and outcome (ok, error).",
       {"runtime", "outcome"}},
      {"byd_runtime_build_duration_seconds",
       Type::kHistogram,
       "How long runtime image builds took, by runtime.",
       {"runtime"},
       kBuildBuckets},
      {"byd_read_bytes_total",
       Type::kCounter,
       "Bytes of files the tools read, by the operation the rules judged (read, edit, ...).",
       {"operation"}},
      {"byd_written_bytes_total",
       Type::kCounter,
       "Bytes of files the tools wrote, by the operation the rules judged (write, edit).",
       {"operation"}},
  };
  return all;
}

const Family* find(std::string_view name) {
  for (const Family& f : families()) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

struct Series {
  double value = 0;               // counters
  std::vector<uint64_t> buckets;  // histograms: observations <= each bound
  double sum = 0;
  uint64_t count = 0;
};

struct Registry {
  std::mutex mu;  // series and gauges
  std::map<std::string, std::map<Values, Series>, std::less<>> series;
  std::map<std::string, std::map<size_t, std::shared_ptr<std::function<GaugeSamples()>>>,
           std::less<>>
      gauges;
  size_t next_gauge = 0;
  // Held while gauges are read, and by a Gauge's end: none is read once its owner is gone.
  std::mutex reading;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: threads may count during exit
  return *r;
}

Series* seriesOf(Registry& r, const Family& f, const Values& values) {
  assert(values.size() == f.labels.size());
  if (values.size() != f.labels.size()) return nullptr;
  Series& s = r.series[f.name][values];
  if (f.type == Type::kHistogram && s.buckets.empty()) s.buckets.assign(f.buckets.size(), 0);
  return &s;
}

std::string escaped(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  return fmt::format("{}", v);
}

// {a="x",b="y"} with `extra` (le="...") last; "" when there are no labels at all.
std::string labelSet(const Family& f, const Values& values, const std::string& extra = "") {
  std::string out;
  for (size_t i = 0; i < f.labels.size() && i < values.size(); ++i) {
    out += (out.empty() ? "" : ",") + std::string(f.labels[i]) + "=\"" + escaped(values[i]) + "\"";
  }
  if (!extra.empty()) out += (out.empty() ? "" : ",") + extra;
  return out.empty() ? "" : "{" + out + "}";
}

// Runs `update` on the series of `family` (declared as `type`) with `values`, under the lock.
template <typename Update>
void update(std::string_view family, Type type, const Values& values, Update&& update) {
  const Family* f = find(family);
  assert(f != nullptr && f->type == type);
  if (f == nullptr || f->type != type) return;
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  if (Series* s = seriesOf(r, *f, values)) update(*f, *s);
}

}  // namespace

void add(std::string_view family, const Values& values, double by) {
  update(family, Type::kCounter, values, [by](const Family&, Series& s) { s.value += by; });
}

void observe(std::string_view family, const Values& values, double value) {
  update(family, Type::kHistogram, values, [value](const Family& f, Series& s) {
    for (size_t i = 0; i < f.buckets.size(); ++i) {
      if (value <= f.buckets[i]) ++s.buckets[i];
    }
    s.sum += value;
    ++s.count;
  });
}

Gauge::Gauge(std::string_view family, std::function<GaugeSamples()> read) : family_(family) {
  assert(find(family) != nullptr && find(family)->type == Type::kGauge);
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  id_ = r.next_gauge++;
  r.gauges[family_][id_] = std::make_shared<std::function<GaugeSamples()>>(std::move(read));
}

Gauge::~Gauge() {
  Registry& r = registry();
  std::lock_guard reading(r.reading);
  std::lock_guard lock(r.mu);
  r.gauges[family_].erase(id_);
}

std::string exposition() {
  Registry& r = registry();
  std::lock_guard reading(r.reading);
  std::string out;
  for (const Family& f : families()) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", f.name, f.help, f.name,
                       f.type == Type::kCounter ? "counter"
                       : f.type == Type::kGauge ? "gauge"
                                                : "histogram");
    if (f.type == Type::kGauge) {
      std::vector<std::shared_ptr<std::function<GaugeSamples()>>> readers;
      {
        std::lock_guard lock(r.mu);
        for (const auto& [id, read] : r.gauges[f.name]) readers.push_back(read);
      }
      std::map<Values, double> total;  // two owners of one label set add up
      for (const auto& read : readers) {
        for (const auto& [values, v] : (*read)()) total[values] += v;
      }
      for (const auto& [values, v] : total) {
        out += f.name + labelSet(f, values) + " " + number(v) + "\n";
      }
      continue;
    }
    std::lock_guard lock(r.mu);
    for (const auto& [values, s] : r.series[f.name]) {
      if (f.type == Type::kCounter) {
        out += f.name + labelSet(f, values) + " " + number(s.value) + "\n";
        continue;
      }
      for (size_t i = 0; i < f.buckets.size(); ++i) {
        out +=
            fmt::format("{}_bucket{} {}\n", f.name,
                        labelSet(f, values, "le=\"" + number(f.buckets[i]) + "\""), s.buckets[i]);
      }
      out += fmt::format("{}_bucket{} {}\n", f.name, labelSet(f, values, "le=\"+Inf\""), s.count);
      out += fmt::format("{}_sum{} {}\n", f.name, labelSet(f, values), number(s.sum));
      out += fmt::format("{}_count{} {}\n", f.name, labelSet(f, values), s.count);
    }
  }
  return out;
}

double valueOf(std::string_view family, const Values& values) {
  const Family* f = find(family);
  if (f == nullptr) return 0;
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  auto fam = r.series.find(family);
  if (fam == r.series.end()) return 0;
  auto it = fam->second.find(values);
  if (it == fam->second.end()) return 0;
  return f->type == Type::kHistogram ? static_cast<double>(it->second.count) : it->second.value;
}

}  // namespace byd::metrics
