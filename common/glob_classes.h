#pragma once
// The character classes of a glob as RE2 byte regexes. Globs compile in Latin-1 mode, so that
// every byte is one character and paths need not be UTF-8; the UTF-8 structure of `?` and of
// `[...]` is rebuilt here by hand: a class of code points becomes alternatives of byte-range
// sequences (the utf8-ranges split that RE2 and Go use), and bytes that cannot begin a UTF-8
// sequence match alone, so a path with broken UTF-8 stays matchable.

#include <bitset>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace byd::glob_classes {

using ByteSet = std::bitset<256>;
using Range = std::pair<char32_t, char32_t>;

// A regex that matches nothing.
constexpr std::string_view kNothing = "[^\\x00-\\xff]";
constexpr char32_t kMaxCodePoint = 0x10FFFF;

// "\\xHH" for one byte.
std::string hexByte(unsigned b);

// One decoded pattern character: a code point, or a raw byte when the UTF-8 is invalid.
struct Decoded {
  char32_t c;
  size_t len;
  bool raw;
};
Decoded decodeAt(std::string_view s, size_t i);

// The members of a [...] class.
struct CharSet {
  ByteSet bytes;            // ASCII members, and raw bytes of invalid UTF-8 in the pattern
  std::vector<Range> wide;  // code points >= 0x80

  void add(char32_t lo, char32_t hi);
};

// Regex for one character (never '/') in `set`, or outside it when `negate`; ignore_case folds
// ASCII letters only.
std::string classRegex(const CharSet& set, bool negate, bool ignore_case);

}  // namespace byd::glob_classes
