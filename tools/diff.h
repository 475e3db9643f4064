#pragma once
// Unified diffs for edit_file. The edit knows exactly which bytes it replaced, so the diff is
// built from those replacements (exact and linear) rather than by searching for an alignment.
// Pure functions; safe from any thread.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace byd {

struct Replacement {
  size_t offset;          // byte offset in the old text
  size_t length;          // bytes replaced
  std::string_view text;  // what replaces them
};

// Applies replacements (sorted by offset, non-overlapping) to `old_text`.
std::string applyReplacements(std::string_view old_text, const std::vector<Replacement>& reps);

// A unified diff (`--- a/path`, `+++ b/path`, `@@` hunks with `context` lines around each
// change) from `old_text` to the result of applying `reps`. Empty when nothing changes.
std::string unifiedDiff(std::string_view path, std::string_view old_text,
                        const std::vector<Replacement>& reps, int context = 3);

}  // namespace byd
