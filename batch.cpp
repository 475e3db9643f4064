// backyard-mcp batch: isolated Python runs from a JSON-lines file, N at a time, for loops that
// score model-written code (reinforcement learning from verifiable rewards). Each input line
// is {"id", "code", "stdin"?, "timeout_s"?, "memory"?}; each output line is the run's result
// (the facts of a run_python result) with its id, in the order runs end. A line that is not a
// run is reported as one, and the batch goes on.

#include "batch.h"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "common/logging.h"
#include "config.h"
#include "permissions/guard.h"
#include "session_factory.h"
#include "tools/python_result.h"

namespace byd {
namespace {

using nlohmann::json;

constexpr int kUsageError = 2;

// "256m", "1g", "65536" (bytes), or a number; 0 when absent.
Result<uint64_t> memoryOf(const json& value) {
  if (value.is_null()) return uint64_t{0};
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (!value.is_string())
    return invalidArgument("\"memory\" must be bytes or a size like \"256m\"");
  const std::string text = value.get<std::string>();
  size_t used = 0;
  double n = 0;
  try {
    n = std::stod(text, &used);
  } catch (...) {
    used = 0;
  }
  std::string unit = text.substr(used);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const double scale = unit.empty() || unit == "b"   ? 1
                       : unit == "k" || unit == "kb" ? 1024.0
                       : unit == "m" || unit == "mb" ? 1048576.0
                       : unit == "g" || unit == "gb" ? 1073741824.0
                                                     : 0;
  if (used == 0 || scale == 0 || !(n > 0) || n * scale > 1e15) {
    return invalidArgument("\"memory\": '" + text + "' is not a size like 256m or 1g");
  }
  return static_cast<uint64_t>(n * scale);
}

// The run a line asks for, or why the line is none.
Result<PythonRequest> runOf(const json& line, int64_t max_timeout_s) {
  if (!line.is_object()) return invalidArgument("a line must be a JSON object");
  for (const auto& [key, value] : line.items()) {
    if (key != "id" && key != "code" && key != "stdin" && key != "timeout_s" && key != "memory") {
      return invalidArgument("unknown field \"" + key + "\"");
    }
  }
  PythonRequest r;
  r.isolated = true;
  r.session = "";
  auto code = line.find("code");
  if (code == line.end() || !code->is_string() || code->get<std::string>().empty()) {
    return invalidArgument("\"code\" must be a non-empty string");
  }
  r.code = code->get<std::string>();
  if (auto in = line.find("stdin"); in != line.end()) {
    if (!in->is_string()) return invalidArgument("\"stdin\" must be a string");
    r.stdin_data = in->get<std::string>();
  }
  double timeout_s = 30;
  if (auto t = line.find("timeout_s"); t != line.end()) {
    if (!t->is_number() || !(t->get<double>() > 0) || t->get<double>() > max_timeout_s) {
      return invalidArgument("\"timeout_s\" must be a number of seconds above 0 and at most " +
                             std::to_string(max_timeout_s) + " (--max-timeout)");
    }
    timeout_s = t->get<double>();
  }
  r.timeout = std::chrono::milliseconds(static_cast<int64_t>(std::ceil(timeout_s * 1000)));
  BYD_ASSIGN_OR_RETURN(r.memory_bytes, memoryOf(line.value("memory", json())));
  return r;
}

json resultLine(const json& id, const PythonResult& r) {
  json line = pythonRunJson(r, /*isolated=*/true);
  line["id"] = id;
  return line;
}

json badLine(const json& id, size_t number, const std::string& why) {
  return {{"id", id},
          {"line", number},
          {"error",
           {{"type", "BadLine"},
            {"message", "line " + std::to_string(number) + ": " + why},
            {"traceback", ""}}}};
}

}  // namespace

int runBatch(int argc, char** argv) {
  // Its own options first; every other argument is a server setting (--root, --backend, ...).
  std::string in_path, out_path;
  int parallel = 2;
  CLI::App app("backyard-mcp batch: isolated Python runs from a JSON-lines file", "batch");
  app.allow_extras();
  app.add_option("--in", in_path, "runs, one JSON object per line ('-': stdin)")->required();
  app.add_option("--out", out_path, "results, one JSON object per line ('-': stdout)")->required();
  app.add_option("--parallel", parallel, "runs at once (default 2)")->check(CLI::Range(1, 256));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints the help, or the error and how to get help
    return code == 0 ? 0 : kUsageError;
  }
  std::vector<std::string> rest = {"backyard-mcp"};
  for (const std::string& extra : app.remaining()) rest.push_back(extra);
  std::vector<char*> rest_argv;
  for (std::string& arg : rest) rest_argv.push_back(arg.data());
  auto parsed = parseCommandLine(static_cast<int>(rest_argv.size()), rest_argv.data(), BYD_VERSION);
  if (!parsed.ok()) {
    fprintf(stderr, "backyard-mcp batch: %s\n", parsed.status().message().c_str());
    return kUsageError;
  }
  if (parsed->exit_now) return parsed->exit_code;
  Config config = parsed->config;
  config.transport = "stdio";
  // One template kernel per run at once, kept for the next.
  config.python.max_sessions = std::max<size_t>(config.python.max_sessions, parallel);
  auto rules = loadRuleset(config);
  if (!rules.ok()) {
    fprintf(stderr, "backyard-mcp batch: %s\n", rules.status().message().c_str());
    return kUsageError;
  }
  setUpLogging("backyard-mcp", config.log_level == "info" ? "warn" : config.log_level);
  const permissions::Guard guard(*rules, permissions::AskFallback::kDeny);

