// A recursive-descent parser for bash (bash_syntax.h). Its structure follows bash's grammar
// (parse.y): a list is and-or lists of pipelines, a pipeline is commands joined by `|`, and a
// command is a simple command, a compound command or a function definition. Words are read the
// way bash's lexer reads them, with the scripts of their substitutions parsed as they are met.
// A syntax error is thrown as Fail and caught once, at the top.

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <unordered_set>
#include <utility>

#include "permissions/bash_syntax.h"

namespace byd::permissions::bash {
namespace {

struct Fail {
  SyntaxError error;
};

// Reserved words that end a list rather than start a command.
constexpr std::string_view kListEnds[] = {"}",  "then", "elif", "else", "fi",
                                          "do", "done", "esac", "in"};

constexpr std::string_view kCondUnary[] = {"-a", "-b", "-c", "-d", "-e", "-f", "-g", "-h", "-k",
                                           "-n", "-o", "-p", "-r", "-s", "-t", "-u", "-v", "-w",
                                           "-x", "-z", "-G", "-L", "-N", "-O", "-R", "-S"};
constexpr std::string_view kCondBinary[] = {"=",   "==",  "!=",  "<",   ">",   "=~",  "-nt", "-ot",
                                            "-ef", "-eq", "-ne", "-lt", "-le", "-gt", "-ge"};
// The declaration builtins, whose NAME=(...) arguments are array assignments.
constexpr std::string_view kDeclarations[] = {"declare", "typeset", "local", "export", "readonly"};

template <size_t N>
bool among(const std::string_view (&list)[N], std::string_view s) {
  return std::find(std::begin(list), std::end(list), s) != std::end(list);
}

// Character classes, looked up for every character read.
constexpr uint8_t kMeta = 1;     // ends an unquoted word: blank, newline, ; & | ( ) < >
constexpr uint8_t kSpecial = 2;  // starts a quote, escape or expansion in a word: \ ' " $ `
constexpr std::array<uint8_t, 256> kClasses = [] {
  std::array<uint8_t, 256> t{};
  for (unsigned char c : std::string_view(" \t\n;&|()<>")) t[c] = kMeta;
  for (unsigned char c : std::string_view("\\'\"$`")) t[c] = kSpecial;
  return t;
}();

bool isBlank(char c) { return c == ' ' || c == '\t'; }
bool isMetaChar(char c) { return kClasses[static_cast<unsigned char>(c)] == kMeta; }
// Neither a metacharacter nor the start of a quote, escape or expansion.
bool isPlain(char c) { return kClasses[static_cast<unsigned char>(c)] == 0; }
bool isNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isNameChar(char c) { return isNameStart(c) || (c >= '0' && c <= '9'); }

bool isReservedWord(std::string_view w) {
  switch (w.size()) {
    case 1:
      return w == "!" || w == "{" || w == "}";
    case 2:
      return w == "do" || w == "fi" || w == "if" || w == "in" || w == "[[" || w == "]]";
    case 3:
      return w == "for";
    case 4:
      return w == "case" || w == "done" || w == "elif" || w == "else" || w == "esac" ||
             w == "then" || w == "time";
    case 5:
      return w == "until" || w == "while";
    case 6:
      return w == "coproc" || w == "select";
    case 8:
      return w == "function";
    default:
      return false;
  }
}

Node makeNode(Kind kind, uint32_t begin) {
  Node n;
  n.kind = kind;
  n.begin = begin;
  return n;
}
Word makeWord(uint32_t begin) {
  Word w;
  w.begin = begin;
  return w;
}

// The mask is made when the first character that is not literal comes.
void notLiteral(Word& w) {
  if (!w.literal) return;
  w.literal = false;
  w.mask = w.text;
}
void addChar(Word& w, char c, bool literal) {
  if (!literal) notLiteral(w);
  w.text += c;
  if (!w.literal) w.mask += literal ? c : kNotBare;
}
void addLiteral(Word& w, std::string_view s) {
  w.text += s;
  if (!w.literal) w.mask += s;
}
void addQuoted(Word& w, std::string_view s) {
  notLiteral(w);
  w.text += s;
  w.mask.append(s.size(), kNotBare);
}
void addExpansion(Word& w, std::string_view s) {
  notLiteral(w);
  w.text += s;
  w.mask.append(s.size(), kNotBare);
  w.expands = true;
}
void addWord(Word& w, Word& part) {
  if (!part.literal) notLiteral(w);
  w.text += part.text;
  if (!w.literal) w.mask += part.bare();
  w.expands = w.expands || part.expands;
  w.substitutes = w.substitutes || part.substitutes;
  w.evaluates = w.evaluates || part.evaluates;
  for (Node& n : part.nested) w.nested.push_back(std::move(n));
}

class Parser {
 public:
  // `text` is parsed; positions are offsets in it plus `base`, or all `base` when `fixed` (the
  // text of a backtick substitution, whose escapes were removed).
  Parser(std::string_view text, uint32_t base, bool fixed, int depth, size_t& elements)
      : in_(text),
        end_(text.size()),
        base_(base),
        fixed_(fixed),
        depth_(depth),
        elements_(elements) {}

  ParseResult run() {
    ParseResult result;
    try {
      result.script = parseList();
      if (!atEnd()) fail(pos_, "unexpected " + describeToken());
      readPendingHeredocs();
    } catch (const Fail& f) {
      result.error = f.error;
    }
    result.deferred = std::move(deferred_);
    result.functions = functions_;
    return result;
  }

 private:
  // How a word is read: as a command's, as a pattern in [[ ]] (extended globs), or as a regular
  // expression after =~.
  enum class WordMode { kNormal, kPattern, kRegex };

  // --- Positions and errors ---

