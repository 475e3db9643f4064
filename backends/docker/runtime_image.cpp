#include "backends/docker/runtime_image.h"

#include <chrono>
#include <map>
#include <memory>
#include <mutex>

#include <spdlog/spdlog.h>

#include "common/metrics.h"

namespace byd::docker {
namespace {

constexpr size_t kKeptLines = 200;
constexpr auto kBuildTimeout = std::chrono::hours(2);

// Each name single-quoted (checkPackageName keeps quotes and whitespace out): the shell reads
// no character of it.
std::string quotedList(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += " '" + n + "'";
  return out;
}

}  // namespace

std::string checkPackageName(std::string_view kind, std::string_view name) {
  if (name.empty() || name.size() > 214)
    return std::string(kind) + " package names are 1 to 214 characters";
  const unsigned char first = static_cast<unsigned char>(name[0]);
  if (!isalnum(first) && !(kind == "npm" && first == '@')) {
    return std::string(kind) + " package '" + std::string(name) +
           "': must start with a letter or digit" + (kind == "npm" ? " (or '@' for a scope)" : "");
  }
  for (unsigned char c : name) {
    if (!isalnum(c) && std::string_view("._+-@/=<>!~:,^*[]").find(static_cast<char>(c)) ==
                           std::string_view::npos) {
      return std::string(kind) + " package '" + std::string(name) + "': the character '" +
             std::string(1, static_cast<char>(c)) +
             "' is not one of a package name or version (letters, digits and ._+-@/=<>!~:,^*[])";
    }
  }
  return "";
}

std::string runtimeRepository(std::string_view runtime) {
  std::string out = "backyard-runtime/";
  std::string name;
  for (unsigned char c : runtime) {
    name += isalnum(c) ? static_cast<char>(tolower(c)) : '-';
  }
  while (!name.empty() && name.back() == '-') name.pop_back();
  return out + (name.empty() ? "runtime" : name);
}

std::string ImageRecipe::dockerfile() const {
  std::string out = "# The runtime '" + runtime + "' of backyard-mcp.\nFROM " + base_image +
                    "\nUSER root\nENV DEBIAN_FRONTEND=noninteractive\n";
  if (!apt.empty()) {
    out += "RUN apt-get update && apt-get install -y --no-install-recommends" + quotedList(apt) +
           " && rm -rf /var/lib/apt/lists/*\n";
  }
  if (!pip.empty()) {
    out += "RUN python3 -m pip install --no-cache-dir --break-system-packages";
    if (!pip_index_url.empty()) out += " --index-url '" + pip_index_url + "'";
    out += quotedList(pip) + "\n";
  }
  if (!npm.empty()) {
    out += "RUN npm install --global";
    if (!npm_registry.empty()) out += " --registry '" + npm_registry + "'";
    out += quotedList(npm) + " && npm cache clean --force\n";
  }
  out += "LABEL io.backyard-mcp.runtime=\"" + runtime + "\"\n";
  return out;
}

void BuildLog::feed(std::string_view bytes, const std::function<void(std::string_view)>& line) {
  pending_.append(bytes);
  // Objects follow one another, each on a line of its own (Docker) or not (Podman): take each
  // complete one by its balanced braces, outside strings.
  size_t start = pending_.find('{');
  while (start != std::string::npos) {
    int depth = 0;
    bool in_string = false, escaped = false;
    size_t end = std::string::npos;
    for (size_t i = start; i < pending_.size(); ++i) {
      const char c = pending_[i];
      if (in_string) {
        if (escaped) {
          escaped = false;
        } else if (c == '\\') {
          escaped = true;
        } else if (c == '"') {
          in_string = false;
        }
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{') {
        ++depth;
      } else if (c == '}' && --depth == 0) {
        end = i;
        break;
      }
    }
    if (end == std::string::npos) break;
    take(pending_.substr(start, end + 1 - start), line);
    start = pending_.find('{', end + 1);
    if (start == std::string::npos) {
      pending_.clear();
      return;
    }
  }
  if (start == std::string::npos) {
    pending_.clear();
  } else {
    pending_.erase(0, start);
  }
}

void BuildLog::take(const std::string& object, const std::function<void(std::string_view)>& line) {
  const nlohmann::json doc = nlohmann::json::parse(object, nullptr, false);
  if (!doc.is_object()) return;
  std::string text;
  if (auto it = doc.find("stream"); it != doc.end() && it->is_string()) text = *it;
  if (auto it = doc.find("error"); it != doc.end() && it->is_string()) {
    error_ = it->get<std::string>();
    text += error_ + "\n";
  }
  partial_ += text;
  size_t nl;
  while ((nl = partial_.find('\n')) != std::string::npos) {
    std::string one = partial_.substr(0, nl);
    partial_.erase(0, nl + 1);
    while (!one.empty() && (one.back() == '\r' || one.back() == ' ')) one.pop_back();
    if (one.empty()) continue;
    if (line) line(one);
    lines_.push_back(std::move(one));
    if (lines_.size() > kKeptLines) lines_.erase(lines_.begin(), lines_.begin() + kKeptLines / 2);
  }
}

std::string BuildLog::tail(size_t n) const {
  std::string out;
  for (size_t i = lines_.size() > n ? lines_.size() - n : 0; i < lines_.size(); ++i) {
    out += (out.empty() ? "" : "\n") + lines_[i];
  }
  return out;
}

Status ensureImage(const Client& client, const ImageRecipe& recipe,
                   const std::function<void(std::string_view)>& progress,
                   const CancelToken& cancel) {
  // One build per tag at a time: whoever comes second finds the image made.
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<std::mutex>> building;
  std::shared_ptr<std::mutex> one;
  {
    std::lock_guard lock(mu);
    auto& slot = building[recipe.tag];
    if (!slot) slot = std::make_shared<std::mutex>();
    one = slot;
  }
  std::lock_guard build_lock(*one);
  auto have = client.request("GET", "/images/" + urlEncode(recipe.tag) + "/json");
  if (have.ok()) return okStatus();
  if (have.status().code() != Code::kNotFound) return have.status();
  const std::string dockerfile = recipe.dockerfile();
  BYD_ASSIGN_OR_RETURN(std::string tar, makeTar({{"Dockerfile", dockerfile, 0644}}));
  spdlog::info("docker: building runtime '{}' as {} from {}", recipe.runtime, recipe.tag,
               recipe.base_image);
  const auto started = std::chrono::steady_clock::now();
  BuildLog log;
  // The host's network: the packages come from the mirrors and indexes this machine reaches
  // (a build's container is not a session's; the runtimes are the operator's own recipes).
  const std::string path =
      "/build?t=" + urlEncode(recipe.tag) + "&networkmode=host&rm=1&forcerm=1&labels=" +
      urlEncode(nlohmann::json{{"io.backyard-mcp.runtime", recipe.runtime}}.dump());
  Status s = client.stream("POST", path, tar, "application/x-tar", kBuildTimeout,
                           [&](std::string_view bytes) {
                             if (cancel.cancelled()) return false;
                             log.feed(bytes, [&](std::string_view line) {
                               spdlog::info("docker: build of '{}': {}", recipe.runtime, line);
                               if (progress) progress(line);
                             });
                             return true;
                           });
  const std::string what = "runtime '" + recipe.runtime + "': the build of " + recipe.tag;
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const bool built = s.ok() && log.error().empty();
  metrics::add("byd_runtime_builds_total",
               {recipe.runtime, built                          ? "ok"
                                : s.code() == Code::kCancelled ? "cancelled"
                                                               : "error"});
  metrics::observe("byd_runtime_build_duration_seconds", {recipe.runtime}, took);
  if (s.code() == Code::kCancelled) return cancelled(what + " was cancelled");
  if (!built) {
    const std::string why = !log.error().empty() ? log.error() : s.message();
    const std::string tail = log.tail(15);
    spdlog::error("docker: {} failed: {}", what, why);
    return failedPrecondition(what + " failed: " + why +
                              (tail.empty() ? "" : "\nIts last lines:\n" + tail));
  }
  BYD_RETURN_IF_ERROR(client.request("GET", "/images/" + urlEncode(recipe.tag) + "/json").status());
  spdlog::info("docker: runtime '{}' built as {} in {:.1f} s", recipe.runtime, recipe.tag, took);
  return okStatus();
}

}  // namespace byd::docker
