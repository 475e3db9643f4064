#include "common/glob.h"

#include <re2/re2.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <optional>
#include <utility>
#include <vector>

#include "common/glob_classes.h"

namespace byd {
namespace {

using namespace glob_classes;

// A hostile "{{{{..." must not exhaust the stack of the recursive translator.
constexpr size_t kMaxBraceDepth = 32;
// Each `?` or class compiles to ~100 bytes of regex; this keeps compile time in milliseconds.
constexpr size_t kMaxPatternBytes = 4096;
// Patterns are compiled in Latin-1 mode so that every byte is one character: `*` then matches any
// byte string, valid UTF-8 or not. UTF-8 structure is rebuilt by hand where it matters (`?`, []).
constexpr std::string_view kAnyRun = "[\\x00-\\x2e\\x30-\\xff]*";  // any bytes but '/'
constexpr std::string_view kAnyPath = "[\\x00-\\xff]*";
constexpr std::string_view kAnyDirs = "(?:[\\x00-\\xff]*/)?";  // "**/": zero or more dirs

// Index of the ']' closing the class opened at `open`, or npos.
size_t classEnd(std::string_view p, size_t open) {
  size_t i = open + 1;
  if (i < p.size() && (p[i] == '!' || p[i] == '^')) ++i;
  if (i < p.size() && p[i] == ']') ++i;  // a leading ']' is a member
  for (; i < p.size(); ++i) {
    if (p[i] == '\\') {
      ++i;
    } else if (p[i] == ']') {
      return i;
    }
  }
  return std::string_view::npos;
}

// Index of the '}' closing the brace opened at `open`; the syntax check guarantees one exists.
size_t braceEnd(std::string_view p, size_t open) {
  int depth = 0;
  for (size_t i = open; i < p.size(); ++i) {
    if (p[i] == '\\') {
      ++i;
    } else if (p[i] == '[') {
      i = classEnd(p, i);
    } else if (p[i] == '{') {
      ++depth;
    } else if (p[i] == '}' && --depth == 0) {
      return i;
    }
  }
  return p.size();
}

class Translator {
 public:
  Translator(std::string_view body, std::string_view original, size_t offset, bool ignore_case)
      : p_(body), original_(original), offset_(offset), ignore_case_(ignore_case) {}

  Status error(std::string_view what, size_t pos) const {
    // Cut on a character boundary: the message may end up in JSON, which must stay UTF-8.
    size_t cut = std::min<size_t>(original_.size(), 100);
    while (cut < original_.size() && cut > 0 && (original_[cut] & 0xc0) == 0x80) --cut;
    std::string shown(original_.substr(0, cut));
    if (cut < original_.size()) shown += "...";
    return invalidArgument("invalid glob \"" + shown + "\": " + std::string(what) +
                           " at position " + std::to_string(pos + offset_));
  }

  Status checkSyntax() const {
    std::vector<size_t> open;
    for (size_t i = 0; i < p_.size(); ++i) {
      if (p_[i] == '\\') {
        if (++i == p_.size()) return error("trailing backslash", i - 1);
      } else if (p_[i] == '[') {
        const size_t close = classEnd(p_, i);
        if (close == std::string_view::npos) return error("unclosed '['", i);
        i = close;
      } else if (p_[i] == '{') {
        open.push_back(i);
        if (open.size() > kMaxBraceDepth) return error("braces nested too deeply", i);
      } else if (p_[i] == '}' && !open.empty()) {
        open.pop_back();
      }
    }
    if (!open.empty()) return error("unclosed '{'", open.front());
    return okStatus();
  }

  // Translates p_[b, e). `starts`/`ends`: whether b and e sit on component boundaries, which
  // decides if a `**` touching them is a whole component.
  Status translate(size_t b, size_t e, bool starts, bool ends, std::string& out) const {
    for (size_t i = b; i < e;) {
      const char c = p_[i];
      if (c == '\\') {
        literal(p_[i + 1], out);
        i += 2;
      } else if (c == '*') {
        i = star(i, b, e, starts, ends, out);
      } else if (c == '?') {
        out += classRegex(CharSet(), /*negate=*/true, ignore_case_);
        ++i;
      } else if (c == '[') {
        const size_t close = classEnd(p_, i);
        BYD_RETURN_IF_ERROR(bracket(i, close, out));
        i = close + 1;
      } else if (c == '{') {
        const size_t close = braceEnd(p_, i);
        const bool brace_starts = i == b ? starts : p_[i - 1] == '/';
        const bool brace_ends = close + 1 == e ? ends : p_[close + 1] == '/';
        BYD_RETURN_IF_ERROR(brace(i, close, brace_starts, brace_ends, out));
        i = close + 1;
      } else {
        literal(c, out);
        ++i;
      }
    }
    return okStatus();
  }

 private:
  void literal(char c, std::string& out) const {
    const auto u = static_cast<unsigned char>(c);
    if (ignore_case_ && u < 0x80 && std::isalpha(u)) {
      out += {'[', static_cast<char>(std::tolower(u)), static_cast<char>(std::toupper(u)), ']'};
    } else if (u < 0x80 && std::isalnum(u)) {
      out += c;
    } else {
      out += hexByte(u);
    }
  }

