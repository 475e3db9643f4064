// grep: RE2 search over the workspace, files searched in parallel, output sorted by path.

#include <re2/re2.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>

#include "common/glob.h"
#include "common/text.h"
#include "tools/tool.h"
#include "tools/walk.h"

namespace byd {
namespace {

constexpr size_t kSniffBytes = 8192;
constexpr size_t kStreamChunk = 256 << 10;
constexpr size_t kMaxShownLineBytes = 2000;
constexpr uint64_t kMaxFileBytes = uint64_t{1} << 30;  // larger files are skipped, and said so

enum class Mode { kFiles, kContent, kCount };

// Finds a fixed string by scanning (with memchr, which is vectorized) for its rarest byte and
// comparing around each hit: glibc's memmem is byte-at-a-time, several times slower.
class LiteralFinder {
 public:
  static constexpr size_t kMaxRareByteNeedle = 64;

  explicit LiteralFinder(std::string needle) : needle_(std::move(needle)) {
    // Bytes ordered from most to least common in source code and prose; others count as rare.
    static constexpr std::string_view kCommon =
        " etaoinsrlhdcumpfgybwvk\n\t_.,()=;:\"'-/"
        "xjqz0123456789ETAOISRNLCDPMUFHGBWYVKXJQZ{}[]<>*#+!&|\\";
    for (size_t i = 0; i < needle_.size(); ++i) {
      if (rank(needle_[i], kCommon) > rank(needle_[rare_], kCommon)) rare_ = i;
    }
  }

  size_t find(std::string_view hay, size_t pos) const {
    const size_t n = needle_.size();
    if (hay.size() < n || pos > hay.size() - n) return std::string_view::npos;
    if (n > kMaxRareByteNeedle) {
      // glibc's memmem (two-way) is linear for long needles, where comparing at every hit of
      // one byte could cost needle-length work per byte of text.
      const void* hit = memmem(hay.data() + pos, hay.size() - pos, needle_.data(), n);
      return hit ? static_cast<const char*>(hit) - hay.data() : std::string_view::npos;
    }
    const char* p = hay.data() + pos + rare_;
    const char* end = hay.data() + hay.size() - n + rare_ + 1;  // past the last place it can be
    while (p < end) {
      p = static_cast<const char*>(memchr(p, needle_[rare_], end - p));
      if (p == nullptr) return std::string_view::npos;
      const char* start = p - rare_;
      if (memcmp(start, needle_.data(), n) == 0) return start - hay.data();
      ++p;
    }
    return std::string_view::npos;
  }

 private:
  static size_t rank(char c, std::string_view common) {
    const size_t at = common.find(c);
    return at == std::string_view::npos ? common.size() : at;
  }

  std::string needle_;
  size_t rare_ = 0;
};

struct Query {
  std::unique_ptr<RE2> re;
  std::optional<LiteralFinder> literal;  // set when the pattern is a plain case-sensitive string
  Mode mode = Mode::kFiles;
  int context = 0;
  size_t max_results = 0;
};

struct Line {
  size_t number;
  std::string text;
  bool match;
};

struct FileResult {
  size_t matches = 0;
  std::vector<Line> lines;  // content mode: matches and their context, in order
  bool binary = false;
  bool too_big = false;
  bool capped = false;  // more matching lines than were kept
};

// Whether `pattern` names a line break itself (a newline byte, \n, \x0a, \x{a}): grep matches
// one line at a time, so such a pattern could never match. Character classes (\s, [^a]) may
// name one among others; they simply match within lines.
bool namesALineBreak(std::string_view pattern) {
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '\n') return true;
    if (pattern[i] != '\\' || i + 1 >= pattern.size()) continue;
    const char e = pattern[++i];
    if (e == 'n') return true;
    if (e != 'x') continue;
    std::string_view hex = pattern.substr(i + 1);
    if (hex.starts_with('{')) {
      hex = hex.substr(1, hex.find('}') == std::string_view::npos ? 0 : hex.find('}') - 1);
      while (hex.size() > 1 && hex.front() == '0') hex.remove_prefix(1);
    } else {
      hex = hex.substr(0, 2);
    }
    if (hex == "a" || hex == "A" || hex == "0a" || hex == "0A") return true;
  }
  return false;
}

