"""Random bash programs for generated.jsonl (see make_corpus.py).

Generator(rng).program() returns a program that nests every construct in every other one, built
only from commands that print or set variables: echo, printf, true, false, :, test, [, [[, ((,
let, assignments, declare, export, local (in functions), read and select (from here-documents
and here-strings), set --, shift, unset, return, break, continue, wait, and calls of functions
defined before. Redirection targets are /dev/null, &1 and &2. Loops run at most a few times: for loops over short lists,
while/until loops count a variable of their own that nothing else assigns, functions only call
functions made before them. break_syntax(src) returns src with a syntax error put in.
"""

import dataclasses
import re

STR_VARS = ["s", "t"]
INT_VARS = ["n", "k"]
LITERALS = ["alpha", "beta", "x", "42", "-n", "--", "a.b", "k=v", "%s", "a/b/c", "+1", "3.5",
            "@home", "x,y", "file.txt", "-", "UPPER", "mixed_Case9"]
SQ_TEXT = ["a b", "$not_expanded", '"double"', "`tick`", ";|&<>", "$(no run)", "", " lead",
           "back\\slash", "*glob?"]
DQ_TEXT = ["a b", "it's", "x=1", "\\\"", "\\$", "semi;colon|pipe", "(paren)", "{b}", "#hash",
           "tab\there", "*star", "a\\\\b", "~tilde", "!bang"]
ANSI = ["$'a\\tb'", "$'line\\nnext'", "$'it\\'s'", "$'\\x41\\x42'", "$'\\u00e9'", "$'\\e[0m'",
        "$'nul\\0gone'", "$\"locale\""]
PATTERNS = ["a*", "*x*", "?", "[ab]*", '"lit"', "$s", "*.@(c|h)", "!(x)", "+(a)", "?(b)c",
            "[[:digit:]]*", "'q*'", "\\*", "*"]
CASE_PATTERNS = ["a*", "*x*", "?", "[ab]*", '"lit"', "$s", "[[:digit:]]*", "'q*'", "\\*",
                 "alpha", "x|y", "42|4?", "''", "${t:-z}"]
REGEXES = ["^a", "a|b", "^(x|y)+$", "[0-9]+", "^[[:alpha:]]", "(a)(b)?", "\\.txt$", "^(a b)$",
           "'lit.'*", "$s", "^$", "a{1,2}", "(^|/)c$", "[^/]+"]
REDIRECTS = [" >/dev/null", " 2>/dev/null", " >&2", " 2>&1", " &>/dev/null", " >>/dev/null",
             " </dev/null", " 1>&2", " 2>&1 >/dev/null", " >|/dev/null", " 3>/dev/null",
             " 2>>/dev/null", " &>>/dev/null", " <>/dev/null", " >/dev/null 2>&1"]
DOC_TEXT = ["plain text", 'quotes "stay" here', "it's fine", "price \\$5", "a ; b | c & d",
            "# not a comment", "{ braces } [ brackets ]", "(parens)", "tick \\` escaped", ""]
QUOTED_DOC = ["$(rm -rf /) stays text", "`touch x` too", "${x:?unset}", "\\ and \\\\", "'\"",
              "EOF_not_the_end", "if then fi"]


@dataclasses.dataclass(frozen=True)
class Ctx:
    depth: int = 0
    max_depth: int = 3
    oneline: bool = False
    loop: bool = False
    func: bool = False
    heredoc_ok: bool = True
    funcs: tuple = ()


