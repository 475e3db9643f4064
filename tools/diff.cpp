#include "tools/diff.h"

#include <algorithm>

namespace byd {
namespace {

// A run of whole old lines [first_line, end_line) and the new lines that replace them.
struct Region {
  size_t first_line;  // 0-based
  size_t end_line;
  std::vector<std::string> new_lines;  // each with its '\n' when it had one
};

std::vector<size_t> lineStarts(std::string_view text) {
  std::vector<size_t> starts = {0};
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n' && i + 1 < text.size()) starts.push_back(i + 1);
  }
  return starts;
}

std::vector<std::string> splitLines(std::string_view text) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
    lines.emplace_back(text.substr(pos, end - pos));
    pos = end;
  }
  return lines;
}

size_t lineOf(const std::vector<size_t>& starts, size_t offset) {
  return std::upper_bound(starts.begin(), starts.end(), offset) - starts.begin() - 1;
}

// Groups replacements that touch the same or adjacent lines into regions of whole lines.
// The last line touched by a replacement.
size_t lastLineOf(std::string_view old_text, const std::vector<size_t>& starts,
                  const Replacement& r) {
  const size_t last_byte = r.offset + (r.length ? r.length - 1 : 0);
  return lineOf(starts, std::min(last_byte, old_text.size() - 1));
}

// Groups replacements that touch the same or adjacent lines into regions of whole lines. A
// region whose new text no longer ends in '\n' has joined the next line, so it takes that
// line (and any replacements in it) too. `old_text` is never empty: something was replaced.
std::vector<Region> buildRegions(std::string_view old_text, const std::vector<size_t>& starts,
                                 const std::vector<Replacement>& reps) {
  std::vector<Region> regions;
  size_t i = 0;
  while (i < reps.size()) {
    const size_t first = lineOf(starts, reps[i].offset);
    size_t last = lastLineOf(old_text, starts, reps[i]);
    size_t j = i + 1;
    std::string replaced;
    while (true) {
      while (j < reps.size() && lineOf(starts, reps[j].offset) <= last) {
        last = std::max(last, lastLineOf(old_text, starts, reps[j]));
        ++j;
      }
      const size_t begin = starts[first];
      const size_t end = last + 1 < starts.size() ? starts[last + 1] : old_text.size();
      std::vector<Replacement> local;
      for (size_t k = i; k < j; ++k) {
        local.push_back({reps[k].offset - begin, reps[k].length, reps[k].text});
      }
      replaced = applyReplacements(old_text.substr(begin, end - begin), local);
      if (end == old_text.size() || (!replaced.empty() && replaced.back() == '\n') ||
          replaced.empty()) {
        break;
      }
      ++last;
    }
    regions.push_back({first, last + 1, splitLines(replaced)});
    i = j;
  }
  return regions;
}

void appendLine(std::string& out, char sign, std::string_view line) {
  out += sign;
  if (!line.empty() && line.back() == '\n') {
    out.append(line);
  } else {
    out.append(line).append("\n\\ No newline at end of file\n");
  }
}

std::string hunkHeader(size_t old_start, size_t old_count, size_t new_start, size_t new_count) {
  // A side with no lines names the line before the hunk, as diff(1) does.
  auto range = [](size_t start, size_t count) {
    return std::to_string(count == 0 ? start - 1 : start) + "," + std::to_string(count);
  };
  return "@@ -" + range(old_start, old_count) + " +" + range(new_start, new_count) + " @@\n";
}

}  // namespace

std::string applyReplacements(std::string_view old_text, const std::vector<Replacement>& reps) {
  std::string out;
  size_t pos = 0;
  for (const Replacement& r : reps) {
    out.append(old_text.substr(pos, r.offset - pos));
    out.append(r.text);
    pos = r.offset + r.length;
  }
  out.append(old_text.substr(pos));
  return out;
}

std::string unifiedDiff(std::string_view path, std::string_view old_text,
                        const std::vector<Replacement>& reps, int context) {
  if (reps.empty()) return "";
  const std::vector<std::string> old_lines = splitLines(old_text);
  const std::vector<size_t> starts = lineStarts(old_text);
  const std::vector<Region> regions = buildRegions(old_text, starts, reps);
  const size_t ctx = static_cast<size_t>(std::max(context, 0));

  std::string out = "--- a/" + std::string(path) + "\n+++ b/" + std::string(path) + "\n";
  long delta = 0;  // new line number minus old line number before the current region
  size_t r = 0;
  while (r < regions.size()) {
    // Merge regions whose context would overlap into one hunk.
    size_t last = r;
    while (last + 1 < regions.size() &&
           regions[last + 1].first_line <= regions[last].end_line + 2 * ctx) {
      ++last;
    }
    const size_t hunk_begin = regions[r].first_line > ctx ? regions[r].first_line - ctx : 0;
    const size_t hunk_end = std::min(old_lines.size(), regions[last].end_line + ctx);
    std::string body;
    size_t old_count = 0, new_count = 0;
    const long delta_before = delta;
    size_t line = hunk_begin;
    for (size_t k = r; k <= last; ++k) {
      for (; line < regions[k].first_line; ++line, ++old_count, ++new_count) {
        appendLine(body, ' ', old_lines[line]);
      }
      for (; line < regions[k].end_line; ++line, ++old_count)
        appendLine(body, '-', old_lines[line]);
      for (const std::string& l : regions[k].new_lines) appendLine(body, '+', l), ++new_count;
      delta += static_cast<long>(regions[k].new_lines.size()) -
               static_cast<long>(regions[k].end_line - regions[k].first_line);
    }
    for (; line < hunk_end; ++line, ++old_count, ++new_count)
      appendLine(body, ' ', old_lines[line]);
    out += hunkHeader(hunk_begin + 1, old_count, hunk_begin + 1 + delta_before, new_count);
    out += body;
    r = last + 1;
  }
  return out;
}

}  // namespace byd
