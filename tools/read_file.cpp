// read_file: numbered lines of a text file (like `cat -n`), images as MCP image content.

#include <algorithm>
#include <charconv>
#include <cstring>
#include <functional>
#include <optional>

#include "common/text.h"
#include "tools/tool.h"

namespace byd {
namespace {

constexpr size_t kMaxLineBytes = 2000;
// A text file is read in chunks of this size into one buffer, so a 1 MiB read holds its two
// texts and a quarter of a MiB more, not a second copy of the file.
constexpr size_t kChunkBytes = 256 << 10;
constexpr size_t kSniffBytes = 8192;

std::string_view imageMimeType(std::string_view head) {
  if (head.starts_with("\x89PNG\r\n\x1a\n")) return "image/png";
  if (head.starts_with("\xFF\xD8\xFF")) return "image/jpeg";
  if (head.starts_with("GIF87a") || head.starts_with("GIF89a")) return "image/gif";
  if (head.size() >= 12 && head.starts_with("RIFF") && head.substr(8, 4) == "WEBP") {
    return "image/webp";
  }
  return {};
}

// Collects lines [first, first + limit) of a file fed to it in chunks, and counts the rest.
class LineWindow {
 public:
  // `skip`: the bytes of each line before the shown part (column - 1).
  LineWindow(int64_t first, int64_t limit, size_t max_text, size_t skip = 0)
      : first_(first), last_(first + limit - 1), max_text_(max_text), skip_(skip) {}

  // Room for `bytes` of the file with their line numbers, so the texts are not grown step by
  // step (a doubling would hold the old and the new buffer at once).
  void reserve(uint64_t bytes) {
    reserved_ = true;
    numbered_.reserve(std::min<uint64_t>(max_text_, bytes + bytes / 8 + 64));
    raw_.reserve(std::min<uint64_t>(max_text_, bytes + 1));
  }
  void feed(std::string_view chunk) {
    if (!reserved_) reserve(chunk.size());
    size_t i = 0;
    while (i < chunk.size()) {
      const char* nl = static_cast<const char*>(memchr(chunk.data() + i, '\n', chunk.size() - i));
      const size_t end = nl ? nl - chunk.data() : chunk.size();
      if (collecting()) append(chunk.substr(i, end - i));
      if (!nl) break;
      endLine();
      i = end + 1;
    }
    pending_ = chunk.empty() ? pending_ : chunk.back() != '\n';
  }
  void finish() {
    if (pending_) endLine();
  }

  int64_t totalLines() const { return line_ - 1; }
  int64_t lastShown() const { return first_ + static_cast<int64_t>(shown_) - 1; }
  size_t shown() const { return shown_; }
  bool outputFull() const { return full_; }
  std::string& numbered() { return numbered_; }
  std::string& raw() { return raw_; }
  size_t cutLines() const { return cut_lines_; }

 private:
  bool collecting() const { return line_ >= first_ && line_ <= last_ && !full_; }
  void append(std::string_view part) {
    const size_t at = line_bytes_;  // where `part` starts in the line
    line_bytes_ += part.size();
    if (line_bytes_ <= skip_) return;
    if (at < skip_) part.remove_prefix(skip_ - at);
    if (current_.size() < kMaxLineBytes + 4) {
      current_.append(part.substr(0, kMaxLineBytes + 4 - current_.size()));
    }
  }
  void endLine() {
    if (collecting()) emit();
    ++line_;
    current_.clear();
    line_bytes_ = 0;
  }
  void emit() {
    std::string_view text = current_;
    size_t bytes = line_bytes_;  // the whole line's
    if (!text.empty() && text.back() == '\r' && bytes == skip_ + text.size()) {
      text.remove_suffix(1);
      --bytes;
    }
    const std::string_view line = utf8Truncate(text, kMaxLineBytes);
    // "%6d\t" as cat -n writes it, then the line, a note if it was cut, and its newline.
    char number[24];
    const size_t digits = std::to_chars(number, number + sizeof number, line_).ptr - number;
    const size_t pad = digits < 6 ? 6 - digits : 0;
    std::string note;
    const size_t shown_to = skip_ + line.size();  // bytes of the line up to the shown part's end
    if (bytes > shown_to) {
      note = skip_ == 0 ? " [... line cut at " + std::to_string(line.size()) + " of " +
                              std::to_string(bytes) + " bytes"
                        : " [... line cut: bytes " + std::to_string(skip_ + 1) + "-" +
                              std::to_string(shown_to) + " of " + std::to_string(bytes);
      note += "; column=" + std::to_string(shown_to + 1) + " reads on]";
    }
    const size_t entry = pad + digits + 1 + line.size() + note.size() + 1;
    if (numbered_.size() + entry > max_text_ && shown_ > 0) {
      full_ = true;
      return;
    }
    if (!note.empty()) ++cut_lines_;
    numbered_.append(pad, ' ').append(number, digits).append(1, '\t').append(line);
    numbered_.append(note).append(1, '\n');
    raw_.append(line).append(1, '\n');
    ++shown_;
  }