  uint32_t at(size_t offset) const {
    return fixed_ ? base_ : base_ + static_cast<uint32_t>(offset);
  }
  [[noreturn]] void fail(size_t offset, std::string message) const {
    throw Fail{{at(offset), std::move(message)}};
  }
  // The token at the cursor, for messages: "'fi'", "newline", "end of file".
  std::string describeToken() const {
    if (atEnd()) return "end of file";
    const char c = peek();
    if (c == '\n') return "newline";
    size_t n = 1;
    if (isMetaChar(c)) {
      const std::string_view two = in_.substr(pos_, std::min<size_t>(3, end_ - pos_));
      for (std::string_view op : {";;&", ";;", ";&", "&&", "||", "|&", "<<", ">>", "&>"}) {
        if (two.starts_with(op)) {
          n = op.size();
          break;
        }
      }
    } else {
      while (pos_ + n < end_ && !isMetaChar(in_[pos_ + n])) ++n;
    }
    return "'" + std::string(in_.substr(pos_, std::min<size_t>(n, 40))) + "'";
  }
  void enter() {
    if (++depth_ > kMaxDepth) {
      fail(pos_, "nested more than " + std::to_string(kMaxDepth) + " levels deep");
    }
  }
  void leave() { --depth_; }
  // Counts a word, command or redirection against kMaxElements.
  void count() {
    if (++elements_ > kMaxElements) {
      fail(pos_, "the line holds more than " + std::to_string(kMaxElements) +
                     " words, commands and redirections, more than is judged");
    }
  }

  // --- The cursor ---

  bool atEnd() const { return pos_ >= end_; }
  char peek(size_t ahead = 0) const { return pos_ + ahead < end_ ? in_[pos_ + ahead] : '\0'; }
  bool lookingAt(std::string_view s) const {
    if (end_ - pos_ < s.size()) return false;
    for (size_t i = 0; i < s.size(); ++i) {
      if (in_[pos_ + i] != s[i]) return false;
    }
    return true;
  }

  void skipBlanks() {
    while (!atEnd()) {
      if (isBlank(peek())) {
        ++pos_;
      } else if (peek() == '\\' && peek(1) == '\n') {
        pos_ += 2;
      } else {
        break;
      }
    }
  }
  void skipComment() {
    while (!atEnd() && peek() != '\n') ++pos_;
  }
  // Blanks, comments and newlines, where the grammar allows a line break.
  void skipLinebreaks() {
    while (true) {
      skipBlanks();
      if (peek() == '#') skipComment();
      if (atEnd() || peek() != '\n') return;
      consumeNewline();
    }
  }
  void consumeNewline() {
    ++pos_;
    readPendingHeredocs();
  }

  // The reserved word at the cursor, if the next word is one (unquoted, ending at a
  // metacharacter), else empty.
  // Asked several times at each command's start, so the last answer is kept.
  std::string_view peekReserved() const {
    if (reserved_at_ == pos_ && reserved_end_ == end_) return reserved_;
    reserved_at_ = pos_;
    reserved_end_ = end_;
    reserved_ = findReserved();
    return reserved_;
  }
  std::string_view findReserved() const {
    // Every reserved word starts with one of these.
    if (atEnd() || std::strchr("!{}cdefistuw[]", peek()) == nullptr || peek() == '\0') return {};
    size_t n = 0;
    while (pos_ + n < end_ && isPlain(in_[pos_ + n])) {
      if (++n > 8) return {};
    }
    if (pos_ + n < end_ && !isMetaChar(in_[pos_ + n])) return {};
    const std::string_view word = in_.substr(pos_, n);
    return isReservedWord(word) ? word : std::string_view();
  }
  void expectReserved(std::string_view word) {
    skipLinebreaks();
    if (peekReserved() != word) {
      fail(pos_, "expected '" + std::string(word) + "' but found " + describeToken());
    }
    pos_ += word.size();
  }
  bool atCaseEnd() const { return lookingAt(";;") || lookingAt(";&"); }
  bool atProcessSubstitution() const { return (peek() == '<' || peek() == '>') && peek(1) == '('; }

  // Where a list ends: the end of the input, `)`, a case item's end or a closing keyword.
  bool atListEnd() const {
    if (atEnd() || peek() == ')' || atCaseEnd()) return true;
    const std::string_view r = peekReserved();
    return !r.empty() && among(kListEnds, r);
  }

  // --- Lists, pipelines and commands ---

  Node parseList() {
    enter();
    Node list = makeNode(Kind::kList, at(pos_));
    skipLinebreaks();
    while (!atListEnd()) {
      Node pipeline = parsePipeline();
      skipBlanks();
      if (peek() == '#') skipComment();
      const char c = peek();
      if (lookingAt("&&") || lookingAt("||")) {
        pipeline.op = peek() == '&' ? "&&" : "||";
        pos_ += 2;
        skipLinebreaks();
        if (atListEnd()) fail(pos_, "unexpected " + describeToken());
      } else if (c == ';' && !atCaseEnd()) {
        pipeline.op = ";";
        ++pos_;
        skipLinebreaks();
      } else if (c == '&' && peek(1) != '>') {
        pipeline.op = "&";
        ++pos_;
        skipLinebreaks();
      } else if (c == '\n') {
        pipeline.op = "\n";
        skipLinebreaks();
      } else {
        list.children.push_back(std::move(pipeline));
        break;
      }
      list.children.push_back(std::move(pipeline));
    }
    list.end = at(pos_);
    leave();
    return list;
  }

  // A list that must hold a command: the body of a compound command.
  Node parseCompoundList() {
    Node list = parseList();
    if (list.children.empty()) fail(pos_, "unexpected " + describeToken());
    return list;
  }

  Node parsePipeline() {
    count();
    Node pipeline = makeNode(Kind::kPipeline, at(pos_));
    while (true) {
      skipBlanks();
      const std::string_view r = peekReserved();
      if (r == "!") {
        pipeline.negated = !pipeline.negated;
        ++pos_;
      } else if (r == "time") {
        skipTime(pipeline);
      } else {
        break;
      }
    }
    skipBlanks();
    const bool prefixed = pipeline.negated || pipeline.timed;
    const bool ends = atListEnd() || peek() == ';' || peek() == '\n' || peek() == '#' ||
                      (peek() == '&' && peek(1) != '>') || lookingAt("||");
    if (prefixed && ends) {  // `!` or `time` alone
      pipeline.end = at(pos_);
      return pipeline;
    }
    Node first = parseCommand();
    skipBlanks();
    const auto atPipe = [&] { return peek() == '|' && peek(1) != '|'; };
    // A pipeline of one command, without `!` or `time`, is that command.
    if (!atPipe() && !prefixed) return first;
    pipeline.children.push_back(std::move(first));
    while (atPipe()) {
      pos_ += peek(1) == '&' ? 2 : 1;
      skipLinebreaks();
      skipTime(pipeline);  // `a | time b` times b; `a | ! b` is an error
      pipeline.children.push_back(parseCommand());
      skipBlanks();
    }
    pipeline.end = at(pos_);
    return pipeline;
  }

