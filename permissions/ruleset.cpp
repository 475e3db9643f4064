#include "permissions/ruleset.h"

#include <re2/re2.h>

#include <re2/set.h>
#include <algorithm>
#include <cstdlib>
#include <memory>

#include "schemas/embedded.h"
#include "schemas/validator.h"

namespace byd::permissions {
namespace {

constexpr std::array<std::string_view, kOperationCount> kOperationNames = {
    "read",   "write", "edit", "ls",     "glob",    "grep",   "execute",
    "python", "mkdir", "move", "delete", "network", "install"};

// Operations a ruleset opens only by a section of its own: without one, they are denied
// whatever the global default says (the sandbox has had no network, and nothing was installed).
bool closedWithoutSection(Operation op) {
  return op == Operation::kNetwork || op == Operation::kInstall;
}

bool judgedAsWrite(Operation op) {
  return op == Operation::kMkdir || op == Operation::kMove || op == Operation::kDelete;
}
constexpr std::array<std::string_view, 3> kActionNames = {"allow", "deny", "ask"};

RE2::Options regexOptions() {
  RE2::Options options;
  options.set_log_errors(false);
  // Python code spans lines: let `.` match newlines there and everywhere (harmless for paths).
  options.set_dot_nl(true);
  return options;
}

Result<std::shared_ptr<const re2::RE2>> compileRegex(const std::string& pattern,
                                                     const std::string& where) {
  auto re = std::make_shared<const re2::RE2>(pattern, regexOptions());
  if (!re->ok())
    return invalidArgument(where + ": invalid regex '" + pattern + "': " + re->error());
  return std::shared_ptr<const re2::RE2>(std::move(re));
}

constexpr std::string_view kProtectedReason =
    "a protected path: it holds what runs outside the sandbox later (git's hooks and config, "
    "editor and agent settings, direnv and shell start-up files)";

constexpr std::array<std::string_view, 15> kProtectedPatterns = {
    "**/.git/hooks", "**/.git/hooks/**", "**/.git/config",   "**/.mcp.json", "**/.claude",
    "**/.claude/**", "**/.vscode",       "**/.vscode/**",    "**/.idea",     "**/.idea/**",
    "**/.envrc",     "**/.bashrc",       "**/.bash_profile", "**/.profile",  "**/.zshrc"};

// The protected paths as one automaton; -1 or the index of the pattern `path` matches.
int protectedHit(std::string_view path) {
  static const auto set = [] {
    auto s = std::make_unique<RE2::Set>(GlobMatcher::regexOptions(), RE2::ANCHOR_BOTH);
    for (std::string_view pattern : kProtectedPatterns) {
      auto glob = GlobMatcher::compile(pattern, /*ignore_case=*/true);
      if (!glob.ok() || s->Add(glob->regex(), nullptr) < 0) std::abort();  // fixed, tested
    }
    if (!s->Compile()) std::abort();
    return s;
  }();
  std::vector<int> hits;
  if (!set->Match(path, &hits) || hits.empty()) return -1;
  return *std::min_element(hits.begin(), hits.end());
}

}  // namespace

std::span<const std::string_view> protectedPathPatterns() { return kProtectedPatterns; }

std::string_view actionName(Action a) { return kActionNames[static_cast<size_t>(a)]; }
std::string_view operationName(Operation op) { return kOperationNames[static_cast<size_t>(op)]; }

std::optional<Operation> parseOperation(std::string_view name) {
  for (size_t i = 0; i < kOperationNames.size(); ++i) {
    if (kOperationNames[i] == name) return static_cast<Operation>(i);
  }
  return std::nullopt;
}

std::optional<Action> parseAction(std::string_view name) {
  for (size_t i = 0; i < kActionNames.size(); ++i) {
    if (kActionNames[i] == name) return static_cast<Action>(i);
  }
  return std::nullopt;
}

std::string commandPatternToRegex(std::string_view pattern) {
  std::string body = pattern.size() > 1 && pattern.back() == '*' &&
                             pattern[pattern.size() - 2] != ' ' &&
                             pattern[pattern.size() - 2] != '*'
                         ? std::string(pattern.substr(0, pattern.size() - 1))
                         : std::string(pattern);
  const bool word_prefix = body.size() != pattern.size();
  std::string re;
  for (char c : body) {
    if (c == '*') {
      re += ".*";
    } else if (c == '?') {
      re += ".";
    } else {
      re += RE2::QuoteMeta(std::string(1, c));
    }
  }
  if (word_prefix) re += "(?: .*)?";
  return re;
}

Result<Ruleset::Rule> Ruleset::compileRule(Operation op, const nlohmann::json& rule,
                                           const std::string& where) {
  Rule out;
  const bool has_pattern = rule.contains("pattern");
  if (has_pattern == rule.contains("regex")) {
    return invalidArgument(where + ": a rule needs exactly one of \"pattern\" or \"regex\"");
  }
  out.action = *parseAction(rule["action"].get<std::string>());
  out.description = rule.value("description", "");
  // Inline, so that the rule still joins the others' RE2::Set.
  const bool ignore_case = rule.value("ignore_case", false);
  const std::string flags = ignore_case ? "(?i)" : "";
  if (!has_pattern) {
    out.text = rule["regex"].get<std::string>();
    BYD_ASSIGN_OR_RETURN(out.re, compileRegex(flags + out.text, where + ".regex"));
    return out;
  }
  out.text = rule["pattern"].get<std::string>();
  if (op == Operation::kExecute || op == Operation::kPython) {
    BYD_ASSIGN_OR_RETURN(out.re,
                         compileRegex(flags + commandPatternToRegex(out.text), where + ".pattern"));
    return out;
  }
  // Host names are compared without regard to case: the target is lower-cased, so is the rule.
  auto glob = GlobMatcher::compile(out.text, ignore_case || closedWithoutSection(op));
  if (!glob.ok()) return invalidArgument(where + ".pattern: " + glob.status().message());
  out.glob = std::move(*glob);
  return out;
}

Result<Ruleset> Ruleset::fromJson(const nlohmann::json& doc, Compile when) {
  if (when == Compile::kNow) {
    BYD_ASSIGN_OR_RETURN(const nlohmann::json* schema, schemas::embedded("ruleset.schema.json"));
    if (Status s = schemas::validate(*schema, doc, "ruleset"); !s.ok()) return s;
  }
  Ruleset out;
  out.json_ = std::make_shared<const nlohmann::json>(doc);
  out.name_ = doc.value("name", "custom");
  out.fallback_ = *parseAction(doc["default"].get<std::string>());
  // Sections are found in the ruleset's own copy of the document: its pending rules point in.
  const nlohmann::json& own = *out.json_;
  for (size_t i = 0; i < kOperationCount; ++i) {
    OperationRules& ops = out.ops_[i];
    ops.named = static_cast<Operation>(i);
    auto section = own.find(std::string(kOperationNames[i]));
    if (section == own.end()) continue;
    if (auto d = section->find("default"); d != section->end()) {
      ops.fallback = parseAction(d->get<std::string>());
    }
    auto rules = section->find("rules");
    if (rules == section->end() || rules->empty()) continue;
    for (const nlohmann::json& rule : *rules) {
      ops.actions.push_back(*parseAction(rule["action"].get<std::string>()));
    }
    ops.pending = std::make_shared<Pending>();
    ops.pending->op = static_cast<Operation>(i);
    ops.pending->doc = out.json_;
    ops.pending->rules = &*rules;
  }
  for (size_t i = 0; i < kOperationCount; ++i) {
    if (judgedAsWrite(static_cast<Operation>(i)) && !doc.contains(kOperationNames[i])) {
      out.ops_[i] = out.ops_[static_cast<size_t>(Operation::kWrite)];
    }
  }
  if (when == Compile::kNow) BYD_RETURN_IF_ERROR(out.compileAll());
  return out;
}

const nlohmann::json& Ruleset::json() const {
  static const nlohmann::json kNone;  // a ruleset not made by fromJson
  return json_ ? *json_ : kNone;
}

Status Ruleset::compileAll() const {
  for (const OperationRules& ops : ops_) BYD_RETURN_IF_ERROR(ops.compiled().status);
  return okStatus();
}

const Ruleset::Compiled& Ruleset::OperationRules::compiled() const {
  static const Compiled kNone;
  if (!pending) return kNone;
  std::call_once(pending->once, [p = pending.get()] {
    const std::string op_name(operationName(p->op));
    for (size_t r = 0; r < p->rules->size(); ++r) {
      const std::string where = op_name + ".rules[" + std::to_string(r) + "]";
      auto rule = compileRule(p->op, (*p->rules)[r], where);
      if (!rule.ok()) {
        p->compiled.status = rule.status();
        p->compiled.rules.clear();
        return;
      }
      p->compiled.rules.push_back(std::move(*rule));
    }
    p->compiled.set = combine(p->compiled.rules);
  });
  return pending->compiled;
}

std::shared_ptr<const re2::RE2::Set> Ruleset::combine(const std::vector<Rule>& rules) {
  if (rules.size() < 2) return nullptr;
  const bool globs = rules.front().glob.has_value();
  for (const Rule& rule : rules) {
    if (rule.glob.has_value() != globs) return nullptr;
  }
  auto set = std::make_shared<re2::RE2::Set>(globs ? GlobMatcher::regexOptions() : regexOptions(),
                                             RE2::ANCHOR_BOTH);
  for (const Rule& rule : rules) {
    const std::string& pattern = globs ? rule.glob->regex() : rule.re->pattern();
    if (set->Add(pattern, nullptr) < 0) return nullptr;  // each compiled alone; keep them so
  }
  if (!set->Compile()) return nullptr;
  return set;
}

size_t Ruleset::firstHit(const Compiled& ops, std::string_view target) {
  const re2::StringPiece text(target.data(), target.size());
  if (ops.set) {
    thread_local std::vector<int> hits;  // a listing asks once per entry: no allocation each
    hits.clear();
    re2::RE2::Set::ErrorInfo error;
    if (ops.set->Match(text, &hits, &error)) {
      return static_cast<size_t>(*std::min_element(hits.begin(), hits.end()));
    }
    if (error.kind == re2::RE2::Set::kNoError) return ops.rules.size();
    // The automaton ran out of memory on this target: ask each rule in turn instead.
  }
  for (size_t i = 0; i < ops.rules.size(); ++i) {
    const Rule& rule = ops.rules[i];
    if (rule.glob ? rule.glob->matches(target) : RE2::FullMatch(text, *rule.re)) return i;
  }
  return ops.rules.size();
}

Ruleset::Verdict Ruleset::verdict(Operation op, std::string_view target) const {
  using By = Verdict::By;
  const OperationRules& ops = ops_[static_cast<size_t>(op)];
  const Compiled& compiled = ops.compiled();
  // only a document loaded with kOnFirstUse has rules that did not compile
  if (!compiled.status.ok()) return {By::kBrokenRules, Action::kDeny};
  if (const size_t i = firstHit(compiled, target); i < compiled.rules.size()) {
    return {By::kRule, compiled.rules[i].action, i};
  }
  if (op == Operation::kWrite || op == Operation::kEdit || judgedAsWrite(op)) {
    if (const int hit = protectedHit(target); hit >= 0) {
      return {By::kProtected, Action::kDeny, static_cast<size_t>(hit)};
    }
  }
  if (ops.fallback) return {By::kSectionDefault, *ops.fallback};
  // A ruleset opens the network, and installs, only by saying so in a section of its own.
  if (closedWithoutSection(op)) return {By::kNoSection, Action::kDeny};
  return {By::kGlobal, fallback_};
}

Action Ruleset::action(Operation op, std::string_view target) const {
  return verdict(op, target).action;
}

Decision Ruleset::decide(Operation op, std::string_view target) const {
  using By = Verdict::By;
  const Verdict v = verdict(op, target);
  const OperationRules& ops = ops_[static_cast<size_t>(op)];
  const std::string name(operationName(ops.named));
  switch (v.by) {
    case By::kBrokenRules:
      return {v.action, name + " rules: " + ops.compiled().status.message(), ""};
    case By::kRule: {
      const Rule& rule = ops.compiled().rules[v.index];
      return {v.action, name + " rule " + std::to_string(v.index + 1) + " (" + rule.text + ")",
              rule.description, rule.text};
    }
    case By::kProtected: {
      const std::string pattern(kProtectedPatterns[v.index]);
      return {v.action, "protected path (" + pattern + ")", std::string(kProtectedReason), pattern};
    }
    case By::kSectionDefault:
      return {v.action, name + " default", ""};
    case By::kNoSection:
      return {v.action, name + " (no section: denied)", ""};
    case By::kGlobal:
      break;
  }
  return {v.action, "global default", ""};
}

bool Ruleset::always(Operation op, Action action) const {
  const OperationRules& ops = ops_[static_cast<size_t>(op)];
  const Action fallback = closedWithoutSection(op) ? Action::kDeny : fallback_;
  if (ops.fallback.value_or(fallback) != action) return false;
  return std::all_of(ops.actions.begin(), ops.actions.end(),
                     [action](Action a) { return a == action; });
}

bool Ruleset::alwaysDenied(Operation op) const { return always(op, Action::kDeny); }

bool Ruleset::alwaysAllowed(Operation op) const { return always(op, Action::kAllow); }

bool Ruleset::mayAsk() const {
  for (const OperationRules& ops : ops_) {
    const Action fallback = closedWithoutSection(ops.named) ? Action::kDeny : fallback_;
    if (ops.fallback.value_or(fallback) == Action::kAsk) return true;
    if (std::find(ops.actions.begin(), ops.actions.end(), Action::kAsk) != ops.actions.end()) {
      return true;
    }
  }
  return false;
}

}  // namespace byd::permissions
