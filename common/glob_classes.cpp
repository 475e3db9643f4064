#include "common/glob_classes.h"

#include <algorithm>
#include <cstdio>

namespace byd::glob_classes {
namespace {

// Writes `set` as one RE2 class, or "" when it is empty.
std::string byteClass(const ByteSet& set) {
  std::string out;
  for (unsigned b = 0; b < 256; ++b) {
    if (!set[b]) continue;
    unsigned e = b;
    while (e + 1 < 256 && set[e + 1]) ++e;
    out += hexByte(b);
    if (e > b) out += "-" + hexByte(e);
    b = e;
  }
  return out.empty() ? out : "[" + out + "]";
}

std::string byteRange(unsigned lo, unsigned hi) {
  ByteSet set;
  for (unsigned b = lo; b <= hi; ++b) set.set(b);
  return byteClass(set);
}

int utf8Length(char32_t c) { return c <= 0x7f ? 1 : c <= 0x7ff ? 2 : c <= 0xffff ? 3 : 4; }

std::string encodeUtf8(char32_t c) {
  const int n = utf8Length(c);
  static constexpr unsigned kLead[] = {0, 0, 0xc0, 0xe0, 0xf0};
  std::string out(n, '\0');
  for (int k = n - 1; k > 0; --k, c >>= 6) out[k] = static_cast<char>(0x80 | (c & 0x3f));
  out[0] = static_cast<char>(kLead[n] | c);
  return out;
}

// Appends one byte-class sequence per slice of [lo, hi] (all >= 0x80) whose encodings vary
// independently in each byte: the classic utf8-ranges split used by RE2 and Go.
void appendUtf8Ranges(char32_t lo, char32_t hi, std::vector<std::string>& out) {
  for (char32_t limit : {char32_t{0x7ff}, char32_t{0xffff}}) {
    if (lo <= limit && hi > limit) {
      appendUtf8Ranges(lo, limit, out);
      appendUtf8Ranges(limit + 1, hi, out);
      return;
    }
  }
  const int n = utf8Length(lo);
  for (int i = 1; i < n; ++i) {
    const char32_t m = (char32_t{1} << (6 * i)) - 1;
    if ((lo & ~m) == (hi & ~m)) continue;
    if ((lo & m) != 0) {
      appendUtf8Ranges(lo, lo | m, out);
      appendUtf8Ranges((lo | m) + 1, hi, out);
      return;
    }
    if ((hi & m) != m) {
      appendUtf8Ranges(lo, (hi & ~m) - 1, out);
      appendUtf8Ranges(hi & ~m, hi, out);
      return;
    }
  }
  const std::string a = encodeUtf8(lo), b = encodeUtf8(hi);
  std::string seq;
  for (int k = 0; k < n; ++k) {
    seq += byteRange(static_cast<unsigned char>(a[k]), static_cast<unsigned char>(b[k]));
  }
  out.push_back(std::move(seq));
}

// Bytes that can never begin a valid UTF-8 sequence; `?` matches them alone so that a path with
// broken UTF-8 is still matchable, without letting "??" split a valid two-byte character.
ByteSet strayBytes() {
  ByteSet set;
  for (unsigned b = 0x80; b <= 0xc1; ++b) set.set(b);
  for (unsigned b = 0xf5; b <= 0xff; ++b) set.set(b);
  return set;
}

std::vector<Range> complement(std::vector<Range> ranges) {
  std::sort(ranges.begin(), ranges.end());
  std::vector<Range> out;
  char32_t next = 0x80;
  for (const auto& [lo, hi] : ranges) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = std::max<char32_t>(next, hi + 1);
  }
  if (next <= kMaxCodePoint) out.emplace_back(next, kMaxCodePoint);
  return out;
}

void foldAscii(ByteSet& set) {
  for (unsigned c = 'a'; c <= 'z'; ++c) {
    if (set[c] || set[c - 32]) set.set(c).set(c - 32);
  }
}

}  // namespace

std::string hexByte(unsigned b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", b & 0xffu);
  return buf;
}

Decoded decodeAt(std::string_view s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return {b0, 1, false};
  const size_t n = b0 >= 0xc2 && b0 <= 0xdf   ? 2
                   : b0 >= 0xe0 && b0 <= 0xef ? 3
                   : b0 >= 0xf0 && b0 <= 0xf4 ? 4
                                              : 0;
  if (n == 0 || i + n > s.size()) return {b0, 1, true};
  char32_t c = b0 & (0x7f >> n);
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xc0) != 0x80) return {b0, 1, true};
    c = (c << 6) | (b & 0x3f);
  }
  if (utf8Length(c) != static_cast<int>(n) || c > kMaxCodePoint) return {b0, 1, true};
  return {c, n, false};
}

void CharSet::add(char32_t lo, char32_t hi) {
  for (char32_t c = lo; c <= std::min<char32_t>(hi, 0x7f); ++c) bytes.set(c);
  if (hi >= 0x80) wide.emplace_back(std::max<char32_t>(lo, 0x80), hi);
}

// Regex for one character (never '/') in `set`, or outside it when `negate`.
std::string classRegex(const CharSet& set, bool negate, bool ignore_case) {
  ByteSet members = set.bytes;
  if (ignore_case) foldAscii(members);
  ByteSet bytes = members;
  std::vector<Range> wide = set.wide;
  if (negate) {
    const ByteSet stray = strayBytes();
    for (unsigned b = 0; b < 256; ++b) bytes[b] = (b < 0x80 || stray[b]) && !members[b];
    wide = complement(std::move(wide));
  }
  bytes.reset('/');
  std::vector<std::string> alts;
  if (std::string c = byteClass(bytes); !c.empty()) alts.push_back(std::move(c));
  for (const auto& [lo, hi] : wide) appendUtf8Ranges(lo, hi, alts);
  if (alts.empty()) return std::string(kNothing);
  if (alts.size() == 1) return alts[0];
  std::string out = "(?:";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? "|" : "") + alts[i];
  return out + ")";
}

}  // namespace byd::glob_classes