  void skipTime(Node& pipeline) {
    skipBlanks();
    if (peekReserved() != "time") return;
    pipeline.timed = true;
    pos_ += 4;
    skipBlanks();
    if (lookingAt("-p") && (pos_ + 2 >= end_ || isMetaChar(peek(2)))) pos_ += 2;
  }

  Node parseCommand() {
    count();
    skipBlanks();
    const bool process = (peek() == '<' || peek() == '>') && peek(1) == '(';
    if (atEnd() || atListEnd() ||
        (isMetaChar(peek()) && peek() != '(' && !atRedirection() && !process)) {
      fail(pos_, "unexpected " + describeToken());
    }
    const std::string_view r = peekReserved();
    const size_t start = pos_;
    Node node;
    if (r == "{") {
      ++pos_;
      node = makeNode(Kind::kGroup, at(start));
      node.children.push_back(parseCompoundList());
      expectReserved("}");
    } else if (r == "if") {
      node = parseIf();
    } else if (r == "while" || r == "until") {
      node = parseWhile(r);
    } else if (r == "for" || r == "select") {
      node = parseFor(r);
    } else if (r == "case") {
      node = parseCase();
    } else if (r == "function") {
      return parseFunctionKeyword();
    } else if (r == "[[") {
      node = parseCond();
    } else if (r == "coproc") {
      return parseCoproc();
    } else if (!r.empty()) {
      fail(pos_, "unexpected '" + std::string(r) + "'");
    } else if (peek() == '(') {
      node = parseParen();
    } else {
      return parseSimple();
    }
    parseTrailingRedirections(node);
    node.end = at(pos_);
    return node;
  }

  // `( list )` or `(( expr ))`.
  Node parseParen() {
    const size_t start = pos_;
    if (peek(1) == '(') {
      Word expr;
      if (tryArithmetic(pos_ + 2, expr)) {
        Node node = makeNode(Kind::kArith, at(start));
        node.words.push_back(std::move(expr));
        return node;
      }
    }
    ++pos_;
    Node node = makeNode(Kind::kSubshell, at(start));
    enter();
    node.children.push_back(parseCompoundList());
    leave();
    if (peek() != ')') fail(pos_, "expected ')' but found " + describeToken());
    ++pos_;
    return node;
  }

  bool atCompoundStart() const {
    const std::string_view r = peekReserved();
    return peek() == '(' || r == "{" || r == "if" || r == "while" || r == "until" || r == "for" ||
           r == "select" || r == "case" || r == "[[";
  }

  void parseTrailingRedirections(Node& node) {
    while (true) {
      skipBlanks();
      if (!atRedirection()) return;
      node.redirects.push_back(parseRedirection());
    }
  }

  Node parseIf() {
    Node node = makeNode(Kind::kIf, at(pos_));
    pos_ += 2;
    node.children.push_back(parseCompoundList());
    expectReserved("then");
    node.children.push_back(parseCompoundList());
    while (true) {
      skipLinebreaks();
      const std::string_view r = peekReserved();
      if (r == "elif") {
        pos_ += 4;
        node.children.push_back(parseCompoundList());
        expectReserved("then");
        node.children.push_back(parseCompoundList());
      } else if (r == "else") {
        pos_ += 4;
        node.children.push_back(parseCompoundList());
        expectReserved("fi");
        return node;
      } else {
        expectReserved("fi");
        return node;
      }
    }
  }

  Node parseWhile(std::string_view keyword) {
    Node node = makeNode(keyword == "while" ? Kind::kWhile : Kind::kUntil, at(pos_));
    pos_ += keyword.size();
    node.children.push_back(parseCompoundList());
    parseDoBody(node, false);
    return node;
  }

  // `do list done`, or for `for` and `select`, also `{ list }`.
  void parseDoBody(Node& node, bool brace_allowed) {
    skipLinebreaks();
    if (brace_allowed && peekReserved() == "{") {
      ++pos_;
      node.children.push_back(parseCompoundList());
      expectReserved("}");
      return;
    }
    expectReserved("do");
    node.children.push_back(parseCompoundList());
    expectReserved("done");
  }

  Node parseFor(std::string_view keyword) {
    Node node = makeNode(keyword == "for" ? Kind::kFor : Kind::kSelect, at(pos_));
    pos_ += keyword.size();
    skipBlanks();
    if (keyword == "for" && lookingAt("((")) {
      node.kind = Kind::kArithFor;
      Word expr;
      const size_t start = pos_;
      if (!tryArithmetic(pos_ + 2, expr)) {
        fail(pos_, "the arithmetic for loop's '((' is not closed");
      }
      if (topLevelSemicolons(expr.text) != 2) {
        fail(start, "an arithmetic for loop needs three expressions: (( init; test; step ))");
      }
      node.words.push_back(std::move(expr));
      skipBlanks();
      if (peek() == ';') ++pos_;
      parseDoBody(node, true);
      return node;
    }
    if (atEnd() || isMetaChar(peek())) {
      fail(pos_, "expected a variable name after '" + std::string(keyword) + "' but found " +
                     describeToken());
    }
    node.name = readWord().text;
    skipLinebreaks();
    if (peekReserved() == "in") {
      pos_ += 2;
      while (true) {
        skipBlanks();
        if (atEnd() || peek() == ';' || peek() == '\n') break;
        if (peek() == '#') {
          skipComment();
          continue;
        }
        if (isMetaChar(peek()) && !atProcessSubstitution()) {
          fail(pos_, "unexpected " + describeToken());
        }
        node.words.push_back(readWord());
      }
      if (atEnd()) fail(pos_, "unexpected end of file");
      if (peek() == ';') ++pos_;
    } else if (peek() == ';') {
      ++pos_;
    }
    parseDoBody(node, true);
    return node;
  }