  size_t star(size_t i, size_t b, size_t e, bool starts, bool ends, std::string& out) const {
    size_t j = i;
    while (j < e && p_[j] == '*') ++j;
    const bool at_start = i == b ? starts : p_[i - 1] == '/';
    const bool at_end = j == e ? ends : p_[j] == '/';
    if (j - i < 2 || !at_start || !at_end) {
      out += kAnyRun;
      return j;
    }
    if (j < e && p_[j] == '/') {
      out += kAnyDirs;  // consumes the '/', so "**/x" also matches "x"
      return j + 1;
    }
    out += kAnyPath;
    return j;
  }

  // Reads one class member at i (escaped or not) and advances past it.
  Decoded member(size_t& i) const {
    if (p_[i] == '\\') ++i;
    const Decoded d = decodeAt(p_, i);
    i += d.len;
    return d;
  }

  Status bracket(size_t open, size_t close, std::string& out) const {
    size_t i = open + 1;
    const bool negate = p_[i] == '!' || p_[i] == '^';
    if (negate) ++i;
    CharSet set;
    while (i < close) {
      const size_t at = i;
      const Decoded lo = member(i);
      Decoded hi = lo;
      if (i + 1 < close && p_[i] == '-') {
        ++i;
        hi = member(i);
        if (lo.raw != hi.raw || lo.c > hi.c) return error("invalid range in '['", at);
      }
      if (lo.raw) {
        for (char32_t b = lo.c; b <= hi.c; ++b) set.bytes.set(b);
      } else {
        set.add(lo.c, hi.c);
      }
    }
    out += classRegex(set, negate, ignore_case_);
    return okStatus();
  }

  Status brace(size_t open, size_t close, bool starts, bool ends, std::string& out) const {
    out += "(?:";
    size_t alt = open + 1;
    int depth = 0;
    for (size_t i = open + 1; i <= close; ++i) {
      const char c = p_[i];
      if (c == '\\') {
        ++i;
      } else if (c == '[') {
        i = classEnd(p_, i);
      } else if (c == '{') {
        ++depth;
      } else if (c == '}' && depth > 0) {
        --depth;
      } else if ((c == ',' && depth == 0) || i == close) {
        BYD_RETURN_IF_ERROR(translate(alt, i, starts, ends, out));
        out += i == close ? ")" : "|";
        alt = i + 1;
      }
    }
    return okStatus();
  }

  std::string_view p_;
  std::string_view original_;
  size_t offset_;  // bytes of leading "./" dropped from original_, for error positions
  bool ignore_case_;
};

struct Span {
  size_t begin;
  size_t end;
};

// Splits at '/' outside braces and classes. Sets `crossing` when a brace holds a '/' or `**`:
// then components no longer line up with the pattern's top-level pieces.
std::vector<Span> splitComponents(std::string_view p, bool& crossing) {
  std::vector<Span> out;
  size_t begin = 0;
  int depth = 0;
  crossing = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\') {
      ++i;
    } else if (c == '[') {
      i = classEnd(p, i);
    } else if (c == '{') {
      ++depth;
    } else if (c == '}' && depth > 0) {
      --depth;
    } else if (depth > 0 && (c == '/' || (c == '*' && i + 1 < p.size() && p[i + 1] == '*'))) {
      crossing = true;
    } else if (c == '/' && depth == 0) {
      out.push_back({begin, i});
      begin = i + 1;
    }
  }
  out.push_back({begin, p.size()});
  return out;
}

// The unescaped text of a wildcard-free component, or nullopt.
std::optional<std::string> literalText(std::string_view comp) {
  std::string out;
  for (size_t i = 0; i < comp.size(); ++i) {
    if (comp[i] == '\\') {
      out += comp[++i];
    } else if (std::string_view("*?[{").find(comp[i]) != std::string_view::npos) {
      return std::nullopt;
    } else {
      out += comp[i];
    }
  }
  return out;
}

bool isGlobstar(std::string_view comp) {
  return comp.size() >= 2 && comp.find_first_not_of('*') == std::string_view::npos;
}

