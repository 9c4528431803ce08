"""Mark the end-to-end tests that need what only tests/run installs.

A test that (through any function of its file or of host/tests/common/ it
calls) builds a Python or JavaScript guest, starts PostgreSQL or Chromium,
or runs one of the pinned Python environments carries

    #[cfg_attr(not(worldline_tests_run), ignore = "needs ...: run tests/run")]

right under its `#[test]`: `cargo test` on a machine without those
installs lists it as ignored with the reason (libtest's and nextest's
"skipped"), and tests/run, which exports WORLDLINE_TESTS_RUN (host/build.rs
turns it into the cfg), runs it and fails it when an install is missing.

    python3 tests/needs.py          rewrite the attributes in place
    python3 tests/needs.py --check  exit 1 naming each test whose attribute
                                    is missing or stale (tests/run runs this)

The analysis is textual: function bodies found by matching braces outside
strings and comments, calls by name (a function of the same file first,
else of host/tests/common/), needs propagated to a fixed point.
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "host" / "tests"
COMMON = TESTS / "common"

# What a function body naming one of these needs, and how the reason says it.
SEEDS = [
    ("PostgreSQL", [r"initdb", r"postgres://"]),
    ("Chromium", [r"chromedriver"]),
    ("Node.js and the pinned npm packages", [r'"build-js"']),
    ("componentize-py", [r'"build-python"']),
    ("the pinned Python environments", [r"WORLDLINE_[A-Z0-9]+_PYTHON", r"PYTHON_WASI_WHEELS",
                                        r"opentelemetry\.proto"]),
]
ORDER = [name for name, _ in SEEDS]
ATTR = "#[cfg_attr(not(worldline_tests_run), ignore = \"needs {}: run tests/run, which installs it\")]"
ATTR_START = "#[cfg_attr("
FN_RE = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)\s*(?:<[^>{]*>)?\s*\(")
# A call: `f(`, `module::f(` or `Type::f(` (the latter resolved to the files
# that define the type); `.f(` method calls are not followed.
CALL_RE = re.compile(r"(\.|\b[A-Za-z_][A-Za-z0-9_]*::)?\b([A-Za-z_][A-Za-z0-9_]*)\s*(?:::<[^>]*>)?\s*\(")
TYPE_RE = re.compile(r"\b(?:struct|enum|impl(?:<[^>]*>)?)\s+([A-Z][A-Za-z0-9_]*)")


def code_mask(text, strings=True):
    """`text` with comment contents and (when `strings`) string and char
    contents blanked (same length), so braces inside them do not count."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out[i:j] = " " * (j - i)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out[i:j] = [ch if ch == "\n" else " " for ch in text[i:j]]
            i = j
        elif not strings and c in "r\"'":
            # Strings kept: step over them whole so a `//` inside one stays.
            m = re.match(r'r(#*)"', text[i:]) if c == "r" and (i == 0 or not text[i - 1].isalnum()) else None
            if m:
                j = text.find('"' + m.group(1), i + 2 + len(m.group(1)))
                i = n if j < 0 else j + 1 + len(m.group(1))
            elif c == '"':
                j = i + 1
                while j < n and text[j] != '"':
                    j += 2 if text[j] == "\\" else 1
                i = j + 1
            else:
                i += 1
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not text[i - 1].isalnum()):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = '"' + hashes
            j = text.find(end, i + 2 + len(hashes))
            j = n if j < 0 else j + len(end)
            out[i + 1:j] = [ch if ch == "\n" else " " for ch in text[i + 1:j]]
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out[i + 1:j] = [ch if ch == "\n" else " " for ch in text[i + 1:j]]
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4]):
            j = text.index("'", i + 2) + 1
            out[i + 1:j - 1] = " " * (j - i - 2)
            i = j
        else:
            i += 1
    return "".join(out)