  Node parseCase() {
    Node node = makeNode(Kind::kCase, at(pos_));
    pos_ += 4;
    skipBlanks();
    if (atEnd() || isMetaChar(peek())) {
      fail(pos_, "expected a word after 'case' but found " + describeToken());
    }
    node.words.push_back(readWord());
    expectReserved("in");
    while (true) {
      skipLinebreaks();
      if (peekReserved() == "esac") {
        pos_ += 4;
        return node;
      }
      Node item = makeNode(Kind::kCaseItem, at(pos_));
      if (peek() == '(') {
        ++pos_;
        skipBlanks();
      }
      while (true) {
        skipBlanks();
        if (atEnd() || isMetaChar(peek())) {
          fail(pos_, "expected a pattern but found " + describeToken());
        }
        item.words.push_back(readWord());
        skipBlanks();
        if (peek() != '|') break;
        ++pos_;
      }
      if (peek() != ')') fail(pos_, "expected ')' after the pattern but found " + describeToken());
      ++pos_;
      item.children.push_back(parseList());
      item.end = at(pos_);
      if (atCaseEnd()) {
        const size_t n = lookingAt(";;&") ? 3 : 2;
        item.op = n == 3 ? ";;&" : peek(1) == '&' ? ";&" : ";;";
        pos_ += n;
        node.children.push_back(std::move(item));
        continue;
      }
      node.children.push_back(std::move(item));
      skipLinebreaks();
      if (peekReserved() != "esac") fail(pos_, "expected 'esac' but found " + describeToken());
    }
  }

  // `function NAME [()] body`.
  Node parseFunctionKeyword() {
    const size_t start = pos_;
    pos_ += 8;
    skipBlanks();
    if (atEnd() || isMetaChar(peek())) {
      fail(pos_, "expected a function name but found " + describeToken());
    }
    Word name = readWord();
    skipBlanks();
    if (peek() == '(') {
      ++pos_;
      skipBlanks();
      if (peek() != ')') fail(pos_, "expected ')' but found " + describeToken());
      ++pos_;
    }
    return parseFunctionBody(start, std::move(name));
  }

  Node parseFunctionBody(size_t start, Word name) {
    skipLinebreaks();
    if (!atCompoundStart()) {
      fail(pos_, "expected the function's body (a compound command) but found " + describeToken());
    }
    functions_ = true;
    Node node = makeNode(Kind::kFunction, at(start));
    node.name = std::move(name.text);
    node.words.push_back(std::move(name));
    enter();
    node.children.push_back(parseCommand());
    leave();
    node.end = at(pos_);
    return node;
  }

  Node parseCoproc() {
    Node node = makeNode(Kind::kCoproc, at(pos_));
    pos_ += 6;
    skipBlanks();
    if (!atCompoundStart()) {
      // `coproc NAME compound` names it; otherwise what follows is a simple command.
      const size_t saved = pos_;
      const Word name = atEnd() || isMetaChar(peek()) ? Word() : readWord();
      skipBlanks();
      if (isName(name.text) && name.literal && atCompoundStart()) {
        node.name = name.text;
      } else {
        pos_ = saved;
      }
    }
    node.children.push_back(parseCommand());
    node.end = at(pos_);
    return node;
  }

  // --- [[ conditional expressions ]] ---

  Node parseCond() {
    Node node = makeNode(Kind::kCond, at(pos_));
    pos_ += 2;
    enter();
    condOr(node);
    leave();
    skipBlanks();
    if (!atCondEnd()) fail(pos_, "in the conditional expression, unexpected " + describeToken());
    pos_ += 2;
    return node;
  }
  bool atCondEnd() const { return lookingAt("]]") && (pos_ + 2 >= end_ || isMetaChar(peek(2))); }
  void skipCondBreaks() {
    while (true) {
      skipBlanks();
      if (peek() != '\n') return;
      consumeNewline();
    }
  }
  // Terms joined by && and ||; their precedence does not change what is read.
  void condOr(Node& node) {
    condTerm(node);
    skipBlanks();
    while (lookingAt("&&") || lookingAt("||")) {
      pos_ += 2;
      condTerm(node);
      skipBlanks();
    }
  }
  void condTerm(Node& node) {
    skipCondBreaks();
    if (atEnd() || atCondEnd() || lookingAt("&&") || lookingAt("||") || peek() == ')') {
      fail(pos_, "in the conditional expression, unexpected " + describeToken());
    }
    if (peek() == '(') {
      ++pos_;
      enter();
      condOr(node);
      leave();
      skipCondBreaks();
      if (peek() != ')') {
        fail(pos_, "in the conditional expression, expected ')' but found " + describeToken());
      }
      ++pos_;
      return;
    }
    Word first = readCondWord(WordMode::kNormal);
    if (first.isBare("!")) {
      condTerm(node);
      return;
    }
    skipBlanks();
    const bool operand_follows = !atEnd() && !atCondEnd() && !lookingAt("&&") && !lookingAt("||") &&
                                 peek() != ')' && peek() != '\n';
    if (first.literal && among(kCondUnary, first.text)) {
      if (!operand_follows) {
        fail(pos_, "the conditional operator " + first.text + " needs an operand, but found " +
                       describeToken());
      }
      node.words.push_back(std::move(first));
      node.words.push_back(readCondWord(WordMode::kNormal));
      return;
    }
    node.words.push_back(std::move(first));
    if (!operand_follows) return;
    if (isMetaChar(peek()) && peek() != '<' && peek() != '>') {
      fail(pos_, "expected a conditional binary operator but found " + describeToken());
    }
    Word op = readCondWord(WordMode::kNormal);
    if (!op.literal || !among(kCondBinary, op.text)) {
      fail(op.begin - base_, "expected a conditional binary operator but found '" + op.text + "'");
    }
    skipBlanks();
    if (atEnd() || atCondEnd() || peek() == '\n') {
      fail(pos_, "the conditional operator " + op.text + " needs a second operand");
    }
    // Extended glob patterns are read on the right of a pattern match, as bash reads them.
    WordMode mode = WordMode::kNormal;
    if (op.text == "=~") mode = WordMode::kRegex;
    if (op.text == "==" || op.text == "=" || op.text == "!=") mode = WordMode::kPattern;
    node.words.push_back(std::move(op));
    node.words.push_back(readCondWord(mode));
  }
  // A word of a conditional expression: `<` and `>` are operators there, extended glob patterns
  // are read whole, and a regular expression after =~ may hold ( | < > and, inside parentheses,
  // blanks.
  Word readCondWord(WordMode mode) {
    if (peek() == '<' || peek() == '>') {
      Word w = makeWord(at(pos_));
      addChar(w, peek(), true);
      ++pos_;
      w.end = at(pos_);
      return w;
    }
    return readWord(mode);
  }