Result<Query> compileQuery(const json& args, const Limits& limits) {
  Query q;
  const std::string pattern = argString(args, "pattern");
  if (namesALineBreak(pattern)) {
    return invalidArgument(
        "the pattern names a line break (\\n), but grep matches one line at a time, so it "
        "could never match: search for one of its lines (and read_file around the hits), or "
        "use execute with a multiline tool (rg -U, grep -Pzo)");
  }
  const bool ignore_case = argBool(args, "ignore_case");
  RE2::Options options;
  options.set_log_errors(false);
  options.set_case_sensitive(!ignore_case);
  options.set_never_nl(true);  // a match never spans lines, as in grep and ripgrep
  options.set_max_mem(64 << 20);
  q.re = std::make_unique<RE2>("(?m)" + pattern, options);
  if (!q.re->ok()) {
    // Report RE2's words about the pattern as the user wrote it, not our "(?m)" prefix.
    RE2 plain(pattern, options);
    return invalidArgument("invalid regular expression '" + pattern +
                           "': " + (plain.ok() ? q.re->error() : plain.error()));
  }
  if (!ignore_case && RE2::QuoteMeta(pattern) == pattern && !pattern.empty()) {
    q.literal.emplace(pattern);
  }
  const std::string mode = argString(args, "output_mode", "files_with_matches");
  q.mode = mode == "content" ? Mode::kContent : mode == "count" ? Mode::kCount : Mode::kFiles;
  q.context = static_cast<int>(argInt(args, "context", 0));
  // The operator's --max-results is a ceiling the client cannot raise.
  q.max_results = std::min(static_cast<size_t>(argInt(args, "max_results", limits.max_results)),
                           limits.max_results);
  return q;
}

// Start of the next match at or after `pos`, with the match's line bounds; false if none.
bool nextMatch(const Query& q, std::string_view text, size_t pos, size_t* line_begin,
               size_t* line_end) {
  size_t at;
  if (q.literal) {
    at = q.literal->find(text, pos);
    if (at == std::string_view::npos) return false;
  } else {
    re2::StringPiece m;
    if (!q.re->Match(text, pos, text.size(), RE2::UNANCHORED, &m, 1)) return false;
    at = m.data() - text.data();
  }
  const size_t nl_before = at == 0 ? std::string_view::npos : text.rfind('\n', at - 1);
  *line_begin = nl_before == std::string_view::npos ? 0 : nl_before + 1;
  const size_t nl = text.find('\n', at);
  *line_end = nl == std::string_view::npos ? text.size() : nl;
  return true;
}

// Calls on_line(number, line) for every line of `text` with a match; lines are numbered from
// `first_line` (only when q.mode needs numbers; otherwise they are 0). Stops early when on_line
// returns false. Returns the number of '\n' in `text` (0 when line numbers are not needed, or
// when it stopped early).
template <typename OnLine>
size_t scanLines(const Query& q, std::string_view text, size_t first_line, OnLine&& on_line) {
  if (text.empty()) return 0;
  // Search without the final '\n': past it there is no line, but `^$` would match there.
  const bool final_newline = text.back() == '\n';
  const std::string_view body = final_newline ? text.substr(0, text.size() - 1) : text;
  // Counting newlines costs more than finding a literal: do it only for content mode.
  const bool numbered = q.mode == Mode::kContent;
  size_t pos = 0, line_no = numbered ? first_line : 0, counted_to = 0, begin, end;
  while (pos <= body.size() && nextMatch(q, body, pos, &begin, &end)) {
    if (numbered) line_no += std::count(body.begin() + counted_to, body.begin() + begin, '\n');
    counted_to = begin;
    if (!on_line(line_no, body.substr(begin, end - begin))) return 0;
    pos = end + 1;
  }
  if (!numbered) return 0;
  return line_no - first_line + std::count(body.begin() + counted_to, body.end(), '\n') +
         (final_newline ? 1 : 0);
}

