#!/usr/bin/env python3
"""Generates the edit_file corpus in edits/: model-style mangled old_text (and new_text)
against real-looking files, with the expected whole file computed here, independently of the
Go matcher: want = base with the true region replaced by the true new text in the file's
own style. Run from this directory: /usr/bin/python3 gen_edits.py
"""
import os, re, shutil

STATS = '''"""Small statistics helpers."""

from typing import Sequence


def mean(xs: Sequence[float]) -> float:
    """Return the arithmetic mean of xs."""
    if not xs:
        raise ValueError("mean of empty sequence")
    total = 0.0
    for x in xs:
        total += x
    return total / len(xs)


def median(xs: Sequence[float]) -> float:
    """Return the median of xs."""
    ordered = sorted(xs)
    n = len(ordered)
    mid = n // 2

    if n % 2 == 1:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2


def variance(xs: Sequence[float]) -> float:
    m = mean(xs)
    return sum((x - m) ** 2 for x in xs) / len(xs)


class Stats:
    """Running statistics."""

    def __init__(self) -> None:
        self.count  = 0
        self.total  = 0.0
        self.label  = "stats"

    def add(self, x: float) -> None:
        if x != x:
            raise ValueError("NaN is not a number we can add")
        self.count += 1
        self.total += x

    def average(self) -> float:
        if self.count == 0:
            return 0.0
        return self.total / self.count

    def describe(self) -> str:
        return f"{self.label}: {self.count} values, mean {self.average():.2f}"   
'''

HANDLERS = '''import json
import logging

log = logging.getLogger(__name__)


def parse_query(raw):
    """Split "a=1&b=2" into a dict."""
    out = {}
    for part in raw.split("&"):
        if not part:
            continue
        key, _, value = part.partition("=")
        out[key] = value
    return out


def render(status, body):
    headers = {"Content-Type": "application/json", "X-Tool": 'ticketd'}
    payload = json.dumps({"status": status, "body": body})
    log.info("render %s", status)
    return headers, payload


def handle(request):
    if request.method == "GET":
        query = parse_query(request.query)
        if "id" not in query:
            return render(400, "missing id")
        return render(200, query["id"])
    elif request.method == "POST":
        data = json.loads(request.body)
        return render(201, data)
    return render(405, "method not allowed")


def greet(name):
    return "Hello, " + name + "!\\n"
'''

MAINGO = '''package main

import (
\t"fmt"
\t"os"
)

type Config struct {
\tName    string
\tWorkers int
}

func load(path string) (*Config, error) {
\tdata, err := os.ReadFile(path)
\tif err != nil {
\t\treturn nil, fmt.Errorf("load %s: %w", path, err)
\t}
\tcfg := &Config{Name: string(data), Workers: 3}
\tif cfg.Workers <= 0 {
\t\tcfg.Workers = 1
\t}
\treturn cfg, nil
}

func main() {
\tcfg, err := load("config.txt")
\tif err != nil {
\t\tfmt.Fprintln(os.Stderr, err)
\t\tos.Exit(1)
\t}
\tfor i := 0; i < cfg.Workers; i++ {
\t\tfmt.Println("worker", i)
\t}
}
'''

LEGACY = '''def read_rows(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(line.split(","))
    return rows


def total(rows, column):
    s = 0
    for row in rows:
        s += int(row[column])
    return s
'''

APPJS = '''function sum(xs) {
  let total = 0;
  for (const x of xs) {
    total += x;
  }
  return total;
}

function format(user) {
  if (!user) {
    return "anonymous";
  }
  return `${user.first} ${user.last}`;
}

module.exports = { sum, format };
'''

# Two near-identical functions, for negatives.
TWINS = '''def load_users(db):
    rows = db.query("select * from users")
    result = []
    for row in rows:
        result.append(row)
    return result


def load_orders(db):
    rows = db.query("select * from orders")
    result = []
    for row in rows:
        result.append(row)
    return result


class A:
    def size(self):
        return len(self.items)


class B:
    class Inner:
        def size(self):
            return len(self.items)
'''

BASES = {"stats.py": (STATS, "\n"), "handlers.py": (HANDLERS, "\n"), "main.go": (MAINGO, "\n"),
         "legacy.py": (LEGACY, "\r\n"), "app.js": (APPJS, "\n"), "twins.py": (TWINS, "\n")}