  const int64_t first_, last_;
  const size_t max_text_, skip_;
  int64_t line_ = 1;
  std::string current_;
  size_t line_bytes_ = 0;
  bool pending_ = false;
  bool full_ = false;
  bool reserved_ = false;
  size_t shown_ = 0;
  size_t cut_lines_ = 0;
  std::string numbered_, raw_;
};

// The image, read whole (up to the read limit, which a larger image is refused over).
Result<ToolOutput> imageOutput(const std::string& key, std::string_view mime, ToolContext& ctx) {
  BYD_ASSIGN_OR_RETURN(FileInfo info, ctx.backend.stat(key));
  if (info.size > ctx.limits.max_read_bytes) {
    return resourceExhausted("'" + key + "' is an image of " + humanSize(info.size) +
                             ", over the " + humanSize(ctx.limits.max_read_bytes) + " read limit");
  }
  BYD_ASSIGN_OR_RETURN(std::string data, ctx.backend.read(key, 0, ctx.limits.max_read_bytes));
  ToolOutput out;
  out.text = "Image '" + key + "' (" + std::string(mime) + ", " + humanSize(data.size()) + ")";
  out.structured = {{"path", key}, {"kind", "image"}, {"mime_type", mime}, {"size", data.size()}};
  out.extra_content.push_back(
      {{"type", "image"}, {"data", base64Encode(data)}, {"mimeType", std::string(mime)}});
  return out;
}

// Feeds a file to `sink` chunk by chunk (one open, one buffer), stopping early when the sink
// returns false; an error says what to do instead, and a cancelled call stops between chunks.
Status streamFile(ToolContext& ctx, const std::string& key, const std::string& path,
                  const std::function<bool(std::string_view)>& sink) {
  bool stopped_by_cancel = false;
  Status s = ctx.backend.readStream(key, kChunkBytes, [&](std::string_view chunk) {
    if (ctx.cancel.cancelled()) {
      stopped_by_cancel = true;
      return false;
    }
    return sink(chunk);
  });
  if (stopped_by_cancel) return cancelled("cancelled");
  if (s.ok()) return s;
  // Only on failure look closer: the common case costs one open.
  auto info = ctx.backend.stat(key);
  if (info.ok() && info->type == FileType::kDir) {
    return invalidArgument("'" + path + "' is a directory; use ls to list it");
  }
  return s;
}

std::string footer(const LineWindow& w, int64_t offset, bool repaired) {
  std::string note;
  const int64_t total = w.totalLines();
  if (total == 0) return "(empty file)\n";
  const int64_t last = w.lastShown();
  if (last < total) {
    note += "[lines " + std::to_string(offset) + "-" + std::to_string(last) + " of " +
            std::to_string(total) + "; " + std::to_string(total - last) +
            " more lines; continue with offset=" + std::to_string(last + 1) + "]\n";
  }
  if (w.cutLines() > 0) {
    note += "[" + std::to_string(w.cutLines()) + " line(s) longer than " +
            std::to_string(kMaxLineBytes) +
            " bytes were cut; read on with the column each names (the same offset)]\n";
  }
  if (repaired) note += "[the file is not valid UTF-8; invalid bytes are shown as U+FFFD]\n";
  return note;
}

Result<ToolOutput> runReadFile(const json& args, ToolContext& ctx) {
  const std::string path = argString(args, "path");
  int64_t offset = argInt(args, "offset", 1);
  int64_t limit = argInt(args, "limit", 2000);
  const int64_t column = argInt(args, "column", 1);
  if (column < 1) return invalidArgument("column counts bytes of a line from 1");
  if (offset == 0) {
    return invalidArgument(
        "offset 0 is no line: lines count from 1, and a negative offset "
        "counts from the end (-20: the last 20 lines)");
  }
  BYD_ASSIGN_OR_RETURN(std::string key, ctx.backend.normalize(path));
  // Leave room for the footer, so the note on how to continue is never cut off.
  constexpr size_t kFooterRoom = 512;
  const size_t max_text = ctx.limits.max_text_bytes > 2 * kFooterRoom
                              ? ctx.limits.max_text_bytes - kFooterRoom
                              : ctx.limits.max_text_bytes / 2;
  std::optional<LineWindow> window;  // for a negative offset, made once the lines are counted
  if (offset > 0) window.emplace(offset, limit, max_text, static_cast<size_t>(column - 1));
  // The first chunk says what the file is: an image, other binary data, or text.
  enum class Kind { kEmpty, kText, kImage, kBinary } kind = Kind::kEmpty;
  std::string_view mime;
  int64_t lines = 0;  // counted on the way, for a negative offset
  bool ends_with_newline = true;
  uint64_t pos = 0;
  BYD_RETURN_IF_ERROR(streamFile(ctx, key, path, [&](std::string_view chunk) {
    if (kind == Kind::kEmpty) {
      const std::string_view head = chunk.substr(0, kSniffBytes);
      mime = imageMimeType(head);
      kind = !mime.empty()                          ? Kind::kImage
             : head.find('\0') != std::string::npos ? Kind::kBinary
                                                    : Kind::kText;
      if (kind != Kind::kText) return false;
      if (window && chunk.size() == kChunkBytes) {
        // More than one chunk: reserve the texts once for the whole file.
        if (auto info = ctx.backend.stat(key); info.ok()) window->reserve(info->size);
      }
    }
    pos += chunk.size();
    if (window) {
      window->feed(chunk);
    } else {
      lines += std::count(chunk.begin(), chunk.end(), '\n');
      ends_with_newline = chunk.back() == '\n';
    }
    return true;
  }));
  if (kind == Kind::kImage) return imageOutput(key, mime, ctx);
  if (kind == Kind::kBinary) {
    BYD_ASSIGN_OR_RETURN(FileInfo info, ctx.backend.stat(key));
    return invalidArgument("'" + path + "' is a binary file (" + humanSize(info.size) +
                           "); read_file shows text and png, jpeg, gif and webp images only");
  }
  if (!window) {
    // The last -offset lines, as tail shows them: a second pass, now that the count is known.
    const int64_t total = lines + (ends_with_newline ? 0 : 1);
    limit = std::min(limit, -offset);
    offset = std::max<int64_t>(1, total + offset + 1);
    window.emplace(offset, limit, max_text, static_cast<size_t>(column - 1));
    if (pos > kChunkBytes) window->reserve(pos);
    pos = 0;
    BYD_RETURN_IF_ERROR(streamFile(ctx, key, path, [&](std::string_view chunk) {
      pos += chunk.size();
      window->feed(chunk);
      return true;
    }));
  }
  LineWindow& w = *window;
  w.finish();
  if (offset > 1 && offset > w.totalLines()) {
    return outOfRange("offset " + std::to_string(offset) + " is past the end of '" + path +
                      "', which has " + std::to_string(w.totalLines()) + " lines");
  }
  ToolOutput out;
  // The numbered text holds the same lines (cut on character boundaries) and ASCII: when the
  // raw lines are valid UTF-8, so is it.
  const bool repaired = repairUtf8InPlace(w.raw());
  if (repaired) repairUtf8InPlace(w.numbered());
  out.text = std::move(w.numbered());
  out.text += footer(w, offset, repaired);
  const bool more = w.lastShown() < w.totalLines();
  json& s = out.structured;  // member by member, so the content is moved, not copied
  s.emplace("path", key);
  s.emplace("kind", "text");
  s.emplace("content", std::move(w.raw()));
  s.emplace("start_line", offset);
  s.emplace("num_lines", w.shown());
  s.emplace("total_lines", w.totalLines());
  s.emplace("size", pos);
  s.emplace("next_offset", more ? json(w.lastShown() + 1) : json(nullptr));
  s.emplace("invalid_utf8", repaired);
  return out;
}

constexpr ArgumentAlias kReadFileAliases[] = {
    {"file_path", "path"},
    {"length", "limit"},
};

}  // namespace

extern const ToolSpec kReadFileTool = {
    .name = "read_file",
    .operation = "read",
    .title = "Read file",
    .description =
        "Read a text file from the workspace, with line numbers like `cat -n`. By default up to "
        "2000 lines from the start; use offset (1-based line) and limit to page through long "
        "files: the footer says how many lines remain and which offset continues. A negative "
        "offset shows the end of the file (-50: the last 50 lines), as tail does. Lines over "
        "2000 bytes are cut, and column (a byte of the line, from 1) reads on where the note "
        "says. PNG, JPEG, GIF and WebP files are returned as images; other binary "
        "files are refused.",
    .read_only = true,
    .destructive = false,
    .idempotent = true,
    .handler = runReadFile,
    .aliases = kReadFileAliases,
};

}  // namespace byd