std::string shownLine(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::string out = repairUtf8(utf8Truncate(line, kMaxShownLineBytes));
  if (line.size() > kMaxShownLineBytes) out += " [... line cut]";
  return out;
}

// Adds `context` lines before and after each match line (merging overlaps).
void addContext(std::string_view text, int context, std::vector<Line>& lines) {
  if (context <= 0 || lines.empty()) return;
  std::vector<size_t> starts = {0};
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n' && i + 1 < text.size()) starts.push_back(i + 1);
  }
  auto lineText = [&](size_t n) {  // n is 1-based, without its '\n'
    size_t b = starts[n - 1];
    size_t e = n < starts.size() ? starts[n] - 1 : text.size();
    if (e > b && text[e - 1] == '\n') --e;  // the last line of a file that ends in '\n'
    return text.substr(b, e - b);
  };
  std::vector<Line> out;
  size_t next_free = 1;  // first line number not yet emitted
  for (size_t i = 0; i < lines.size(); ++i) {
    const size_t n = lines[i].number;
    size_t from = n > static_cast<size_t>(context) ? n - context : 1;
    for (size_t k = std::max(from, next_free); k < n; ++k) {
      out.push_back({k, shownLine(lineText(k)), false});
    }
    out.push_back(std::move(lines[i]));
    next_free = n + 1;
    const size_t limit = std::min(starts.size(), n + context);
    const size_t stop = i + 1 < lines.size() ? std::min(limit, lines[i + 1].number - 1) : limit;
    for (size_t k = next_free; k <= stop; ++k) out.push_back({k, shownLine(lineText(k)), false});
    next_free = std::max(next_free, stop + 1);
  }
  lines = std::move(out);
}

// Feeds `on_line` every matching line of a file, streaming it in chunks so memory stays flat
// however large the file is. A line cut by a chunk edge is completed from the next chunk.
template <typename OnLine>
Status streamMatches(const Query& q, const Backend& backend, const std::string& key,
                     const CancelToken& cancel, FileResult& r, OnLine&& on_line) {
  std::string carry;  // the unfinished last line of the previous chunk
  size_t line_no = 1;
  bool first = true, keep_going = true;
  auto scan = [&](std::string_view lines) {
    line_no += scanLines(q, lines, line_no,
                         [&](size_t n, std::string_view l) { return keep_going = on_line(n, l); });
  };
  Status s = backend.readStream(key, kStreamChunk, [&](std::string_view chunk) {
    if (cancel.cancelled()) return false;
    if (first && chunk.substr(0, kSniffBytes).find('\0') != std::string_view::npos) {
      r.binary = true;
      return false;
    }
    first = false;
    if (!carry.empty()) {
      const size_t nl = chunk.find('\n');
      carry.append(chunk.substr(0, nl == std::string_view::npos ? chunk.size() : nl + 1));
      if (nl == std::string_view::npos) return true;
      scan(carry);
      carry.clear();
      chunk.remove_prefix(nl + 1);
    }
    const size_t last_nl = chunk.rfind('\n');
    const size_t whole = last_nl == std::string_view::npos ? 0 : last_nl + 1;
    if (keep_going && whole > 0) scan(chunk.substr(0, whole));
    carry.assign(chunk.substr(whole));
    return keep_going;
  });
  if (s.ok() && keep_going && !r.binary && !carry.empty()) scan(carry);
  return s;
}

FileResult searchFile(const Query& q, ToolContext& ctx, const std::string& key, uint64_t size) {
  FileResult r;
  const Backend& backend = ctx.backend;
  const bool whole = q.mode == Mode::kContent && q.context > 0;
  if (size > (whole ? ctx.limits.max_read_bytes : kMaxFileBytes)) {
    r.too_big = true;
    return r;
  }
  if (whole) {
    // Context needs the neighbouring lines: read the file whole (up to the read limit).
    auto data = backend.read(key, 0, ctx.limits.max_read_bytes);
    if (!data.ok()) return r;
    if (std::string_view(*data).substr(0, kSniffBytes).find('\0') != std::string_view::npos) {
      r.binary = true;
      return r;
    }
    scanLines(q, *data, 1, [&](size_t n, std::string_view line) {
      if (r.matches++ < q.max_results) {
        r.lines.push_back({n, shownLine(line), true});
      } else {
        r.capped = true;
      }
      return true;
    });
    addContext(*data, q.context, r.lines);
    return r;
  }
  Status s = streamMatches(q, backend, key, ctx.cancel, r, [&](size_t n, std::string_view line) {
    ++r.matches;
    if (q.mode == Mode::kContent && r.lines.size() < q.max_results) {
      r.lines.push_back({n, shownLine(line), true});
    } else if (q.mode == Mode::kContent) {
      r.capped = true;
    }
    return q.mode != Mode::kFiles;  // one match is enough to list the file
  });
  if (!s.ok()) r = FileResult{};
  return r;
}

