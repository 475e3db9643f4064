#pragma once
// Small text utilities shared by the tools and backends: UTF-8 checking and repair, base64,
// and timestamps. Pure functions; safe from any thread.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace byd {

// Length of the valid UTF-8 sequence that starts at s[i] (1 for ASCII), or 0 if none does.
size_t utf8SequenceLength(std::string_view s, size_t i);
// Length of the longest prefix of `s` that is valid UTF-8 (== s.size() when all of it is).
size_t validUtf8Prefix(std::string_view s);
bool isValidUtf8(std::string_view s);
// Copies `s`, replacing each invalid byte sequence with U+FFFD. Sets *replaced when it did.
std::string repairUtf8(std::string_view s, bool* replaced = nullptr);
// The same in place, without a copy when `s` is valid already. True when it replaced any.
bool repairUtf8InPlace(std::string& s);
// Cuts `s` to at most `max_bytes` without splitting a UTF-8 sequence.
std::string_view utf8Truncate(std::string_view s, size_t max_bytes);

std::string base64Encode(std::string_view data);
Result<std::string> base64Decode(std::string_view text);

// "2026-11-29T09:38:51Z" (UTC, whole seconds).
std::string isoTime(int64_t unix_ns);
constexpr size_t kIsoTimeChars = 20;
// The same into `out`, without an allocation (the string is longer than a short string's).
void isoTimeTo(int64_t unix_ns, char (&out)[kIsoTimeChars]);

// The parts of `list` between `separator`s, empty ones left out ("a,,b" -> {"a", "b"}).
std::vector<std::string> splitList(std::string_view list, char separator);
// `bytes` bytes from the kernel's random source, as lowercase hex (secret enough for ids and
// nonces; waits for the entropy pool to be initialised).
std::string randomHex(size_t bytes);
// The first line of a file without its line end and trailing blanks (a token, a namespace);
// nullopt when the file cannot be read.
std::optional<std::string> firstLineOf(const std::string& path);
// Human size: "512 B", "3.4 KiB", "51.2 MiB".
std::string humanSize(uint64_t bytes);
// Whether `name` may name a tenant, a session or a runtime (and so a directory and a
// container): kPlainNameRule.
bool plainName(std::string_view name);
inline constexpr std::string_view kPlainNameRule =
    "1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit";

// The items (strings or string views) joined by ", ".
template <typename Range>
std::string joinComma(const Range& items) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

}  // namespace byd