  // The `;` of an arithmetic for loop's `((...))` outside quotes and parentheses.
  static int topLevelSemicolons(std::string_view expr) {
    int depth = 0;
    int n = 0;
    char quote = '\0';
    for (size_t i = 2; i + 2 < expr.size(); ++i) {
      const char c = expr[i];
      if (quote != '\0') {
        if (c == quote) quote = '\0';
      } else if (c == '\'' || c == '"') {
        quote = c;
      } else if (c == '(') {
        ++depth;
      } else if (c == ')') {
        --depth;
      } else if (c == ';' && depth == 0) {
        ++n;
      }
    }
    return n;
  }

  // --- Simple commands, function definitions and redirections ---

  // At a redirection operator, possibly after an fd number or {name}.
  bool atRedirection() const {
    size_t i = pos_;
    if (i < end_ && std::isdigit(static_cast<unsigned char>(in_[i]))) {
      while (i < end_ && std::isdigit(static_cast<unsigned char>(in_[i]))) ++i;
    } else if (i < end_ && in_[i] == '{') {
      size_t j = i + 1;
      while (j < end_ && isNameChar(in_[j])) ++j;
      if (j < end_ && in_[j] == '[' && j > i + 1) {  // {a[1]}>file
        while (j < end_ && in_[j] != ']' && !isMetaChar(in_[j])) ++j;
        if (j < end_ && in_[j] == ']') ++j;
      }
      if (j > i + 1 && j < end_ && in_[j] == '}' && isNameStart(in_[i + 1])) i = j + 1;
    }
    if (i >= end_) return false;
    const char c = in_[i];
    if (c == '&' && i == pos_) return i + 1 < end_ && in_[i + 1] == '>';
    if (c != '<' && c != '>') return false;
    return !(i + 1 < end_ && in_[i + 1] == '(');  // <( ) is a process substitution
  }

  Redirect parseRedirection() {
    Redirect r;
    r.begin = at(pos_);
    while (!atEnd() && peek() != '<' && peek() != '>' && !(peek() == '&' && peek(1) == '>')) {
      r.fd += peek();
      ++pos_;
    }
    static constexpr std::string_view kOps[] = {"<<<", "<<-", "&>>", "<<", "<&", "<>",
                                                ">>",  ">&",  ">|",  "&>", "<",  ">"};
    for (std::string_view op : kOps) {
      if (lookingAt(op)) {
        r.op = std::string(op);
        pos_ += op.size();
        break;
      }
    }
    skipBlanks();
    const bool process = (peek() == '<' || peek() == '>') && peek(1) == '(';
    if (atEnd() || (isMetaChar(peek()) && !process)) {
      fail(pos_, "the redirection " + r.op + " needs a target, but found " + describeToken());
    }
    r.target = readWord();
    if (r.op == "<<" || r.op == "<<-") {
      r.heredoc = std::make_shared<Heredoc>();
      r.heredoc->expands = !r.target.quoted;
      pending_.push_back({r.heredoc, r.target.text, r.op == "<<-"});
    }
    return r;
  }

  Node parseSimple() {
    const size_t start = pos_;
    Node node = makeNode(Kind::kSimple, at(pos_));
    node.words.reserve(2);
    while (true) {
      skipBlanks();
      if (atEnd()) break;
      const char c = peek();
      if (atRedirection()) {
        node.redirects.push_back(parseRedirection());
      } else if (c == '(' && arrayValueFollows(node)) {
        Word& w = node.words.empty() ? node.assignments.back() : node.words.back();
        readArrayValue(w);
      } else if (c == '(') {
        if (node.words.size() == 1 && node.assignments.empty() && node.redirects.empty()) {
          return parseFunctionDefinition(start, node);
        }
        fail(pos_, "unexpected '('");
      } else if (c == '#') {  // at the start of a word: a comment
        skipComment();
      } else if (isMetaChar(c) && !((c == '<' || c == '>') && peek(1) == '(')) {
        break;
      } else {
        Word w = readWord();
        if (node.words.empty() && isAssignmentWord(w)) {
          node.assignments.push_back(std::move(w));
        } else {
          node.words.push_back(std::move(w));
        }
      }
    }
    node.end = at(pos_);
    return node;
  }

  // Whether the `(` at the cursor opens an array value: it follows `NAME=` or `NAME+=` directly,
  // before the command's name or as an argument of a declaration builtin.
  bool arrayValueFollows(const Node& node) const {
    const Word* w = nullptr;
    if (node.words.empty() && !node.assignments.empty()) {
      w = &node.assignments.back();
    } else if (!node.words.empty() && node.words.size() > 1 &&
               among(kDeclarations, node.words.front().text) &&
               isAssignmentWord(node.words.back())) {
      w = &node.words.back();
    }
    return w != nullptr && w->end == at(pos_) && w->text.ends_with('=') && w->bare().ends_with('=');
  }

  void readArrayValue(Word& w) {
    const size_t start = pos_;
    ++pos_;
    enter();
    while (true) {
      skipLinebreaks();
      if (atEnd()) fail(start, "the array's '(' is not closed");
      if (peek() == ')') {
        ++pos_;
        break;
      }
      if (isMetaChar(peek()) && !atProcessSubstitution()) {
        fail(pos_, "in an array, unexpected " + describeToken());
      }
      Word element = readWord();
      for (Node& n : element.nested) w.nested.push_back(std::move(n));
      w.substitutes = w.substitutes || element.substitutes;
    }
    leave();
    addExpansion(w, in_.substr(start, pos_ - start));
    w.end = at(pos_);
  }

  Node parseFunctionDefinition(size_t start, Node& simple) {
    ++pos_;
    skipBlanks();
    if (peek() != ')')
      fail(pos_, "expected ')' of a function definition but found " + describeToken());
    ++pos_;
    return parseFunctionBody(start, std::move(simple.words.front()));
  }

  // --- Words ---