struct Candidate {
  std::string key;
  uint64_t size;
};

Result<std::vector<Candidate>> collectFiles(const json& args, ToolContext& ctx,
                                            const std::string& base, const FileInfo& base_info) {
  std::vector<Candidate> files;
  if (base_info.type == FileType::kFile) {
    files.push_back({base, base_info.size});
    return files;
  }
  if (base_info.type != FileType::kDir) return invalidArgument("'" + base + "' is not searchable");
  std::optional<GlobMatcher> include;
  const std::string include_pattern = argString(args, "include");
  if (!include_pattern.empty()) {
    BYD_ASSIGN_OR_RETURN(include, GlobMatcher::compile(include_pattern));
  }
  // As in ripgrep, a glob without '/' matches the file name at any depth.
  const bool by_name = include_pattern.find('/') == std::string::npos;
  auto included = [&](std::string_view name, const std::string& rel) {
    return !include || include->matches(by_name ? name : std::string_view(rel));
  };
  WalkOptions options;
  // Sizes are read for the files searched alone.
  options.detail = [&](const std::string& rel, FileType type) {
    return type == FileType::kFile &&
           included(std::string_view(rel).substr(rel.rfind('/') + 1), rel);
  };
  BYD_RETURN_IF_ERROR(
      walkTree(ctx.backend, base, options, ctx.cancel,
               [&](const std::string& key, const std::string& rel, const FileInfo& info) {
                 // Symlinks are not followed, as in ripgrep: a link cannot pull outside files in.
                 if (info.type != FileType::kFile) return true;
                 if (!included(info.name, rel)) return true;
                 files.push_back({key, info.size});
                 return true;
               }));
  std::sort(files.begin(), files.end(),
            [](const Candidate& a, const Candidate& b) { return a.key < b.key; });
  return files;
}

// Searches every candidate, spread over the machine's cores.
std::vector<FileResult> searchAll(const Query& q, ToolContext& ctx,
                                  const std::vector<Candidate>& files) {
  std::vector<FileResult> results(files.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < files.size(); i = next++) {
      if (ctx.cancel.cancelled()) return;
      // An exception must not escape a thread (that would end the process); the file is
      // reported as unreadable instead.
      try {
        results[i] = searchFile(q, ctx, files[i].key, files[i].size);
      } catch (const std::exception&) {
        results[i] = FileResult{};
      }
    }
  };
  const size_t threads =
      std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), files.size());
  {
    std::vector<std::jthread> pool;
    for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
  }
  return results;
}

struct Summary {
  size_t files_matched = 0, total_matches = 0, binary = 0, too_big = 0;
  bool truncated = false;
};

