"""A corpus of edits models send that do not match a file exactly: the file, the old_text and
new_text a model sent, and the file expected after (or None: the edit must stay refused).

The kinds of mistakes are the ones Aider's and OpenCode's public write-ups on edit formats describe
(whitespace and indentation drift, line numbers copied from a numbered view, "smart" punctuation,
line-ending and BOM differences, elided or invented lines) plus what cog's own runs showed. Written
for cog (no text copied from elsewhere). ``test_edit_corpus.py`` runs every case through
``edit_file`` and counts how many land with the exact rule alone and with the tolerant rules.
Trailing spaces are written inside string literals (``L(...)``) so no editor strips them.
"""

from __future__ import annotations

from dataclasses import dataclass


def L(*lines: str, end: str = "\n") -> str:
    """Lines joined, each ended by ``end``."""
    return "".join(line + end for line in lines)


def num(first: int, *lines: str) -> str:
    """Lines as read_file shows them: ``{n:>6}\\t{line}``."""
    return "".join(f"{n:>6}\t{line}\n" for n, line in enumerate(lines, start=first))


@dataclass(frozen=True)
class Case:
    name: str
    file: str | bytes  # str: written as UTF-8
    old: str
    new: str
    after: str | bytes | None  # None: the edit must be refused and the file left as it was
    rule: str | None = None  # the rule expected to find it (None: any, or refused)

    def file_bytes(self) -> bytes:
        return self.file if isinstance(self.file, bytes) else self.file.encode()

    def after_bytes(self) -> bytes | None:
        return self.after.encode() if isinstance(self.after, str) else self.after


PY = L(
    "import os",
    "",
    "",
    "def load(path):",
    '    """Read the config."""',
    "    with open(path) as f:",
    "        data = f.read()",
    "    return parse(data)",
    "",
    "",
    "class Store:",
    "    def __init__(self, root):",
    "        self.root = root",
    "        self.cache = {}",
    "",
    "    def get(self, key):",
    "        if key in self.cache:",
    "            return self.cache[key]",
    "        value = self._read(key)",
    "        self.cache[key] = value",
    "        return value",
)

PY_TRAILING = L(
    "def total(items):  ",
    "    result = 0    ",
    "    for item in items:\t",
    "        result += item.price",
    "    return result  ",
)

JS = L(
    "export function render(list) {",
    "  const out = [];",
    "  for (const item of list) {",
    "    if (item.hidden) {",
    "      continue;",
    "    }",
    "    out.push(`<li>${item.name}</li>`);",
    "  }",
    "  return out.join('');",
    "}",
)

GO_TABS = L(
    "func Sum(xs []int) int {",
    "\ttotal := 0",
    "\tfor _, x := range xs {",
    "\t\ttotal += x",
    "\t}",
    "\treturn total",
    "}",
)

MD = L(
    "# Release notes",
    "",
    "The parser now handles \u201cquoted\u201d keys \u2014 see the docs.",
    "Don\u2019t use the old flag.",
    "Costs\u00a0100\u00a0ms at most.",
)

REPEATED = L(
    "def a():",
    "    x = 1",
    "    return x",
    "",
    "def b():",
    "    x = 1  ",
    "    return x",
)