  Word readWord(WordMode mode = WordMode::kNormal) {
    count();
    Word w = makeWord(at(pos_));
    int parens = 0;  // in a regular expression
    if ((peek() == '<' || peek() == '>') && peek(1) == '(') readProcessSubstitution(w);
    while (!atEnd()) {
      // Plain characters in one go: most words are nothing else.
      size_t run = pos_;
      while (run < end_ && isPlain(in_[run]) && (parens == 0 || in_[run] != '\n')) ++run;
      if (run > pos_) {
        const std::string_view plain = in_.substr(pos_, run - pos_);
        addLiteral(w, plain);
        pos_ = run;
        continue;
      }
      const char c = peek();
      if (c == '\\') {
        if (peek(1) == '\n') {
          pos_ += 2;
          continue;
        }
        if (pos_ + 1 >= end_) {
          addChar(w, c, true);
          ++pos_;
          continue;
        }
        addChar(w, peek(1), false);
        w.quoted = true;
        pos_ += 2;
      } else if (readQuoteOrExpansion(w, false)) {
      } else if (mode == WordMode::kRegex && c == '(') {
        ++parens;
        addChar(w, c, true);
        ++pos_;
      } else if (mode == WordMode::kRegex && c == ')' && parens > 0) {
        --parens;
        addChar(w, c, true);
        ++pos_;
      } else if (mode == WordMode::kRegex &&
                 (c == '|' || c == '<' || c == '>' || (parens > 0 && c != '\n'))) {
        addChar(w, c, true);
        ++pos_;
      } else if (mode != WordMode::kNormal && c == '(' && !w.text.empty() &&
                 std::strchr("?*+@!", w.text.back()) != nullptr && w.bare().back() != kNotBare) {
        readExtglob(w);
      } else if (isMetaChar(c)) {
        break;
      } else {
        addChar(w, c, true);
        ++pos_;
      }
    }
    w.end = at(pos_);
    return w;
  }

  // `@(a|b)` and kin inside [[ ]]: parentheses balanced, `|` inside.
  void readExtglob(Word& w) {
    int depth = 0;
    while (!atEnd()) {
      const char c = peek();
      if (c == '(') {
        ++depth;
      } else if (c == ')') {
        if (--depth == 0) {
          addChar(w, c, true);
          ++pos_;
          return;
        }
      } else if (c == '\\' || c == '\'' || c == '"' || c == '$' || c == '`') {
        Word part = readWordPart();
        addWord(w, part);
        continue;
      } else if (c == '\n' || c == ';' || c == '&') {
        fail(pos_, "the pattern's '(' is not closed");
      }
      addChar(w, c, true);
      ++pos_;
    }
    fail(pos_, "the pattern's '(' is not closed");
  }
  // Reads the quote, expansion or substitution that starts at the cursor into `w`; false when
  // none starts there.
  bool readQuoteOrExpansion(Word& w, bool in_double) {
    switch (peek()) {
      case '\'':
        readSingleQuoted(w);
        return true;
      case '"':
        readDoubleQuoted(w);
        return true;
      case '$':
        readDollar(w, in_double);
        return true;
      case '`':
        readBacktick(w, in_double);
        return true;
      default:
        return false;
    }
  }

  // One quoted or expanded part of a word, at the cursor.
  Word readWordPart() {
    Word w = makeWord(at(pos_));
    const char c = peek();
    if (c == '\\') {
      if (pos_ + 1 < end_) addChar(w, peek(1), false);
      pos_ += 2;
    } else {
      readQuoteOrExpansion(w, false);
    }
    return w;
  }

  void readSingleQuoted(Word& w) {
    const size_t start = pos_++;
    const size_t close = in_.find('\'', pos_);
    if (close == std::string_view::npos || close >= end_) {
      fail(start, "the quote ' is not closed");
    }
    addQuoted(w, in_.substr(pos_, close - pos_));
    w.quoted = true;
    pos_ = close + 1;
  }

  void readDoubleQuoted(Word& w) {
    const size_t start = pos_++;
    w.quoted = true;
    while (true) {
      if (atEnd()) fail(start, "the quote \" is not closed");
      const char c = peek();
      if (c == '"') {
        ++pos_;
        return;
      }
      if (c == '\\' && pos_ + 1 < end_ && std::strchr("$`\"\\\n", peek(1)) != nullptr) {
        if (peek(1) != '\n') addChar(w, peek(1), false);
        pos_ += 2;
      } else if (c == '$') {
        readDollar(w, true);
      } else if (c == '`') {
        readBacktick(w, true);
      } else {
        size_t run = pos_ + 1;  // quoted characters in one go
        while (run < end_ && in_[run] != '"' && in_[run] != '\\' && in_[run] != '$' &&
               in_[run] != '`') {
          ++run;
        }
        addQuoted(w, in_.substr(pos_, run - pos_));
        pos_ = run;
      }
    }
  }

  void readDollar(Word& w, bool in_double) {
    const size_t start = pos_;
    const char c = peek(1);
    if (c == '(') {
      if (peek(2) == '(') {
        Word expr;
        if (tryArithmetic(pos_ + 3, expr)) {
          mergeNested(w, expr);
          addExpansion(w, in_.substr(start, pos_ - start));
          return;
        }
      }
      pos_ += 2;
      Node script = parseSubstitutionList(start);
      w.nested.push_back(std::move(script));
      addExpansion(w, kSubstitution);
      w.substitutes = true;
    } else if (c == '{') {
      pos_ += 2;
      readParameter(w, start, in_double);
      const std::string_view text = in_.substr(start, pos_ - start);
      if (text.ends_with("@P}")) w.evaluates = true;
      addExpansion(w, text);
    } else if (c == '[') {
      pos_ += 2;
      readBracketArithmetic(w, start);
      addExpansion(w, in_.substr(start, pos_ - start));
    } else if (c == '\'' && !in_double) {
      ++pos_;
      readAnsiC(w);
    } else if (c == '"' && !in_double) {
      ++pos_;
      readDoubleQuoted(w);
    } else if (isNameStart(c)) {
      pos_ += 2;
      while (!atEnd() && isNameChar(peek())) ++pos_;
      addExpansion(w, in_.substr(start, pos_ - start));
    } else if (c != '\0' && (std::isdigit(static_cast<unsigned char>(c)) ||
                             std::strchr("@*#?-$!", c) != nullptr)) {
      pos_ += 2;
      addExpansion(w, in_.substr(start, 2));
    } else {
      addChar(w, '$', !in_double);
      ++pos_;
    }
  }

  void mergeNested(Word& w, Word& part) {
    for (Node& n : part.nested) w.nested.push_back(std::move(n));
    w.substitutes = w.substitutes || part.substitutes;
    w.evaluates = w.evaluates || part.evaluates;
  }

  // The commands of `$( ... )`, from just after `$(` through the `)`.
  // A heredoc pending outside is read after the substitution, at the first newline outside it;
  // one opened inside must end inside.
  Node parseSubstitutionList(size_t start) {
    enter();
    std::vector<Pending> outer = std::move(pending_);
    pending_.clear();
    Node script = parseList();
    readPendingHeredocs();
    pending_ = std::move(outer);
    leave();
    if (peek() != ')') {
      if (atEnd()) fail(start, "the substitution $( is not closed");
      fail(pos_, "expected ')' but found " + describeToken());
    }
    ++pos_;
    return script;
  }