def lines_map(s, f):
    trail = s.endswith("\n")
    ls = s[:-1].split("\n") if trail else s.split("\n")
    out = "\n".join(f(i, l) for i, l in enumerate(ls))
    return out + ("\n" if trail else "")


def dedent(k):
    def m(s):
        return lines_map(s, lambda i, l: l[k:] if l.startswith(" " * k) else l.lstrip(" "))
    return m


def indent(k):
    return lambda s: lines_map(s, lambda i, l: (" " * k + l) if l.strip() else l)


def tabs_to_spaces(w):
    def m(s):
        def f(i, l):
            n = len(l) - len(l.lstrip("\t"))
            return " " * (w * n) + l[n:]
        return lines_map(s, f)
    return m


def trailing(s):
    return lines_map(s, lambda i, l: l + ("  " if i % 2 == 0 and l.strip() else ""))


def rstrip_lines(s):
    return lines_map(s, lambda i, l: l.rstrip())


def collapse_inner(s):
    return lines_map(s, lambda i, l: (l[:len(l) - len(l.lstrip())] + re.sub(r"\s+", " ", l.strip())) if l.strip() else l)


def widen_inner(s):
    return lines_map(s, lambda i, l: (l[:len(l) - len(l.lstrip())] + l.strip().replace(" = ", "  =  ").replace(", ", ",   ")) if l.strip() else l)


def typographic(s):
    out, dq = [], True
    for c in s:
        if c == '"':
            out.append("\u201c" if dq else "\u201d")
            dq = not dq
        elif c == "'":
            out.append("\u2019")
        else:
            out.append(c)
    return "".join(out)


def escape(s):
    return s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")


def crlf(s):
    return s.replace("\n", "\r\n")


def outer_blank(n):
    return lambda s: "\n" * n + s + ("\n" * n)


def partial_first(s):
    ls = s.split("\n")
    ls[0] = ls[0].lstrip()
    return "\n".join(ls)


def drop_blank(s):
    ls = s.split("\n")
    for i in range(1, len(ls) - 1):
        if ls[i].strip() == "" and ls[i - 1].strip():
            del ls[i]
            return "\n".join(ls)
    raise SystemExit("drop_blank: no inner blank line in %r" % s)