CASES: list[Case] = [
    # --- exact (controls: land before and after) ---
    Case("exact one line", PY, "        self.cache = {}", "        self.cache = dict()", PY.replace("self.cache = {}", "self.cache = dict()"), "exact"),
    Case("exact block", PY, L("    with open(path) as f:", "        data = f.read()"), L("    with open(path, encoding='utf-8') as f:", "        data = f.read()"),
         PY.replace("open(path) as f", "open(path, encoding='utf-8') as f"), "exact"),
    # --- trailing whitespace ---
    Case("file has trailing spaces the model dropped", PY_TRAILING, L("def total(items):", "    result = 0"), L("def total(items):", "    result = 0.0"),
         PY_TRAILING.replace("def total(items):  \n    result = 0    \n", "def total(items):\n    result = 0.0\n"), "trailing-whitespace"),
    Case("trailing tab dropped", PY_TRAILING, L("    for item in items:", "        result += item.price"), L("    for item in items:", "        result += item.price * item.qty"),
         PY_TRAILING.replace("    for item in items:\t\n        result += item.price\n", "    for item in items:\n        result += item.price * item.qty\n"), "trailing-whitespace"),
    Case("model added trailing spaces", PY, L("    def get(self, key):  ", "        if key in self.cache:"), L("    def get(self, key):", "        if key in self.cache and key:"),
         PY.replace("        if key in self.cache:\n", "        if key in self.cache and key:\n"), "trailing-whitespace"),
    Case("last line without its trailing spaces (exact: a prefix of the line)", PY_TRAILING, "    return result", "    return round(result, 2)",
         PY_TRAILING.replace("    return result  \n", "    return round(result, 2)  \n"), "exact"),
    Case("blank line with spaces in the file", L("a = 1", "    ", "b = 2"), L("a = 1", "", "b = 2"), L("a = 1", "", "b = 3"), L("a = 1", "", "b = 3"), "trailing-whitespace"),
    Case("more trailing spaces than the file on a partial line", L("x = compute()   ", "y = 2"), "x = compute()     ", "x = compute(fast=True)", L("x = compute(fast=True)   ", "y = 2"), "trailing-whitespace"),
    # --- indentation shifted as a block ---
    Case("method body sent without its class indent", PY, L("def get(self, key):", "    if key in self.cache:", "        return self.cache[key]"),
         L("def get(self, key):", "    if key in self.cache:", "        return self.cache[key].copy()"),
         PY.replace("            return self.cache[key]\n", "            return self.cache[key].copy()\n"), "indentation"),
    Case("block sent with extra indent", PY, L("        with open(path) as f:", "            data = f.read()"), L("        with open(path) as f:", "            data = f.read().strip()"),
         PY.replace("        data = f.read()\n", "        data = f.read().strip()\n"), "indentation"),
    Case("inner block dedented fully", PY, L("if key in self.cache:", "    return self.cache[key]", "value = self._read(key)"),
         L("if key in self.cache:", "    return self.cache[key]", "value = self._load(key)", "log(key)"),
         PY.replace("        value = self._read(key)\n", "        value = self._load(key)\n        log(key)\n"), "indentation"),
    Case("JS with two-space shift", JS, L("if (item.hidden) {", "  continue;", "}"), L("if (item.hidden || !item.name) {", "  continue;", "}"),
         JS.replace("if (item.hidden) {", "if (item.hidden || !item.name) {"), "indentation"),
    Case("Go tabs, block sent at top level", GO_TABS, L("for _, x := range xs {", "\ttotal += x", "}"), L("for _, x := range xs {", "\ttotal += x * x", "}"),
         GO_TABS.replace("\t\ttotal += x\n", "\t\ttotal += x * x\n"), "indentation"),
    Case("indent shift with a blank line inside", PY, L("def __init__(self, root):", "    self.root = root", "    self.cache = {}", "", "def get(self, key):"),
         L("def __init__(self, root):", "    self.root = root", "    self.cache = {}", "    self.hits = 0", "", "def get(self, key):"),
         PY.replace("        self.cache = {}\n", "        self.cache = {}\n        self.hits = 0\n"), "indentation"),
    Case("indent shift and trailing spaces together", PY_TRAILING, L("  for item in items:", "      result += item.price"), L("  for item in items:", "      result -= item.price"),
         PY_TRAILING.replace("    for item in items:\t\n        result += item.price\n", "    for item in items:\n        result -= item.price\n"), "indentation"),
    # --- line numbers copied from read_file ---
    Case("read_file numbers on every line", PY, num(6, "    with open(path) as f:", "        data = f.read()"), L("    with open(path) as f:", "        data = f.read(4096)"),
         PY.replace("f.read()", "f.read(4096)"), "line-numbers"),
    Case("numbers in old_text and new_text", PY, num(13, "        self.root = root"), num(13, "        self.root = Path(root)"),
         PY.replace("self.root = root", "self.root = Path(root)"), "line-numbers"),
    Case("numbers with a blank numbered line", PY, num(14, "        self.cache = {}", "", "    def get(self, key):"), num(14, "        self.cache = {}", "", "    def get(self, key, default=None):"),
         PY.replace("def get(self, key):", "def get(self, key, default=None):"), "line-numbers"),
    Case("numbered blank line without its tab", PY, "    14\t        self.cache = {}\n    15\n    16\t    def get(self, key):\n",
         L("        self.cache = {}", "", "    def get(self, key: str):"), PY.replace("def get(self, key):", "def get(self, key: str):"), "line-numbers"),
    Case("closest-lines feedback copied (> marker)", PY, ">   19\t        value = self._read(key)\n", "        value = self._read(key) or None\n",
         PY.replace("value = self._read(key)\n", "value = self._read(key) or None\n"), "line-numbers"),
    Case("numbers and no final newline", JS, "     9\t  return out.join('');", "  return out.join('\\n');", JS.replace("out.join('')", "out.join('\\n')"), "line-numbers"),
    Case("numbers and an indent shift", PY, num(17, "if key in self.cache:", "    return self.cache[key]"), L("if key in self.cache:", "    return self.cache.get(key)"),
         PY.replace("return self.cache[key]", "return self.cache.get(key)"), "line-numbers"),
    # --- line endings and BOM ---
    Case("CRLF old_text in an LF file", PY, "        self.root = root\r\n        self.cache = {}\r\n", "        self.root = root\r\n        self.cache = []\r\n",
         PY.replace("self.cache = {}", "self.cache = []"), "line-endings"),
    Case("LF old_text in a mixed-ending file", b"a = 1\r\nb = 2\r\nc = 3\n", "a = 1\nb = 2\n", "a = 1\nb = 20\n", b"a = 1\r\nb = 20\r\nc = 3\n", "line-endings"),
    Case("BOM copied into old_text", "\ufeffname = 'x'\nsize = 2\n".encode(), "\ufeffname = 'x'\n", "name = 'y'\n", "\ufeffname = 'y'\nsize = 2\n".encode(), "line-endings"),
    Case("CRLF file, LF old_text (exact already)", L("one", "two", "three", end="\r\n").encode(), "one\ntwo\n", "one\n2\n", L("one", "2", "three", end="\r\n").encode(), "exact"),
    Case("mixed file, partial line across a CRLF", b"if ok:\r\n    go()\nend\n", "ok:\n    go", "ok:\n    run", b"if ok:\r\n    run()\nend\n", "line-endings"),
    # --- Unicode punctuation ---
    Case("curly quotes in the file, straight sent", MD, 'handles "quoted" keys', 'handles "quoted" and bare keys',
         MD.replace("handles \u201cquoted\u201d keys", 'handles "quoted" and bare keys'), "unicode-punctuation"),
    Case("apostrophe", MD, "Don't use the old flag.", "Do not use the old flag.", MD.replace("Don\u2019t use the old flag.", "Do not use the old flag."), "unicode-punctuation"),
    Case("em dash sent as hyphen", MD, "keys - see the docs.", "keys; see the docs.", MD.replace("keys \u2014 see the docs.", "keys; see the docs."), "unicode-punctuation"),
    Case("non-breaking spaces", MD, "Costs 100 ms at most.", "Costs 120 ms at most.", MD.replace("Costs\u00a0100\u00a0ms at most.", "Costs 120 ms at most."), "unicode-punctuation"),
    Case("model sent curly quotes, file straight", PY, "    \u201c\u201d\u201dRead the config.\u201d\u201d\u201d", '    """Read the configuration file."""',
         PY.replace('"""Read the config."""', '"""Read the configuration file."""'), "unicode-punctuation"),
    Case("en dash in code sent as minus", L("gap = end \u2013 start", "print(gap)"), "gap = end - start", "gap = end - start + 1", L("gap = end - start + 1", "print(gap)"), "unicode-punctuation"),
    # --- must stay refused ---
    Case("indentation rescaled (4 to 2), not shifted", JS, L("for (const item of list) {", "    if (item.hidden) {", "        continue;"), L("for (const item of list) {", "    if (item.hidden) {", "        break;"), None),
    Case("CRLF old_text but wrong content", L("alpha", "beta", end="\r\n").encode(), "alpha\r\ngamma\r\n", "alpha\r\ndelta\r\n", None),
    Case("line numbers but wrong text after them", PY, num(13, "        self.root = root_dir"), num(13, "        self.root = Path(root_dir)"), None),
    Case("ambiguous: same block twice modulo trailing spaces", REPEATED, L("    x = 1 ", "    return x"), L("    x = 2", "    return x"), None),
    Case("ambiguous exact stays ambiguous", REPEATED, "    return x", "    return -x", None),
    Case("ambiguous indentation", L("if a:", "    go()", "    done()", "if b:", "        go()", "        done()"), L("go()", "done()"), L("go()", "finish()"), None),
    Case("invented line", PY, L("    def get(self, key):", "        key = key.lower()", "        if key in self.cache:"), L("    def get(self, key):", "        if key in self.cache:"), None),
    Case("wrong name", PY, "        self.cache = {}\n        self.size = 0\n", "        self.cache = {}\n", None),
    Case("elided middle", PY, L("def load(path):", "    ...", "    return parse(data)"), L("def load(path):", "    return parse(open(path).read())"), None),
    Case("relative indentation changed", PY, L("    if key in self.cache:", "    return self.cache[key]"), L("    if key in self.cache:", "        return self.cache[key]"), None),
    Case("numbers not consecutive (not read_file's)", L("1\t2", "3\t4"), "1\t2\n5\t6\n", "x\n", None),
    Case("tabs sent for spaces", PY, "\tdef get(self, key):\n\t\tif key in self.cache:\n", "\tdef get(self, key):\n\t\tif key:\n", None),
    Case("old_text from another file", JS, L("def render(items):", "    return ''.join(items)"), L("def render(items):", "    return '\\n'.join(items)"), None),
    Case("already applied", PY, "        self.cache = dict()", "        self.cache = {}", None),
    Case("unicode rule would be ambiguous", L("say(\u201chi\u201d)", "say(\u201dhi\u201c)"), 'say("hi")', 'say("hey")', None),
    Case("partial line with trailing space must end a line", L("x = 10", "y = 1"), "x = 1 ", "x = 2", None),
]