  void readProcessSubstitution(Word& w) {
    const size_t start = pos_;
    pos_ += 2;
    Node script = parseSubstitutionList(start);
    w.nested.push_back(std::move(script));
    addExpansion(w, kSubstitution);
    w.substitutes = true;
  }

  // Reads an arithmetic expression from `from` to its `))`; on success the cursor is after it
  // and `expr` holds its text and the scripts of its substitutions. On failure (the first `)`
  // that closes nothing is not followed by another), the cursor is back where it was: bash then
  // reads `((` as two subshells.
  bool tryArithmetic(size_t from, Word& expr) {
    const size_t saved = pos_;
    if (arith_failed_.count(saved) != 0) return false;
    // Like a substitution, the expression does not end a line: heredocs pending outside it are
    // read after it.
    std::vector<Pending> outer = std::move(pending_);
    pending_.clear();
    const int saved_depth = depth_;
    pos_ = from;
    int depth = 0;
    expr.begin = at(saved);
    try {
      enter();
      while (!atEnd()) {
        const char c = peek();
        if (c == '(') {
          ++depth;
        } else if (c == ')') {
          if (depth == 0) {
            if (peek(1) != ')') break;
            pos_ += 2;
            leave();
            pending_ = std::move(outer);
            expr.text = std::string(in_.substr(saved, pos_ - saved));
            expr.literal = false;
            expr.mask.assign(expr.text.size(), kNotBare);
            expr.expands = true;
            expr.end = at(pos_);
            return true;
          }
          --depth;
        } else if (readQuoteOrExpansion(expr, false)) {
          continue;
        } else if (c == '\\' && peek(1) == '\n') {
          ++pos_;
        }
        ++pos_;
      }
      leave();
    } catch (const Fail&) {
      depth_ = saved_depth;
    }
    arith_failed_.insert(saved);
    pos_ = saved;
    pending_ = std::move(outer);
    expr = Word();
    return false;
  }

  // `${ ... }` from just after `${`: nested quotes, expansions and substitutions are read (their
  // commands run), braces are not counted.
  void readParameter(Word& w, size_t start, bool in_double) {
    enter();
    Word inner;
    while (true) {
      if (atEnd()) fail(start, "the expansion ${ is not closed");
      const char c = peek();
      if (c == '}') {
        ++pos_;
        break;
      }
      if (c == '\\') {
        pos_ += 2;
      } else if (readQuoteOrExpansion(inner, in_double)) {
      } else if (c == '\n') {
        consumeNewline();
      } else {
        ++pos_;
      }
    }
    leave();
    mergeNested(w, inner);
  }

  void readBracketArithmetic(Word& w, size_t start) {
    enter();
    Word inner;
    int depth = 0;
    while (true) {
      if (atEnd()) fail(start, "the expansion $[ is not closed");
      const char c = peek();
      if (c == '[') ++depth;
      if (c == ']' && depth-- == 0) {
        ++pos_;
        break;
      }
      if (c == '$') {
        readDollar(inner, false);
      } else if (c == '`') {
        readBacktick(inner, false);
      } else {
        ++pos_;
      }
    }
    leave();
    mergeNested(w, inner);
  }

  // `$'...'`, decoded as bash decodes it, so that `$'\x72m'` is read as the `rm` it runs.
  void readAnsiC(Word& w) {
    const size_t start = pos_++;
    w.quoted = true;
    while (true) {
      if (atEnd()) fail(start, "the quote $' is not closed");
      const char c = peek();
      if (c == '\'') {
        ++pos_;
        return;
      }
      if (c != '\\' || pos_ + 1 >= end_) {
        addChar(w, c, false);
        ++pos_;
        continue;
      }
      pos_ += 2;
      const char e = in_[pos_ - 1];
      static constexpr std::string_view kFrom = "abeEfnrtv\\'\"?";
      static constexpr std::string_view kTo = "\a\b\x1b\x1b\f\n\r\t\v\\'\"?";
      if (const size_t i = kFrom.find(e); i != std::string_view::npos) {
        addChar(w, kTo[i], false);
      } else if (e >= '0' && e <= '7') {
        addCode(w, readDigits(e - '0', 8, 2), false);
      } else if (e == 'x' || e == 'u' || e == 'U') {
        const size_t max = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        if (!std::isxdigit(static_cast<unsigned char>(peek()))) {
          addChar(w, '\\', false);
          addChar(w, e, false);
          continue;
        }
        addCode(w, readDigits(0, 16, max), e != 'x');
      } else if (e == 'c' && !atEnd()) {
        addChar(w, static_cast<char>(std::toupper(static_cast<unsigned char>(peek())) & 0x1f),
                false);
        ++pos_;
      } else {
        addChar(w, '\\', false);
        addChar(w, e, false);
      }
    }
  }
  // Up to `max` more digits in `base` after the value `value` read so far.
  uint32_t readDigits(uint32_t value, uint32_t base, size_t max) {
    for (size_t n = 0; n < max && !atEnd(); ++n) {
      const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(peek())));
      uint32_t d = 0;
      if (c >= '0' && c <= '9') {
        d = static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        d = static_cast<uint32_t>(c - 'a' + 10);
      } else {
        break;
      }
      if (d >= base) break;
      value = value * base + d;
      ++pos_;
    }
    return value;
  }
  // A byte (\nnn, \xHH), or a code point as UTF-8 (\uHHHH, \UHHHHHHHH).
  static void addCode(Word& w, uint32_t code, bool unicode) {
    if (!unicode || code < 0x80) {
      addChar(w, static_cast<char>(code & 0xff), false);
      return;
    }
    std::string utf8;
    if (code < 0x800) {
      utf8 = {static_cast<char>(0xc0 | (code >> 6)), static_cast<char>(0x80 | (code & 0x3f))};
    } else if (code < 0x10000) {
      utf8 = {static_cast<char>(0xe0 | (code >> 12)),
              static_cast<char>(0x80 | ((code >> 6) & 0x3f)),
              static_cast<char>(0x80 | (code & 0x3f))};
    } else {
      utf8 = {static_cast<char>(0xf0 | ((code >> 18) & 0x07)),
              static_cast<char>(0x80 | ((code >> 12) & 0x3f)),
              static_cast<char>(0x80 | ((code >> 6) & 0x3f)),
              static_cast<char>(0x80 | (code & 0x3f))};
    }
    for (char c : utf8) addChar(w, c, false);
  }