// `structured`: whether the items go into structuredContent too (else the text alone).
ToolOutput render(const Query& q, const std::vector<Candidate>& files,
                  const std::vector<FileResult>& results, bool structured) {
  ToolOutput out;
  Summary s;
  json items = json::array();
  size_t emitted = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    const FileResult& r = results[i];
    s.binary += r.binary;
    s.too_big += r.too_big;
    if (r.matches == 0) continue;
    ++s.files_matched;
    s.total_matches += r.matches;
    const std::string& path = files[i].key;
    if (q.mode != Mode::kContent) {
      if (emitted == q.max_results) {
        s.truncated = true;
        continue;
      }
      ++emitted;
      if (q.mode == Mode::kFiles) {
        out.text += path + "\n";
        if (structured) items.push_back(path);
      } else {
        out.text += path + ":" + std::to_string(r.matches) + "\n";
        if (structured) items.push_back({{"path", path}, {"count", r.matches}});
      }
      continue;
    }
    size_t prev = 0;
    for (const Line& line : r.lines) {
      if (line.match && emitted == q.max_results) {
        s.truncated = true;
        break;
      }
      if (q.context > 0 && prev != 0 && line.number > prev + 1) out.text += "--\n";
      if (q.context > 0 && prev == 0 && !out.text.empty()) out.text += "--\n";
      prev = line.number;
      out.text += path + (line.match ? ":" : "-") + std::to_string(line.number) +
                  (line.match ? ":" : "-") + line.text + "\n";
      if (line.match) ++emitted;
      if (!structured) continue;
      items.push_back(
          {{"path", path}, {"line", line.number}, {"text", line.text}, {"match", line.match}});
    }
    if (r.capped) s.truncated = true;
  }
  if (s.files_matched == 0) out.text = "No matches.\n";
  if (s.truncated) {
    out.text += "[results stop at max_results=" + std::to_string(q.max_results) + "; " +
                std::to_string(s.total_matches) + " matches in " + std::to_string(s.files_matched) +
                " files in all]\n";
  }
  if (s.binary > 0) out.text += "[" + std::to_string(s.binary) + " binary file(s) skipped]\n";
  if (s.too_big > 0) {
    out.text += "[" + std::to_string(s.too_big) + " file(s) skipped as too large" +
                (q.mode == Mode::kContent && q.context > 0 ? " for context lines" : "") + "]\n";
  }
  const char* field = q.mode == Mode::kFiles   ? "files"
                      : q.mode == Mode::kCount ? "counts"
                                               : "matches";
  out.structured = {{field, std::move(items)},          {"files_matched", s.files_matched},
                    {"total_matches", s.total_matches}, {"files_searched", files.size()},
                    {"binary_skipped", s.binary},       {"truncated", s.truncated}};
  return out;
}

Result<ToolOutput> runGrep(const json& args, ToolContext& ctx) {
  BYD_ASSIGN_OR_RETURN(Query query, compileQuery(args, ctx.limits));
  BYD_ASSIGN_OR_RETURN(std::string base, ctx.backend.normalize(argString(args, "path", ".")));
  BYD_ASSIGN_OR_RETURN(FileInfo base_info, ctx.backend.stat(base));
  BYD_ASSIGN_OR_RETURN(std::vector<Candidate> files, collectFiles(args, ctx, base, base_info));
  std::vector<FileResult> results = searchAll(query, ctx, files);
  if (ctx.cancel.cancelled()) return cancelled("cancelled");
  ToolOutput out = render(query, files, results, ctx.structured);
  out.text += hiddenNote(ctx, out.structured);
  return out;
}

constexpr ArgumentAlias kGrepAliases[] = {
    {"glob", "include"},
    {"-i", "ignore_case"},
    {"-C", "context"},
    {"head_limit", "max_results"},
    {"-n", kIgnored},  // content lines always carry their numbers
    {"-A", "", "grep shows as many lines after a match as before it: use context"},
    {"-B", "", "grep shows as many lines before a match as after it: use context"},
    {"type", "", "name the files with include instead (include \"*.py\" for type py)"},
};

}  // namespace

extern const ToolSpec kGrepTool = {
    .name = "grep",
    .operation = "grep",
    .title = "Search file contents",
    .description =
        "Search file contents with a regular expression (RE2 syntax: like PCRE without "
        "backreferences or lookaround; always linear time). output_mode: files_with_matches "
        "(default, the paths), content (matching lines as path:line:text, with `context` lines "
        "around them) or count (matching lines per file, like grep -c). `include` filters files by "
        "glob (`*.py` "
        "matches the name at any depth, `src/**/*.ts` the path). Binary files and .git are "
        "skipped; results are sorted by path and line and stop at max_results.",
    .read_only = true,
    .destructive = false,
    .idempotent = true,
    .handler = runGrep,
    .aliases = kGrepAliases,
};

}  // namespace byd