def functions(path):
    """name → [(body text, start offset of `fn`)] of every fn in the file."""
    text = path.read_text()
    masked = code_mask(text)
    bare = code_mask(text, strings=False)
    found = {}
    for m in FN_RE.finditer(masked):
        open_at = masked.find("{", m.end())
        semi = masked.find(";", m.end())
        if open_at < 0 or (0 <= semi < open_at):
            continue  # a declaration without a body
        depth, j = 0, open_at
        while j < len(masked):
            if masked[j] == "{":
                depth += 1
            elif masked[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        found.setdefault(m.group(1), []).append((bare[open_at:j + 1], masked[open_at:j + 1], m.start()))
    # Consts and statics (a table of agents whose closures build guests):
    # their initialisers count as bodies named after them.
    for m in re.finditer(r"\b(?:const|static)\s+([A-Z_][A-Z0-9_]*)\s*:", masked):
        depth, j = 0, m.end()
        while j < len(masked):
            ch = masked[j]
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
            elif ch == ";" and depth == 0:
                break
            j += 1
        found.setdefault(m.group(1), []).append((bare[m.end():j], masked[m.end():j], m.start()))
    return text, found


def direct_needs(body):
    return {name for name, pats in SEEDS if any(re.search(p, body) for p in pats)}


def module_files(files):
    """module name → file: `pg` → common/pg.rs, `common` → common/mod.rs,
    `fuzz` → fuzz.rs."""
    m = {}
    for p in files:
        m[p.parent.name if p.name == "mod.rs" else p.stem] = p
    return m


USE_RE = re.compile(r"\buse\s+((?:crate::|super::)?[A-Za-z_][\w:]*?)(?:::\{([^}]*)\}|::(\*|[A-Za-z_]\w*)(?:\s+as\s+(\w+))?)?\s*;")


def imports(masked, mods, here):
    """name → files it may come from, by the file's `use` lines; `*` → files
    whose every function is in scope."""
    names, globs = {}, []
    for path, group, single, alias in USE_RE.findall(masked):
        segs = [x for x in path.split("::") if x not in ("crate", "super")]
        if not segs:
            continue
        last = segs[-1]
        if group:
            target = mods.get(last)
            for item in group.split(","):
                item = item.strip()
                if "::" in item:
                    sub, _, leaf = item.rpartition("::")
                    t = mods.get(sub.split("::")[-1])
                    if t:
                        names.setdefault(leaf.split(" as ")[-1].strip(), set()).add((t, leaf.split(" as ")[0].strip()))
                elif item and target:
                    name = item.split(" as ")
                    names.setdefault(name[-1].strip(), set()).add((target, name[0].strip()))
        elif single == "*":
            if mods.get(last):
                globs.append(mods[last])
        elif single:
            target = mods.get(last)
            if target:
                names.setdefault(alias or single, set()).add((target, single))
            elif mods.get(single):
                names.setdefault(alias or single, set()).add((mods[single], None))
        elif mods.get(last):
            names.setdefault(last, set()).add((mods[last], None))
    return names, globs


def analyse():
    files = sorted(p for p in TESTS.rglob("*.rs"))
    parsed = {p: functions(p) for p in files}
    mods = module_files(files)
    masked_text = {p: code_mask(parsed[p][0]) for p in files}
    types = {}
    for p in files:
        for t in TYPE_RE.findall(masked_text[p]):
            types.setdefault(t, set()).add(p)
    scope = {p: imports(masked_text[p], mods, p) for p in files}
    needs = {}
    calls = {}
    for p in files:
        for name, defs in parsed[p][1].items():
            key = (p, name)
            needs[key] = set().union(*(direct_needs(body) for body, _, _ in defs))
            called = set()
            for _, masked, _ in defs:
                called |= set(CALL_RE.findall(masked))
                # A function of the same file passed as a value (`get_or_init(start)`).
                called |= {("", w) for w in re.findall(r"\b[A-Za-z_][A-Za-z0-9_]*\b", masked)
                           if w in parsed[p][1] and w != name}
            calls[key] = called

    def targets(p, call):
        prefix, name = call
        if prefix == ".":
            return []
        names, globs = scope[p]
        if prefix:
            head = prefix[:-2]
            if head[0].isupper():
                return [(q, name) for q in types.get(head, ()) if (q, name) in needs]
            files_of = {t for t, _ in names.get(head, ())} or ({mods[head]} if head in mods else set())
            return [(q, name) for q in files_of if (q, name) in needs]
        if (p, name) in needs:
            return [(p, name)]
        found = [(t, orig or name) for t, orig in names.get(name, ()) if (t, orig or name) in needs]
        found += [(g, name) for g in globs if (g, name) in needs]
        return found

    changed = True
    while changed:
        changed = False
        for key, called in calls.items():
            for c in called:
                if c[1] == key[1] and not c[0]:
                    continue
                for t in targets(key[0], c):
                    extra = needs[t] - needs[key]
                    if extra:
                        needs[key] |= extra
                        changed = True
    return parsed, needs


def normal(attr):
    """An attribute without the spaces rustfmt may move."""
    return re.sub(r"\s+", "", attr.replace(",)", ")"))


def formatted(attr, indent):
    """The attribute's lines as rustfmt writes them: its arguments are
    longer than rustfmt's `attr_fn_like_width` (70), so one a line."""
    inner = attr[len("#[cfg_attr("):-2]
    cond, reason = inner.split(", ", 1)
    return [indent + "#[cfg_attr(", indent + "    " + cond + ",", indent + "    " + reason, indent + ")]"]


def wanted_attr(n):
    return ATTR.format(", ".join(x for x in ORDER if x in n)) if n else None


def rewrite(check):
    parsed, needs = analyse()
    problems = []
    for p, (text, found) in parsed.items():
        if p.parent != TESTS:
            continue  # common/ and support folders hold no tests
        lines = text.split("\n")
        out = []
        i = 0
        while i < len(lines):
            line = lines[i]
            out.append(line)
            if line.strip() == "#[test]":
                j = i + 1
                old = None
                if j < len(lines) and lines[j].strip().startswith(ATTR_START) and "worldline_tests_run" in lines[j] + lines[min(j + 1, len(lines) - 1)]:
                    k = j
                    while not lines[k].rstrip().endswith(")]"):
                        k += 1
                    old = normal(" ".join(x.strip() for x in lines[j:k + 1]))
                    j = k + 1
                # The test's name: the next `fn` line.
                k = j
                while k < len(lines) and not FN_RE.search(lines[k]):
                    k += 1
                name = FN_RE.search(lines[k]).group(1) if k < len(lines) else None
                want = wanted_attr(needs.get((p, name), set()))
                if (normal(want) if want else None) != old:
                    problems.append(f"{p.relative_to(ROOT)}:{k + 1}: {name}: "
                                    + (f"wants {want}" if want else "needs nothing tests/run installs; drop the attribute"))
                if want:
                    indent = line[: len(line) - len(line.lstrip())]
                    out.extend(formatted(want, indent))
                i = j
                continue
            i += 1
        new = "\n".join(out)
        if new != text and not check:
            p.write_text(new)
    return problems


if __name__ == "__main__":
    check = "--check" in sys.argv[1:]
    problems = rewrite(check)
    if check and problems:
        print("tests whose tests/run-only needs are not marked (python3 tests/needs.py marks them):",
              file=sys.stderr)
        for m in problems:
            print("  " + m, file=sys.stderr)
        sys.exit(1)
    if not check:
        print(f"{len(problems)} attribute(s) written")