  // A backtick substitution: its text, with \$ \` \\ (and \" in double quotes) unescaped, is
  // parsed when bash runs it, so an error there is deferred, not a syntax error of the line.
  void readBacktick(Word& w, bool in_double) {
    const size_t start = pos_++;
    std::string script;
    while (true) {
      if (atEnd()) fail(start, "the substitution ` is not closed");
      const char c = peek();
      if (c == '`') {
        ++pos_;
        break;
      }
      if (c == '\\' && pos_ + 1 < end_) {
        const char e = peek(1);
        if (e == '$' || e == '`' || e == '\\' || (in_double && e == '"')) {
          script += e;
          pos_ += 2;
          continue;
        }
      }
      script += c;
      ++pos_;
    }
    addExpansion(w, kSubstitution);
    w.substitutes = true;
    if (depth_ + 1 > kMaxDepth)
      fail(start, "nested more than " + std::to_string(kMaxDepth) + " levels deep");
    ParseResult inner = Parser(script, at(start), true, depth_ + 1, elements_).run();
    if (inner.error) {
      deferred_.push_back({at(start), "in the backtick substitution: " + inner.error->message});
    }
    for (SyntaxError& e : inner.deferred) deferred_.push_back(std::move(e));
    functions_ = functions_ || inner.functions;
    w.nested.push_back(std::move(inner.script));
  }

  // --- Heredocs ---

  struct Pending {
    std::shared_ptr<Heredoc> heredoc;
    std::string delimiter;
    bool strip_tabs;
  };

  // Reads the bodies of the heredocs whose operators were on the line just ended.
  void readPendingHeredocs() {
    if (pending_.empty()) return;
    std::vector<Pending> pending = std::move(pending_);
    pending_.clear();
    for (Pending& p : pending) {
      Heredoc& h = *p.heredoc;
      h.word = Word();
      h.begin = at(pos_);
      const size_t body_start = pos_;
      size_t body_end = end_;
      while (pos_ < end_) {
        const size_t eol = std::min(in_.find('\n', pos_), end_);
        std::string_view line = in_.substr(pos_, eol - pos_);
        if (p.strip_tabs) line.remove_prefix(std::min(line.find_first_not_of('\t'), line.size()));
        if (line == p.delimiter) {
          body_end = pos_;
          pos_ = eol < end_ ? eol + 1 : eol;
          break;
        }
        pos_ = eol < end_ ? eol + 1 : eol;
      }
      h.body = std::string(in_.substr(body_start, body_end - body_start));
      if (h.expands) readHeredocBody(h, body_start, body_end);
    }
  }

  // An expanding body is read as in double quotes, but `"` is an ordinary character there.
  void readHeredocBody(Heredoc& h, size_t from, size_t to) {
    const size_t saved_pos = pos_;
    const size_t saved_end = end_;
    const int saved_depth = depth_;
    std::vector<Pending> saved_pending = std::move(pending_);
    pending_.clear();
    pos_ = from;
    end_ = to;
    Word& w = h.word;
    w.begin = at(from);
    try {
      while (!atEnd()) {
        const char c = peek();
        if (c == '\\' && pos_ + 1 < end_ && std::strchr("$`\\\n", peek(1)) != nullptr) {
          if (peek(1) != '\n') addChar(w, peek(1), false);
          pos_ += 2;
        } else if (c == '$') {
          readDollar(w, true);
        } else if (c == '`') {
          readBacktick(w, true);
        } else {
          addChar(w, c, false);
          ++pos_;
        }
      }
    } catch (const Fail& f) {
      deferred_.push_back({f.error.offset, "in a heredoc's body: " + f.error.message});
      depth_ = saved_depth;
    }
    pending_ = std::move(saved_pending);
    w.end = at(to);
    pos_ = saved_pos;
    end_ = saved_end;
  }

  std::string_view in_;
  size_t end_;
  size_t pos_ = 0;
  uint32_t base_;
  bool fixed_;
  int depth_;
  size_t& elements_;  // shared with the parsers of backtick substitutions
  bool functions_ = false;
  mutable size_t reserved_at_ = std::string_view::npos;  // peekReserved's last answer
  mutable size_t reserved_end_ = 0;
  mutable std::string_view reserved_;
  std::vector<Pending> pending_;
  std::vector<SyntaxError> deferred_;
  // Where `((` or `$((` was tried as arithmetic and was not: never tried twice, so that nested
  // failures cannot multiply.
  std::unordered_set<size_t> arith_failed_;
};

}  // namespace

ParseResult parseBash(std::string_view text) {
  size_t elements = 0;
  return Parser(text, 0, false, 0, elements).run();
}

std::string describePosition(std::string_view text, uint32_t offset) {
  size_t line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(offset - line_start + 1);
}

bool isName(std::string_view s) {
  return !s.empty() && isNameStart(s[0]) && std::all_of(s.begin(), s.end(), isNameChar);
}

bool isAssignmentWord(const Word& w) {
  const std::string_view b = w.bare();
  if (b.empty() || !isNameStart(b[0])) return false;
  size_t i = 1;
  while (i < b.size() && isNameChar(b[i])) ++i;
  if (i < b.size() && b[i] == '[') {  // an array element: a[i]=x
    i = b.find(']', i);
    if (i == std::string::npos) return false;
    ++i;
  }
  if (i < b.size() && b[i] == '+') ++i;
  return i < b.size() && b[i] == '=';
}

// `[` alone is the test command, not a pattern.
bool hasGlob(std::string_view bare) {
  if (bare.find_first_of("*?") != std::string_view::npos) return true;
  const size_t open = bare.find('[');
  return open != std::string_view::npos && bare.find(']', open + 1) != std::string_view::npos;
}

bool hasBraceExpansion(std::string_view bare) {
  const size_t open = bare.find('{');
  if (open == std::string_view::npos) return false;
  const size_t close = bare.find('}', open);
  if (close == std::string_view::npos) return false;
  const std::string_view inside = bare.substr(open + 1, close - open - 1);
  return inside.find(',') != std::string_view::npos || inside.find("..") != std::string_view::npos;
}

}  // namespace byd::permissions::bash