class Generator:
    def __init__(self, rng):
        self.rng = rng
        self.uid = 0

    def pick(self, items):
        return self.rng.choice(items)

    def chance(self, p):
        return self.rng.random() < p

    def fresh(self, prefix):
        self.uid += 1
        return f"{prefix}{self.uid}"

    def weighted(self, table):
        """table: list of (weight, function or None); calls one of the available functions."""
        table = [(w, f) for w, f in table if f is not None and w > 0]
        x = self.rng.random() * sum(w for w, _ in table)
        for w, f in table:
            x -= w
            if x < 0:
                return f()
        return table[-1][1]()

    # ------------------------------------------------------------------ words

    def deeper(self, c, **changes):
        return dataclasses.replace(c, depth=c.depth + 1, **changes)

    def subst(self, opener, c, n):
        """$( ), <( ) or >( ) around a list. bash 5.2 refuses some lists that begin with time
        right after the parenthesis (`$(time (echo))`), so those begin on a new line."""
        body = self.list(self.deeper(c, loop=False), n)
        if body.startswith("("):
            body = " " + body
        elif body.startswith("time") and "(" in body:
            body = "\n" + body
        return opener + body + ")"

    def comsub(self, c):
        return self.subst("$(", c, self.rng.randint(1, 2))

    def backtick(self, c):
        words = [self.pick(LITERALS), "$" + self.pick(STR_VARS), "\\$n", "'q x'"]
        return "`" + self.pick(["echo", "printf '%s'", ":"]) + " " + self.pick(words) + "`"

    def arith(self, d=0):
        if d > 2 or self.chance(0.3):
            return self.pick([str(self.rng.randint(0, 9)), self.pick(INT_VARS), "$" +
                              self.pick(INT_VARS), "${#s}", "0x1f", "8#17", "${n:-2}"])
        kind = self.rng.randint(0, 7)
        a, b = self.arith(d + 1), self.arith(d + 1)
        if kind == 0:
            return f"{a} {self.pick(['/', '%'])} {self.rng.randint(1, 9)}"
        if kind == 1:
            return f"({a} {self.pick(['+', '-', '*'])} {b})"
        if kind == 2:
            return f"{a} ? {b} : {self.arith(d + 1)}"
        if kind == 3:
            return f"{self.pick(INT_VARS)} {self.pick(['=', '+=', '-=', '*='])} {a}"
        if kind == 4:
            return self.pick(["n++", "k--", "++n", "-k", "!n", "~k", "n ** 2", "1 << 3"])
        return f"{a} {self.pick(['<', '>', '<=', '>=', '==', '!=', '&&', '||', '&', '|', '^'])} {b}"

    def dq(self, c):
        parts = []
        for _ in range(self.rng.choice([1, 1, 2, 3])):
            parts.append(self.weighted([
                (4, lambda: self.pick(DQ_TEXT)),
                (3, lambda: "$" + self.pick(STR_VARS + INT_VARS + ["1", "#", "?", "@"])),
                (3, lambda: self.param()),
                (1, lambda: self.comsub(self.deeper(c)) if c.depth < c.max_depth else "$t"),
                (1, lambda: self.backtick(c)),
                (2, lambda: "$((" + self.arith() + "))"),
                (1, lambda: self.pick(['${arr[@]}', '${arr[0]}', '${#arr[@]}', '${!m[@]}',
                                       '${m[k]}', '${arr[*]:1}'])),
            ]))
        return '"' + "".join(parts) + '"'

    def param(self):
        v = self.pick(STR_VARS)
        op = self.pick(["", ":-dflt", ":-$t", ":=set", ":+alt", "-\"x y\"", "#*/", "##*.",
                        "%.*", "%%/*", "/a/b", "//[ab]/_", "^^", ",,", "^", ":1", ":0:2", ": -1",
                        "@Q", "@U", "-$(echo in)"])
        if self.chance(0.15):
            return "${#" + v + "}"
        return "${" + v + op + "}"

    def word(self, c, plain=False):
        """One word; plain words avoid brace expansion and process substitution."""
        deep = c.depth < c.max_depth
        return self.weighted([
            (25, lambda: self.pick(LITERALS)),
            (10, lambda: "'" + self.pick(SQ_TEXT) + "'"),
            (20, lambda: self.dq(c)),
            (12, lambda: "$" + self.pick(STR_VARS + INT_VARS + ["1", "#", "?", "-"])),
            (10, lambda: self.param()),
            (5, (lambda: self.comsub(self.deeper(c))) if deep else None),
            (3, lambda: self.backtick(c)),
            (6, lambda: "$((" + self.arith() + "))"),
            (4, None if plain else lambda: self.pick(["{a,b}", "{1..3}", "x{,.bak}",
                                                      "{a..c}{1,2}", "{5..1..2}"])),
            (4, lambda: self.pick(ANSI)),
            (6, lambda: self.pick(LITERALS) + self.dq(c) + "'" + self.pick(SQ_TEXT) + "'"),
            (3, lambda: self.pick(['"${arr[@]}"', "${#arr[@]}", '"${m[k]}"', "${arr[-1]}"])),
            (2, None if plain or not deep else
             lambda: self.subst(self.pick(["<(", ">("]), c, 1)),
        ])

    def words(self, c, lo=1, hi=2, plain=False):
        return [self.word(c, plain) for _ in range(self.rng.randint(lo, hi))]

    # ------------------------------------------------------------------ simple commands

    def cond(self, c, d=0):
        w = lambda: re.sub("^-", "x-", self.word(c, plain=True))  # noqa: E731
        if d < 2 and self.chance(0.35):
            kind = self.rng.randint(0, 3)
            if kind == 0:
                return f"{self.cond(c, d + 1)} && {self.cond(c, d + 1)}"
            if kind == 1:
                return f"{self.cond(c, d + 1)} || {self.cond(c, d + 1)}"
            if kind == 2:
                return f"! {self.cond(c, d + 1)}"
            return f"( {self.cond(c, d + 1)} )"
        return self.weighted([
            (3, lambda: f"{self.pick(['-n', '-z'])} {w()}"),
            (3, lambda: f"{w()} {self.pick(['==', '=', '!='])} {self.pick(PATTERNS)}"),
            (3, lambda: f"{w()} =~ {self.pick(REGEXES)}"),
            (1, lambda: f"{w()} {self.pick(['<', '>'])} {w()}"),
            (2, lambda: f"${self.pick(INT_VARS)} {self.pick(['-lt', '-eq', '-ge'])} "
                        f"{self.rng.randint(0, 5)}"),
            (1, lambda: self.pick(["-v s", "-e /dev/null", "-t 0", "-d /", "-o noglob", "-R t"])),
        ])

    def simple(self, c):
        rng = self.rng
        w = lambda lo=1, hi=2: " ".join(self.words(c, lo, hi))  # noqa: E731
        sv, iv = self.pick(STR_VARS), self.pick(INT_VARS)
        cmd = self.weighted([
            (14, lambda: "echo " + self.pick(["", "-n ", "-e ", "-E "]) + w()),
            (8, lambda: self.pick(["printf '%s\\n' ", "printf '<%s>' ", "printf '%q\\n' ",
                                   "printf '%5s|%-3s|\\n' ", "printf '%b' ", "printf -- "])
             + w()),
            (3, lambda: f"printf '%d %s\\n' $(({self.arith()})) {self.word(c)}"),
            (2, lambda: f"printf -v {sv} '%s-%s' {w(2, 2)}"),
            (4, lambda: self.pick(["true", "false", ":"]) + rng.choice(["", " " + w()])),
            (4, lambda: self.pick([f"test -n {self.word(c)}", f"[ -z {self.word(c)} ]",
                                   f"[ {self.word(c)} = {self.word(c)} ]", f"[ ! {self.word(c)} ]",
                                   f'[ "${iv}" -lt 3 ]', f"test {self.word(c)} != x -a -n y"])),
            (5, lambda: "[[ " + self.cond(c) + " ]]"),
            (4, lambda: "(( " + self.arith() + " ))"),
            (3, lambda: self.pick([f"let '{iv} = {self.arith()}'", f"let {iv}++",
                                   f"let 'k=n+1' n--"])),
            (10, lambda: self.weighted([
                (4, lambda: f"{sv}={self.word(c, plain=True)}"),
                (3, lambda: f"{iv}=$(({self.arith()}))"),
                (2, lambda: f"arr=({w(0, 3)})"),
                (1, lambda: f"arr+=({w()})"),
                (1, lambda: f"declare -A m=([k]={self.word(c, True)} [j]={self.word(c, True)})"),
                (1, lambda: f"m[k]={self.word(c, True)}"),
                (1, lambda: f"declare -i {iv}='{self.arith()}'"),
                (1, lambda: f"export {sv}={self.word(c, True)}"),
                (1, lambda: f"{sv}+={self.word(c, True)}"),
                (1, lambda: f"{sv}={self.word(c, True)} {iv}=$(({self.arith()}))"),
            ])),
            (3, lambda: f"{sv}={self.word(c, True)} " + self.pick(["echo ", ": ", "printf '%s' "])
             + w()),
            (3, lambda: self.pick([f"set -- {w()}", "shift", "shift 1", f"unset {sv}",
                                   f"unset -v {iv}", "set --"])),
            (3, lambda: self.pick([f"read -r {sv} <<< {self.word(c)}",
                                   f"read -r s t <<< {self.dq(c)}",
                                   f"IFS=, read -r s t <<< 'a,b,c'",
                                   f"read -ra arr <<< {self.word(c)}"])),
            (4 if c.func else 0, lambda: self.pick([f"local {sv}={self.word(c, True)}",
                                                    f"local -i {iv}={rng.randint(0, 9)}",
                                                    f"local {sv}", "local -a arr=(1 2)"])),
            (1 if c.func else 0, lambda: self.pick(["return", "return 1", "return 0"])),
            (2 if c.loop else 0, lambda: self.pick(["break", "continue", "break 1"])),
            (6 if c.funcs else 0, lambda: self.pick(c.funcs) + rng.choice(["", " " + w()])),
        ])
        if self.chance(0.15):
            cmd += self.pick(REDIRECTS)
        if self.chance(0.015):  # a line continuation
            cmd = cmd.replace(" ", " \\\n    ", 1)
        return cmd

    # ------------------------------------------------------------------ lists

    def sep(self, c):
        return "; " if c.oneline else "\n"

    def term(self, text, c, sep=None):
        """text followed by what ends it before another command or a closing word."""
        if text.endswith("\n"):
            return text
        if sep is None and not c.oneline and self.chance(0.06):
            return text + "  # note\n"
        return text + (sep if sep is not None else self.sep(c))

    def list(self, c, n=None, first=()):
        items = list(first)
        c = dataclasses.replace(c)
        for _ in range(n if n is not None else self.rng.randint(1, 3)):
            item = self.and_or(c)
            if isinstance(item, tuple):  # a function definition: later items may call it
                item, name = item
                c = dataclasses.replace(c, funcs=c.funcs + (name,))
            items.append(item)
        if not items:
            return ""
        out = items[0]
        for item in items[1:]:
            out = self.term(out, c) + item
        return out

    def and_or(self, c):
        if c.depth < c.max_depth and self.chance(0.06) and c.heredoc_ok:
            return self.heredoc(c)
        if c.depth < c.max_depth and self.chance(0.08):
            return self.function(c)
        out = self.pipeline(c)
        for _ in range(self.rng.choice([0, 0, 0, 1, 1, 2])):
            op = self.pick([" && ", " || "]) if c.oneline else self.pick([" && ", " || ",
                                                                          " &&\n", " ||\n"])
            out += op + self.pipeline(c)
        if self.chance(0.03):
            out += " & wait"
        return out

    def pipeline(self, c):
        n = self.rng.choice([1, 1, 1, 1, 2, 2, 3])
        inner = self.deeper(c, loop=False) if n > 1 else c
        parts = [self.command(inner) for _ in range(n)]
        out = parts[0]
        for p in parts[1:]:
            out += self.pick([" | ", " | ", " |& "]) + p
        prefix = self.weighted([(20, lambda: ""), (2, lambda: "! "), (1, lambda: "time "),
                                (1, lambda: "time -p "), (1, lambda: "! time ")])
        return prefix + out

    def command(self, c):
        if c.depth >= c.max_depth or self.chance(0.5 + 0.12 * c.depth):
            return self.simple(c)
        d = self.deeper(c)
        return self.weighted([
            (4, lambda: self.if_(d)),
            (3, lambda: self.for_in(d)),
            (2, lambda: self.for_arith(d)),
            (2, lambda: self.while_(d)),
            (3, lambda: self.case(d)),
            (2, lambda: "{ " + self.term(self.list(d), c, "; ") + "}" + self.redirect()),
            (2, lambda: "( " + self.list(dataclasses.replace(d, loop=False)) + " )"
             + self.redirect()),
            (1, lambda: self.select(d)),
        ])

    def redirect(self):
        return self.pick(REDIRECTS) if self.chance(0.3) else ""

    # ------------------------------------------------------------------ compound commands

    def do_done(self, body, c, brace_ok=False):
        if brace_ok and self.chance(0.1):
            return "{ " + self.term(body, c, "; ") + "}"
        return self.pick(["do ", "do\n"] if not c.oneline else ["do "]) + self.term(body, c) + "done"

    def if_(self, c):
        out = "if " + self.term(self.list(c, 1), c, "; ") + "then " + self.term(self.list(c), c)
        for _ in range(self.rng.choice([0, 0, 1, 2])):
            out += "elif " + self.term(self.list(c, 1), c, "; ") + "then " + self.term(
                self.list(c), c)
        if self.chance(0.5):
            out += "else " + self.term(self.list(c), c)
        return out + "fi" + self.redirect()

    def for_in(self, c):
        var = self.pick(STR_VARS + ["v", "_", "x"])
        body = self.list(dataclasses.replace(c, loop=True))
        if self.chance(0.1):
            head = f"for {var}"  # over "$@"
        else:
            head = f"for {var} in {' '.join(self.words(c, 0, 3))}"
        return head + self.pick(["; ", "\n"] if not c.oneline else ["; "]) + self.do_done(
            body, c, brace_ok=True)

    def for_arith(self, c):
        i = self.fresh("i")
        head = self.pick([f"for (({i} = 0; {i} < {self.rng.randint(0, 3)}; {i}++))",
                          f"for (({i}=3; {i}>0; {i}--))", f"for (( {i}=1; {i}<=4; {i}*=2 ))",
                          f"for ((; {i}++ < 2; ))"])
        body = self.list(dataclasses.replace(c, loop=True))
        return head + self.pick(["; ", " "]) + self.do_done(body, c, brace_ok=True)

    def while_(self, c):
        w = self.fresh("w")
        head = self.pick([f"while (( {w}++ < {self.rng.randint(1, 3)} ))",
                          f"until (( {w}++ >= {self.rng.randint(1, 3)} ))",
                          f"while [ $(( {w}++ )) -lt 2 ]", f"until [[ $(( {w}++ )) -ge 2 ]]"])
        if self.chance(0.2):
            return (f"while read -r {self.pick(STR_VARS)}; " + self.do_done(
                self.list(dataclasses.replace(c, loop=True)), c)
                + " <<< " + self.pick(["$'a\\nb'", "\"one\"", "$'x y\\nz\\n'", "''"]))
        body = self.list(dataclasses.replace(c, loop=True))
        return head + "; " + self.do_done(body, c)

    def case(self, c):
        out = "case " + self.word(c, plain=True) + self.pick([" in", "\nin"]) + (
            " " if c.oneline else "\n")
        n = self.rng.randint(1, 4)
        for j in range(n):
            pats = "|".join(self.pick(CASE_PATTERNS) for _ in range(self.rng.randint(1, 2)))
            body = self.list(c, self.rng.choice([0, 1, 1, 2])) if self.chance(0.9) else ""
            end = self.pick([";;", ";;", ";;", ";&", ";;&"])
            if j == n - 1 and self.chance(0.3):
                end = ""
            item = self.pick(["", "("]) + pats + ") " + body
            if body.endswith("\n"):
                item += end + ("\n" if end or not c.oneline else "")
            elif end:
                item += " " + end + (" " if c.oneline else "\n")
            else:
                item += self.sep(c) if body else (" " if c.oneline else "\n")
            out += item
        return out + "esac" + self.redirect()

    def select(self, c):
        body = self.list(dataclasses.replace(c, loop=True))
        return (f"select {self.pick(STR_VARS)} in {' '.join(self.words(c, 1, 3))}; do "
                + self.term(body, c) + "break; done <<< " + self.pick(["1", "2", "''", "x"]))

    def function(self, c):
        name = self.fresh(self.pick(["f", "fn_", "do.", "my-"]))
        d = self.deeper(c, func=True, loop=False)
        body = self.list(d)
        form = self.rng.randint(0, 4)
        if form == 0:
            text = f"{name}() {{ " + self.term(body, c, "; ") + "}"
        elif form == 1:
            text = f"function {name} {{ " + self.term(body, c, "; ") + "}"
        elif form == 2:
            text = f"function {name}() ( " + body + " )"
        elif form == 3:
            text = f"{name} () {{\n" + self.term(body, c, "\n") + "}"
        else:
            text = f"{name}() " + self.if_(d)
        calls = [f"{name}" + "".join(" " + w for w in self.words(c, 0, 2))
                 for _ in range(self.rng.randint(1, 2))]
        for call in calls:
            text = self.term(text, c) + call
        return text, name

    def heredoc(self, c):
        delim = self.fresh(self.pick(["EOF", "END", "X", "__DOC", "EOT"]))
        quoted = self.chance(0.3)
        dash = self.chance(0.25)
        word = (self.pick([f"'{delim}'", f'"{delim}"', f"\\{delim}", f"{delim[0]}'{delim[1:]}'"])
                if quoted else delim)
        op = ("<<-" if dash else "<<") + self.pick(["", " "]) + word
        one = dataclasses.replace(c, oneline=True, heredoc_ok=False)
        form = self.rng.randint(0, 5)
        if form == 0:
            head = f"read -r s t {op}"
        elif form == 1:
            head = f": {op}"
        elif form == 2:
            head = f"{{ read -r s; read -r t; }} {op}"
        elif form == 3:
            body = self.list(dataclasses.replace(one, loop=True, depth=c.depth + 1), 1)
            head = f"while read -r s; do {self.term(body, one, '; ')}done {op}"
        elif form == 4:
            other = self.fresh("B")
            lines = [self.doc_line(c, False) for _ in range(self.rng.randint(1, 2))]
            head = f"read -r s <<{other}; read -r t {op}"
            first = "\n".join(lines) + "\n" + other
            return self.doc(head + self.tail(one), first, c, delim, quoted, dash)
        else:
            head = f"read -r s {op}"
        return self.doc(head + self.tail(one), None, c, delim, quoted, dash)

    def tail(self, one):
        return self.weighted([(6, lambda: ""), (1, lambda: ' && echo "$s"'),
                              (1, lambda: " || " + self.simple(one)), (1, lambda: " | true"),
                              (1, lambda: "; " + self.simple(one)), (1, self.redirect)])

    def doc(self, head, before, c, delim, quoted, dash):
        lines = [self.doc_line(c, quoted) for _ in range(self.rng.randint(1, 4))]
        tabs = (lambda: "\t" * self.rng.randint(0, 2)) if dash else (lambda: "")
        body = "\n".join(tabs() + line for line in lines)
        return head + "\n" + (before + "\n" if before else "") + body + "\n" + tabs() + delim + "\n"

    def doc_line(self, c, quoted):
        if quoted:
            return self.pick(QUOTED_DOC + DOC_TEXT)
        inner = self.deeper(c, heredoc_ok=False, loop=False)
        parts = [self.weighted([
            (3, lambda: self.pick(DOC_TEXT)),
            (2, lambda: "$" + self.pick(STR_VARS + INT_VARS) + " and " + self.param()),
            (2, lambda: "sum $((" + self.arith() + "))"),
            (4, lambda: self.comsub(inner) if c.depth < c.max_depth else "$(echo deep)"),
            (1, lambda: self.backtick(inner)),
        ]) for _ in range(self.rng.randint(1, 2))]
        return " ".join(parts)

    # ------------------------------------------------------------------ programs

    def program(self, limit=1500):
        while True:
            self.uid = 0
            c = Ctx(max_depth=self.rng.choice([1, 2, 2, 3, 3, 4]), oneline=self.chance(0.5))
            src = self.list(c, self.rng.randint(1, 3)).rstrip("\n")
            if src and len(src) <= limit:
                return src

    # ------------------------------------------------------------------ syntax errors

    def break_syntax(self, src):
        rng = self.rng
        closers = [m for m in re.finditer(r"(?<=[;\n ])(fi|done|esac|\})(?=$|[\s;)|&])", src)]
        openers = [m for m in re.finditer(r"(?<=[;\n ])(then|do)(?=[\s])|^(then|do)\s", src)]

        def drop(ms):
            if not ms:
                return None
            m = rng.choice(ms)
            return src[:m.start()] + src[m.end():]

        def insert(text):
            spots = [0] + [m.end() for m in re.finditer(r"; ", src)]
            at = rng.choice(spots)
            return src[:at] + text + src[at:]

        def sub(pattern, repl):
            new = re.sub(pattern, repl, src, count=1)
            return new if new != src else None

        def append(text, seps=(" ",)):
            return src + ("" if src.endswith("\n") else rng.choice(seps)) + text

        mutations = [
            lambda: drop(closers), lambda: drop(closers), lambda: drop(openers),
            lambda: insert(self.pick(["then ", "do ", "fi; ", "done; ", "esac; ", "} ", "elif ",
                                      "else ", "in ", ";; ", ")"])),
            lambda: append(self.pick(["'", '"', "$'x", "`", "$(echo", "${s", "$((1", "\"$(\"",
                                      "<(true"])),
            lambda: sub(r"\{ ", "{"), lambda: sub(r"\bcase (\S+) in\b", r"case \1"),
            lambda: sub(r"for \(\(([^;]*);([^;]*);[^)]*\)\)", r"for ((\1;\2))"),
            lambda: sub(r"for \(\([^)]*\)\)", "for (( ))"),
            lambda: sub(r" \| ", " | | "), lambda: sub(r" && ", " && ; "),
            lambda: sub(r"\$\(", "$( ("), lambda: sub(r"\)\s*$", ""),
            lambda: append(self.pick(["&&", "|", "||", ";;", "| |", "&& ;", "; ;", "&;"])),
            lambda: append(self.pick(["echo @(a|b)", "[[ a b ]]", "[[ ]]", "[[ -n ]]",
                                      "echo a=(1)", ": <<", "function f_x", "f_y() echo",
                                      "( )", "{ }", "x=1 f() { :; }", "if; then :; fi",
                                      "while do :; done", "for v in a b do :; done",
                                      "case x in a) ;; ;; esac", "if :; then fi",
                                      "case x in @(a)) ;; esac", "for ((i=0; i<2)); do :; done",
                                      "(( 1 +", "echo ))", "then", "} }", "done done"]),
                           ("; ", "\n")),
        ]
        for _ in range(20):
            out = rng.choice(mutations)()
            if out is not None and out != src:
                return out
        return src + " |"