def add_blank(s):
    ls = s.split("\n")
    at = max(1, len([l for l in ls if l]) // 2)
    ls.insert(at, "")
    return "\n".join(ls)


def compose(*fs):
    def m(s):
        for f in fs:
            s = f(s)
        return s
    return m


def ident(s):
    return s


cases = []


def pos(name, base, old, new, rung="", old_m=ident, new_m=None, want_new=None, replace_all=False, note=""):
    """A positive: the model sends old_m(old), new_m(new) (new_m defaults to old_m); the file
    must end up as base with old replaced by want_new (default: new), in the file's style."""
    content, eol = BASES[base]
    if new_m is None:
        new_m = old_m
    true_old, true_new = old, (want_new if want_new is not None else new)
    n = content.count(true_old)
    if n != 1 and not replace_all:
        raise SystemExit("%s: true old occurs %d times in %s" % (name, n, base))
    want = content.replace(true_old, true_new) if replace_all else content.replace(true_old, true_new, 1)
    cases.append(dict(name=name, base=base, file=content.replace("\n", eol), old=old_m(old), new=new_m(new),
                      want=want.replace("\n", eol), rung=rung, replace_all=replace_all, note=note))


def neg(name, base, old, new, note, replace_all=False):
    content, eol = BASES[base]
    cases.append(dict(name=name, base=base, file=content.replace("\n", eol), old=old, new=new, want=None,
                      rung="", replace_all=replace_all, note=note))


# --- regions of the base files ---------------------------------------------------------
MEAN_OLD = '''    if not xs:
        raise ValueError("mean of empty sequence")
    total = 0.0
'''
MEAN_NEW = '''    if len(xs) == 0:
        raise ValueError("mean() of an empty sequence")
    total = 0.0
'''
MEDIAN_OLD = '''    ordered = sorted(xs)
    n = len(ordered)
    mid = n // 2

    if n % 2 == 1:
        return ordered[mid]
'''
MEDIAN_NEW = '''    ordered = sorted(xs)
    n = len(ordered)
    if n == 0:
        raise ValueError("median of empty sequence")
    mid = n // 2

    if n % 2 == 1:
        return ordered[mid]
'''
ADD_OLD = '''    def add(self, x: float) -> None:
        if x != x:
            raise ValueError("NaN is not a number we can add")
        self.count += 1
        self.total += x
'''
ADD_NEW = '''    def add(self, x: float) -> None:
        if math.isnan(x):
            raise ValueError("NaN is not a number we can add")
        self.count += 1
        self.total += float(x)
'''
AVG_OLD = '''        if self.count == 0:
            return 0.0
        return self.total / self.count
'''
AVG_NEW = '''        if not self.count:
            return float("nan")
        return self.total / self.count
'''
INIT_OLD = '''        self.count  = 0
        self.total  = 0.0
        self.label  = "stats"
'''
INIT_NEW = '''        self.count = 0
        self.total = 0.0
        self.label = "stats"
        self.maximum = None
'''
VAR_OLD = '''def variance(xs: Sequence[float]) -> float:
    m = mean(xs)
    return sum((x - m) ** 2 for x in xs) / len(xs)
'''
VAR_NEW = '''def variance(xs: Sequence[float], ddof: int = 0) -> float:
    m = mean(xs)
    return sum((x - m) ** 2 for x in xs) / (len(xs) - ddof)
'''
DESCRIBE_OLD = '''        return f"{self.label}: {self.count} values, mean {self.average():.2f}"   
'''
DESCRIBE_NEW = '''        return f"{self.label}: {self.count} values, mean {self.average():.3f}"
'''
PARSE_OLD = '''    for part in raw.split("&"):
        if not part:
            continue
        key, _, value = part.partition("=")
        out[key] = value
'''
PARSE_NEW = '''    for part in raw.split("&"):
        if not part:
            continue
        key, _, value = part.partition("=")
        out.setdefault(key, value)
'''
RENDER_OLD = '''    headers = {"Content-Type": "application/json", "X-Tool": 'ticketd'}
    payload = json.dumps({"status": status, "body": body})
'''
RENDER_NEW = '''    headers = {"Content-Type": "application/json; charset=utf-8", "X-Tool": 'ticketd'}
    payload = json.dumps({"status": status, "body": body}, ensure_ascii=False)
'''
HANDLE_OLD = '''        query = parse_query(request.query)
        if "id" not in query:
            return render(400, "missing id")
        return render(200, query["id"])
'''
HANDLE_NEW = '''        query = parse_query(request.query)
        if not query.get("id"):
            return render(400, "missing id")
        return render(200, query["id"])
'''
POST_OLD = '''    elif request.method == "POST":
        data = json.loads(request.body)
        return render(201, data)
'''
POST_NEW = '''    elif request.method == "POST":
        try:
            data = json.loads(request.body)
        except ValueError:
            return render(400, "invalid JSON")
        return render(201, data)
'''
GREET_OLD = '''    return "Hello, " + name + "!\\n"
'''
GREET_NEW = '''    return "Hello, " + name.strip() + "!\\n"
'''
LOAD_OLD = '''\tdata, err := os.ReadFile(path)
\tif err != nil {
\t\treturn nil, fmt.Errorf("load %s: %w", path, err)
\t}
'''
LOAD_NEW = '''\tdata, err := os.ReadFile(path)
\tif err != nil {
\t\treturn nil, fmt.Errorf("read config %s: %w", path, err)
\t}
'''
WORKERS_OLD = '''\tif cfg.Workers <= 0 {
\t\tcfg.Workers = 1
\t}
'''
WORKERS_NEW = '''\tif cfg.Workers < 1 {
\t\tcfg.Workers = 1
\t}
'''
LOOP_OLD = '''\tfor i := 0; i < cfg.Workers; i++ {
\t\tfmt.Println("worker", i)
\t}
'''
LOOP_NEW = '''\tfor i := range cfg.Workers {
\t\tfmt.Println("worker", i+1)
\t}
'''
ROWS_OLD = '''        for line in f:
            line = line.strip()
            if line:
                rows.append(line.split(","))
'''
ROWS_NEW = '''        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                rows.append(line.split(","))
'''
TOTAL_OLD = '''    s = 0
    for row in rows:
        s += int(row[column])
    return s
'''
TOTAL_NEW = '''    s = 0
    for row in rows:
        s += int(row[column] or 0)
    return s
'''
SUM_OLD = '''  for (const x of xs) {
    total += x;
  }
'''
SUM_NEW = '''  for (const x of xs) {
    total += Number(x);
  }
'''
FORMAT_OLD = '''  if (!user) {
    return "anonymous";
  }
  return `${user.first} ${user.last}`;
'''
FORMAT_NEW = '''  if (!user) {
    return "anonymous";
  }
  return `${user.first} ${user.last}`.trim();
'''

# --- positives --------------------------------------------------------------------------
pos("exact-mean", "stats.py", MEAN_OLD, MEAN_NEW, "exact")
pos("exact-go-tabs", "main.go", LOAD_OLD, LOAD_NEW, "exact")
pos("exact-no-trailing-newline", "handlers.py", HANDLE_OLD.rstrip("\n"), HANDLE_NEW.rstrip("\n"), "exact")
pos("exact-js", "app.js", SUM_OLD, SUM_NEW, "exact")
pos("exact-crlf-text-on-crlf-file", "legacy.py", TOTAL_OLD, TOTAL_NEW, "exact", old_m=crlf)
pos("exact-delete-lines", "stats.py", "        if x != x:\n            raise ValueError(\"NaN is not a number we can add\")\n", "", "exact")
pos("exact-replace-all", "twins.py", "    result = []\n", "    result: list = []\n", "exact", replace_all=True)

pos("crlf-file-lf-text-total", "legacy.py", TOTAL_OLD, TOTAL_NEW, "line_endings")
pos("crlf-file-lf-text-rows", "legacy.py", ROWS_OLD, ROWS_NEW, "line_endings")
pos("crlf-file-lf-text-no-final-newline", "legacy.py", TOTAL_OLD.rstrip("\n"), TOTAL_NEW.rstrip("\n"), "line_endings")
pos("lf-file-crlf-text", "stats.py", MEAN_OLD, MEAN_NEW, "line_endings", old_m=crlf, new_m=crlf)
pos("lf-file-crlf-text-go", "main.go", WORKERS_OLD, WORKERS_NEW, "line_endings", old_m=crlf, new_m=crlf)

pos("trailing-spaces-in-old", "stats.py", MEAN_OLD, MEAN_NEW, "trailing_space", old_m=trailing, new_m=ident)
pos("trailing-spaces-in-old-handlers", "handlers.py", PARSE_OLD, PARSE_NEW, "trailing_space", old_m=trailing, new_m=ident)
pos("file-has-trailing-spaces", "stats.py", DESCRIBE_OLD, DESCRIBE_NEW, "trailing_space", old_m=rstrip_lines, new_m=ident)
pos("trailing-tab-in-old-go", "main.go", LOOP_OLD, LOOP_NEW, "trailing_space", old_m=lambda s: lines_map(s, lambda i, l: l + "\t"), new_m=ident)

pos("dedent-4-mean", "stats.py", MEAN_OLD, MEAN_NEW, "indent_shift", old_m=dedent(4))
pos("dedent-4-median", "stats.py", MEDIAN_OLD, MEDIAN_NEW, "indent_shift", old_m=dedent(4))
pos("dedent-8-average", "stats.py", AVG_OLD, AVG_NEW, "indent_shift", old_m=dedent(8))
pos("dedent-4-method", "stats.py", ADD_OLD, ADD_NEW, "indent_shift", old_m=dedent(4))
pos("indent-4-more-parse", "handlers.py", PARSE_OLD, PARSE_NEW, "indent_shift", old_m=indent(4))
pos("indent-2-more-handle", "handlers.py", HANDLE_OLD, HANDLE_NEW, "indent_shift", old_m=indent(2))
pos("dedent-4-post", "handlers.py", POST_OLD, POST_NEW, "indent_shift", old_m=dedent(4))
pos("dedent-2-js", "app.js", FORMAT_OLD, FORMAT_NEW, "indent_shift", old_m=dedent(2))
pos("indent-2-js", "app.js", SUM_OLD, SUM_NEW, "indent_shift", old_m=indent(2))
pos("dedent-4-crlf", "legacy.py", ROWS_OLD, ROWS_NEW, "indent_shift", old_m=dedent(8))
pos("dedent-4-variance-body", "stats.py", "    m = mean(xs)\n    return sum((x - m) ** 2 for x in xs) / len(xs)\n",
    "    m = mean(xs)\n    if len(xs) < 2:\n        return 0.0\n    return sum((x - m) ** 2 for x in xs) / len(xs)\n", "indent_shift", old_m=dedent(4))

pos("tabs-as-4-spaces-load", "main.go", LOAD_OLD, LOAD_NEW, "indent_shift", old_m=tabs_to_spaces(4))
pos("tabs-as-4-spaces-workers", "main.go", WORKERS_OLD, WORKERS_NEW, "indent_shift", old_m=tabs_to_spaces(4))
pos("tabs-as-8-spaces-loop", "main.go", LOOP_OLD, LOOP_NEW, "indent_shift", old_m=tabs_to_spaces(8))
pos("tabs-as-2-spaces-loop", "main.go", LOOP_OLD, LOOP_NEW, "whitespace", old_m=tabs_to_spaces(2))
pos("tabs-as-4-spaces-dedented", "main.go", LOAD_OLD, LOAD_NEW, "indent_shift", old_m=compose(tabs_to_spaces(4), dedent(4)))
pos("spaces-file-tab-text", "stats.py", AVG_OLD, AVG_NEW, "indent_shift", old_m=lambda s: s.replace("    ", "\t"))

pos("inner-spacing-collapsed", "stats.py", INIT_OLD, INIT_NEW, "whitespace", old_m=collapse_inner, new_m=ident)
pos("inner-spacing-widened", "handlers.py", RENDER_OLD, RENDER_NEW, "whitespace", old_m=widen_inner, new_m=ident)
pos("partial-first-line-mean", "stats.py", MEAN_OLD, MEAN_NEW, "exact", old_m=partial_first, note="a partial first line is still a substring")
pos("partial-first-line-handle", "handlers.py", HANDLE_OLD, HANDLE_NEW, "whitespace", old_m=compose(indent(2), partial_first))
pos("partial-first-line-go", "main.go", LOOP_OLD, LOOP_NEW, "whitespace", old_m=compose(tabs_to_spaces(4), indent(4), partial_first))
pos("partial-first-line-crlf", "legacy.py", TOTAL_OLD, TOTAL_NEW, "line_endings", old_m=partial_first)
pos("partial-first-line-crlf-shifted", "legacy.py", ROWS_OLD, ROWS_NEW, "whitespace", old_m=compose(dedent(2), partial_first))
pos("dedent-plus-trailing", "stats.py", MEDIAN_OLD, MEDIAN_NEW, "indent_shift", old_m=compose(dedent(4), trailing), new_m=dedent(4))
pos("mixed-indent-levels", "handlers.py", POST_OLD, POST_NEW, "whitespace",
    old_m=lambda s: lines_map(s, lambda i, l: l[4:] if i == 0 else "    " + l))

pos("typographic-quotes-render", "handlers.py", RENDER_OLD, RENDER_NEW, "escapes", old_m=typographic)
pos("typographic-quotes-mean", "stats.py", MEAN_OLD, MEAN_NEW, "escapes", old_m=typographic)
pos("typographic-quotes-old-only", "handlers.py", HANDLE_OLD, HANDLE_NEW, "escapes", old_m=typographic, new_m=ident)
pos("typographic-quotes-js", "app.js", FORMAT_OLD, FORMAT_NEW, "escapes", old_m=typographic)
pos("escaped-newlines-mean", "stats.py", MEAN_OLD, MEAN_NEW, "escapes", old_m=escape)
pos("escaped-newlines-parse", "handlers.py", PARSE_OLD, PARSE_NEW, "escapes", old_m=escape)
pos("escaped-newlines-go-tabs", "main.go", LOAD_OLD, LOAD_NEW, "escapes", old_m=escape)
pos("escaped-newlines-crlf", "legacy.py", TOTAL_OLD, TOTAL_NEW, "escapes", old_m=escape)
pos("escaped-newlines-old-only", "app.js", SUM_OLD, SUM_NEW, "escapes", old_m=escape, new_m=ident)
pos("escaped-and-dedented", "stats.py", AVG_OLD, AVG_NEW, "escapes", old_m=compose(dedent(8), escape))

pos("extra-outer-blank-lines", "stats.py", VAR_OLD, VAR_NEW, "blank_lines", old_m=outer_blank(3))
pos("extra-outer-blank-lines-go", "main.go", LOOP_OLD, LOOP_NEW, "blank_lines", old_m=outer_blank(2))
pos("missing-inner-blank-line", "stats.py", MEDIAN_OLD, MEDIAN_NEW, "blank_lines", old_m=drop_blank, new_m=ident)
pos("missing-inner-blank-line-both", "stats.py", MEDIAN_OLD, MEDIAN_NEW, "blank_lines", old_m=drop_blank, new_m=drop_blank, want_new=drop_blank(MEDIAN_NEW))
pos("extra-inner-blank-line", "handlers.py", PARSE_OLD, PARSE_NEW, "blank_lines", old_m=add_blank, new_m=ident)
pos("extra-inner-blank-line-js", "app.js", FORMAT_OLD, FORMAT_NEW, "blank_lines", old_m=add_blank, new_m=ident)
pos("extra-inner-blank-line-crlf", "legacy.py", ROWS_OLD, ROWS_NEW, "blank_lines", old_m=add_blank, new_m=ident)
pos("blank-line-and-dedent", "stats.py", MEDIAN_OLD, MEDIAN_NEW, "blank_lines", old_m=compose(drop_blank, dedent(4)), new_m=dedent(4))

pos("middle-line-changed-median", "stats.py", MEDIAN_OLD, MEDIAN_NEW, "anchors",
    old_m=lambda s: s.replace("    n = len(ordered)\n", "    n = len(xs)\n"), new_m=ident)
pos("middle-line-changed-add", "stats.py", ADD_OLD, ADD_NEW, "anchors",
    old_m=lambda s: s.replace("raise ValueError(\"NaN is not a number we can add\")", "raise ValueError(\"NaN is not a number\")"), new_m=ident)
pos("middle-line-changed-post", "handlers.py", POST_OLD, POST_NEW, "anchors",
    old_m=lambda s: s.replace("data = json.loads(request.body)", "data = json.loads(request.data)"), new_m=ident)
pos("middle-line-changed-go", "main.go", LOAD_OLD, LOAD_NEW, "anchors",
    old_m=lambda s: s.replace('"load %s: %w"', '"load %q: %v"'), new_m=ident)
neg("middle-code-line-missing", "handlers.py", PARSE_OLD.replace("        key, _, value = part.partition(\"=\")\n", ""), PARSE_NEW,
    "a code line missing from a 5-line block is too big a difference: refused, and the miss names the line")
pos("middle-line-extra", "stats.py", ADD_OLD, ADD_NEW, "anchors",
    old_m=lambda s: s.replace("        self.count += 1\n", "        self.count += 1\n        self.seen = True\n"), new_m=ident)
pos("middle-changed-and-dedented", "stats.py", ADD_OLD, ADD_NEW, "anchors",
    old_m=lambda s: dedent(4)(s.replace("        self.count += 1\n", "        self.count = self.count + 1\n")), new_m=dedent(4))

pos("replace-all-indent-shift", "twins.py", "        result.append(row)\n", "        result.append(dict(row))\n", "indent_shift",
    old_m=indent(2), replace_all=True)

# --- negatives --------------------------------------------------------------------------
neg("ambiguous-exact", "twins.py", "    result = []\n    for row in rows:\n", "    result = list(rows)\n", "occurs in both functions")
neg("ambiguous-exact-one-line", "twins.py", "    return result\n", "    return list(result)\n", "the line ends both functions")
neg("ambiguous-indent-shift", "twins.py", "def size(self):\n    return len(self.items)\n", "def size(self):\n    return 0\n", "A.size and B.Inner.size differ only in indentation")
neg("ambiguous-whitespace", "twins.py", "    result  =  []\n    for row  in  rows:\n", "    result = list(rows)\n", "inner spacing differs; two places after collapsing")
neg("ambiguous-body-of-twins", "twins.py", "    result = []\n    for row in rows:\n        result.append(row)\n    return result\n", "    return list(rows)\n", "the same body in load_users and load_orders")
neg("ambiguous-dedented-twins", "twins.py", "result = []\nfor row in rows:\n    result.append(row)\nreturn result\n", "return list(rows)\n", "dedented body of two functions")
neg("ambiguous-escaped-twins", "twins.py", "    result = []\\n    for row in rows:\\n", "    result = list(rows)\\n", "escaped text matching two places")
neg("ambiguous-anchors-twins", "twins.py", "    rows = db.query(\"select * from items\")\n    result = []\n    for row in rows:\n        result.append(row)\n    return result\n",
    "    return []\n", "middle matches both twins; first line matches neither exactly")
neg("absent-text", "stats.py", "def mode(xs):\n    return max(set(xs), key=xs.count)\n", "x", "no such function")
neg("absent-single-line", "handlers.py", "    return render(404, \"not found\")\n", "    return render(404, \"gone\")\n", "not in the file")
neg("wrong-file", "app.js", "def mean(xs):\n    return sum(xs) / len(xs)\n", "x", "Python text sent to a JS file")
neg("near-miss-wrong-function", "twins.py", "def load_users(db):\n    rows = db.query(\"select * from orders\")\n    result = []\n", "x", "signature of load_users with the query of load_orders")
neg("near-miss-logic-differs", "stats.py", "    total = 0.0\n    for x in xs:\n        total -= x\n", "x", "operator differs: a different program, not a copying slip")
neg("near-miss-one-line", "stats.py", "    return total * len(xs)\n", "    return total / len(xs)\n", "single line, different operator")
neg("two-lines-second-changed", "stats.py", "    m = mean(xs)\n    return sum(abs(x - m) for x in xs) / len(xs)\n", "x", "anchors need 3+ lines")
neg("anchors-middle-too-different", "stats.py", "def median(xs: Sequence[float]) -> float:\n    \"\"\"Return the median of xs.\"\"\"\n    import statistics\n    values = list(xs)\n    return statistics.median(values)\n    return (ordered[mid - 1] + ordered[mid]) / 2\n",
    "x", "first and last lines match median, the middle is another implementation")
neg("lines-out-of-order", "handlers.py", "        key, _, value = part.partition(\"=\")\n        if not part:\n            continue\n", "x", "same lines in another order")
neg("empty-old-text", "stats.py", "", "x = 1\n", "empty old_text")
neg("old-equals-new", "stats.py", MEAN_OLD, MEAN_OLD, "no change requested")
neg("whitespace-only-old", "stats.py", "\n\n", "\n", "only blank lines: ambiguous")
neg("ambiguous-replace-all-off-go", "main.go", "\t}\n", "\t} // end\n", "closing brace occurs many times")
neg("ambiguous-trailing-space", "twins.py", "    result = []  \n", "    result = list()\n", "trailing space variant of a line in two functions")
neg("go-wrong-function", "main.go", "func main() {\n\tcfg, err := load(\"config.txt\")\n\tif err != nil {\n\t\treturn nil, fmt.Errorf(\"load %s: %w\", path, err)\n", "x", "main's start with load's error line")


out = "edits"
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
for c in cases:
    kind = "pos" if c["want"] is not None else "neg"
    meta = ["kind: " + kind, "path: " + c["base"]]
    if c["rung"]:
        meta.append("rung: " + c["rung"])
    if c["replace_all"]:
        meta.append("replace_all: true")
    if c["note"]:
        meta.append("note: " + c["note"])
    parts = [("meta", "\n".join(meta) + "\n"), ("file", c["file"]), ("old", c["old"]), ("new", c["new"])]
    if c["want"] is not None:
        parts.append(("want", c["want"]))
    with open(os.path.join(out, "%s-%s.txtar" % (kind, c["name"])), "w", newline="") as f:
        # Sections are length-prefixed so any bytes (CRLF, trailing spaces, no final newline)
        # survive exactly.
        for name, body in parts:
            f.write("-- %s %d --\n" % (name, len(body.encode())))
            f.write(body)
            f.write("\n")
print(len([c for c in cases if c["want"] is not None]), "positives,", len([c for c in cases if c["want"] is None]), "negatives")