  std::ifstream in_file;
  std::istream* in = &std::cin;
  if (in_path != "-") {
    in_file.open(in_path);
    if (!in_file) {
      fprintf(stderr, "backyard-mcp batch: cannot read %s\n", in_path.c_str());
      return kUsageError;
    }
    in = &in_file;
  }
  FILE* out = out_path == "-" ? stdout : fopen(out_path.c_str(), "w");
  if (out == nullptr) {
    fprintf(stderr, "backyard-mcp batch: cannot write %s: %s\n", out_path.c_str(), strerror(errno));
    return kUsageError;
  }
  SessionFactory factory(config, guard);
  auto stack = factory.start();
  if (!stack.ok()) {
    fprintf(stderr, "backyard-mcp batch: %s\n", stack.status().message().c_str());
    return kUsageError;
  }
  Executor* executor = (*stack)->backend->executor();
  if (executor == nullptr || !executor->runsPython()) {
    fprintf(stderr, "backyard-mcp batch: the %s backend runs no Python\n",
            std::string((*stack)->backend->kind()).c_str());
    return kUsageError;
  }

  std::mutex in_mu, out_mu;
  size_t next_line = 0;
  std::atomic<size_t> done{0}, failed{0}, bad{0};
  bool write_failed = false;
  const auto start = std::chrono::steady_clock::now();
  const auto write = [&](const json& line) {
    const std::string text = line.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    std::lock_guard lock(out_mu);
    if (fwrite(text.data(), 1, text.size(), out) != text.size() || fflush(out) != 0) {
      write_failed = true;
    }
  };
  const auto worker = [&] {
    CancelToken never;
    while (true) {
      std::string text;
      size_t number;
      {
        std::lock_guard lock(in_mu);
        if (!std::getline(*in, text)) return;
        number = ++next_line;
      }
      if (text.find_first_not_of(" \t\r") == std::string::npos) continue;  // a blank line
      const json line = json::parse(text, nullptr, false);
      const json id = line.is_object() ? line.value("id", json()) : json();
      if (line.is_discarded()) {
        ++bad;
        write(badLine(id, number, "not JSON"));
        continue;
      }
      auto request = runOf(line, config.limits.max_timeout_s);
      if (!request.ok()) {
        ++bad;
        write(badLine(id, number, request.status().message()));
        continue;
      }
      request->max_output = config.limits.max_output_bytes;
      request->view = {guard.fileRules(), false};
      auto result = executor->runPython(*request, never);
      ++done;
      if (!result.ok()) {
        ++failed;
        write(
            {{"id", id},
             {"error",
              {{"type", "RunFailed"}, {"message", result.status().message()}, {"traceback", ""}}}});
      } else {
        if (result->has_error || result->state_lost) ++failed;
        write(resultLine(id, *result));
      }
    }
  };
  const auto report = [&] {
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fprintf(stderr, "batch: %zu runs (%zu failed), %zu bad lines, %.1f s, %.0f runs/s\n",
            done.load(), failed.load(), bad.load(), s, s > 0 ? done.load() / s : 0.0);
  };
  std::jthread progress([&](std::stop_token stop) {
    while (!stop.stop_requested()) {
      for (int i = 0; i < 10 && !stop.stop_requested(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (!stop.stop_requested()) report();
    }
  });
  {
    std::vector<std::jthread> workers;
    for (int i = 0; i < parallel; ++i) workers.emplace_back(worker);
  }
  progress.request_stop();
  progress.join();
  report();
  if (out != stdout) fclose(out);
  if (write_failed) {
    fprintf(stderr, "backyard-mcp batch: writing %s failed\n", out_path.c_str());
    return 1;
  }
  return 0;
}

}  // namespace byd