std::vector<std::string_view> splitPath(std::string_view path) {
  std::vector<std::string_view> out;
  while (!path.empty()) {
    const size_t slash = path.find('/');
    out.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

std::unique_ptr<const RE2> compileRegex(const std::string& regex) {
  return std::make_unique<const RE2>(regex, GlobMatcher::regexOptions());
}

}  // namespace

struct GlobMatcher::Compiled {
  struct Component {
    bool globstar = false;
    std::unique_ptr<const RE2> re;  // null for a globstar
  };

  std::string pattern;
  std::string prefix;
  std::vector<std::string> prefix_parts;
  // The literal bytes every match ends with (".txt" for "**/*.txt"), so most paths that do not
  // match are told without the regex.
  std::string suffix;
  std::unique_ptr<const RE2> full;
  // Per-component regexes for couldMatchBelow; empty when braces cross components, in which
  // case pruning falls back to the literal prefix.
  std::vector<Component> components;
};

GlobMatcher::GlobMatcher(std::shared_ptr<const Compiled> compiled)
    : compiled_(std::move(compiled)) {}

Result<GlobMatcher> GlobMatcher::compile(std::string_view pattern, bool ignore_case) {
  size_t offset = 0;
  while (pattern.substr(offset).starts_with("./")) offset += 2;
  const std::string_view body = pattern.substr(offset);
  const Translator translator(body, pattern, offset, ignore_case);
  if (body.empty())
    return invalidArgument("invalid glob \"" + std::string(pattern) + "\": empty pattern");
  if (pattern.size() > kMaxPatternBytes) {
    return translator.error("longer than " + std::to_string(kMaxPatternBytes) + " bytes", 0);
  }
  BYD_RETURN_IF_ERROR(translator.checkSyntax());

  auto c = std::make_shared<Compiled>();
  c->pattern = std::string(pattern);
  std::string regex;
  BYD_RETURN_IF_ERROR(translator.translate(0, body.size(), true, true, regex));
  c->full = compileRegex(regex);
  if (!c->full->ok()) return translator.error("too complex (" + c->full->error() + ")", 0);

  if (!ignore_case) {
    // Within the last component only: "**/x" matches "x" too, which does not end with "/x".
    size_t start = body.size();
    while (start > 0 &&
           std::string_view("*?[]{}\\/").find(body[start - 1]) == std::string_view::npos) {
      --start;
    }
    c->suffix = std::string(body.substr(start));
  }
  bool crossing = false;
  const std::vector<Span> spans = splitComponents(body, crossing);
  for (size_t k = 0; k + 1 < spans.size() && !ignore_case; ++k) {
    const auto text = literalText(body.substr(spans[k].begin, spans[k].end - spans[k].begin));
    if (!text || *text == "" || *text == "." || *text == "..") break;
    c->prefix += (k ? "/" : "") + *text;
    c->prefix_parts.push_back(*text);
  }
  for (size_t k = 0; k < spans.size() && !crossing; ++k) {
    Compiled::Component comp;
    comp.globstar = isGlobstar(body.substr(spans[k].begin, spans[k].end - spans[k].begin));
    if (!comp.globstar) {
      std::string part;
      BYD_RETURN_IF_ERROR(translator.translate(spans[k].begin, spans[k].end, true, true, part));
      comp.re = compileRegex(part);
      if (!comp.re->ok()) return translator.error("too complex (" + comp.re->error() + ")", 0);
    }
    c->components.push_back(std::move(comp));
  }
  return GlobMatcher(std::move(c));
}

bool GlobMatcher::matches(std::string_view path) const {
  if (!path.ends_with(compiled_->suffix)) return false;
  return RE2::FullMatch(re2::StringPiece(path.data(), path.size()), *compiled_->full);
}

const std::string& GlobMatcher::literalPrefix() const { return compiled_->prefix; }

const std::string& GlobMatcher::pattern() const { return compiled_->pattern; }

const std::string& GlobMatcher::regex() const { return compiled_->full->pattern(); }

RE2::Options GlobMatcher::regexOptions() {
  RE2::Options options;
  options.set_encoding(RE2::Options::EncodingLatin1);
  options.set_log_errors(false);
  return options;
}

bool GlobMatcher::couldMatchBelow(std::string_view dir) const {
  while (dir.starts_with("./")) dir.remove_prefix(2);
  while (dir.ends_with('/')) dir.remove_suffix(1);
  if (dir.empty() || dir == ".") return true;
  const std::vector<std::string_view> parts = splitPath(dir);
  const auto& comps = compiled_->components;
  if (comps.empty()) {
    // Braces span components: only the literal prefix is known for sure.
    const auto& prefix = compiled_->prefix_parts;
    for (size_t k = 0; k < std::min(parts.size(), prefix.size()); ++k) {
      if (parts[k] != prefix[k]) return false;
    }
    return true;
  }
  // A small NFA over pattern components: live[i] means the dir so far can leave components
  // i..n-1 still to match. A globstar may consume any number of dir components.
  const size_t n = comps.size();
  std::vector<char> live(n + 1, 0);
  auto closeOverGlobstars = [&](std::vector<char>& states) {
    for (size_t i = 0; i < n; ++i) {
      if (states[i] && comps[i].globstar) states[i + 1] = 1;
    }
  };
  live[0] = 1;
  closeOverGlobstars(live);
  for (std::string_view part : parts) {
    std::vector<char> next(n + 1, 0);
    const re2::StringPiece piece(part.data(), part.size());
    for (size_t i = 0; i < n; ++i) {
      if (!live[i]) continue;
      if (comps[i].globstar) {
        next[i] = 1;
      } else if (RE2::FullMatch(piece, *comps[i].re)) {
        next[i + 1] = 1;
      }
    }
    closeOverGlobstars(next);
    live.swap(next);
  }
  // A path below dir needs at least one more component of the pattern.
  return std::find(live.begin(), live.end() - 1, 1) != live.end() - 1;
}

}  // namespace byd
