#!/usr/bin/env python3
"""Checks README.md and docs/*.md (//tools:docs_test).

- README.md has at most 200 lines.
- Every relative link and image in them resolves: the file exists inside
  the repository, and an anchor (`page.md#anchor`, `#anchor`) is a heading
  of that page, named as GitHub names it (lowercase, spaces to '-',
  punctuation dropped, a repeated heading's anchor suffixed -1, -2, ...).
- Nothing in them refers to a path outside the repository: no `../shared`
  and no `DESIGN.md`.

    tools/check_docs.py [--root=DIR] [--self_test]

DIR is the repository root, by default the folder above this script's
(under `bazel test`, the runfiles tree, which holds README.md and docs/).
Prints one line per problem and exits 1 if there is any, else 0.
Python 3, standard library only.
"""

import os
import re
import sys
import urllib.parse

MAX_README_LINES = 200
FORBIDDEN = ("../shared", "DESIGN.md")

_FENCE = re.compile(r"^\s*(```|~~~)")
_ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)\s*$")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
# [text](target "title") and ![alt](target), the target possibly in <...>.
_INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+[\"'(][^)]*)?\)")
_REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)", re.M)
_HTML_LINK = re.compile(r"<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*[\"']([^\"']+)[\"']", re.I)
_HTML_ANCHOR = re.compile(r"<a\b[^>]*?\b(?:name|id)\s*=\s*[\"']([^\"']+)[\"']", re.I)


def slug(heading):
    """The anchor GitHub gives a heading's text (before de-duplication)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links: their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "").replace("*", "")
    text = text.strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in "-_ ")
    return text.replace(" ", "-")


def _blank_fences(lines):
    """The lines with fenced code blocks' lines made empty."""
    out, fence = [], None
    for line in lines:
        m = _FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            out.append("")
        elif fence is not None:
            if line.strip().startswith(fence):
                fence = None
            out.append("")
        else:
            out.append(line)
    return out


def anchors(text):
    """Every anchor of a Markdown page: its headings' and explicit ones."""
    lines = _blank_fences(text.split("\n"))
    names, seen = set(), {}
    for i, line in enumerate(lines):
        heading = None
        m = _ATX_HEADING.match(line)
        if m:
            heading = m.group(2)
        elif (i + 1 < len(lines) and line.strip() and _SETEXT_UNDERLINE.match(lines[i + 1])
              and not line.lstrip().startswith(("-", "*", "|", ">"))):
            heading = line
        if heading is None:
            continue
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        names.add(base if n == 0 else "%s-%d" % (base, n))
    names.update(_HTML_ANCHOR.findall(text))
    return names


def links(text):
    """(line number, target) of every link and image outside code."""
    lines = _blank_fences(text.split("\n"))
    prose = "\n".join(lines)
    # Code spans may cross lines; blank them, keeping the line breaks.
    prose = _CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), prose)
    found = []
    for pattern in (_INLINE_LINK, _REFERENCE_DEFINITION, _HTML_LINK):
        for m in pattern.finditer(prose):
            target = m.group(1)
            if target.startswith("<") and target.endswith(">"):
                target = target[1:-1]
            found.append((prose.count("\n", 0, m.start()) + 1, target))
    return sorted(found)


def check_page(root, page, problems, anchor_cache):
    """Appends to `problems` what is wrong with the page at `page` (under root)."""
    path = os.path.join(root, page)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for number, line in enumerate(text.split("\n"), 1):
        for word in FORBIDDEN:
            if word in line:
                problems.append("%s:%d: refers to %s, outside the repository" % (page, number, word))
    for number, target in links(text):
        place = "%s:%d: link %s" % (page, number, target)
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("//"):
            continue  # http:, https:, mailto:, ...: not the repository's
        file_part, _, anchor = target.partition("#")
        file_part = urllib.parse.unquote(file_part)
        anchor = urllib.parse.unquote(anchor)
        if file_part.startswith("/"):
            problems.append("%s: an absolute path; use one relative to %s" % (place, page))
            continue
        if file_part:
            resolved = os.path.normpath(os.path.join(os.path.dirname(page), file_part))
            if resolved == ".." or resolved.startswith("../"):
                problems.append("%s: leaves the repository" % place)
                continue
            if not os.path.exists(os.path.join(root, resolved)):
                problems.append("%s: %s does not exist" % (place, resolved))
                continue
        else:
            resolved = page
        if not anchor:
            continue
        if not resolved.endswith(".md") or os.path.isdir(os.path.join(root, resolved)):
            problems.append("%s: an anchor into %s, which is not a Markdown page" % (place, resolved))
            continue
        if resolved not in anchor_cache:
            with open(os.path.join(root, resolved), encoding="utf-8") as f:
                anchor_cache[resolved] = anchors(f.read())
        if anchor not in anchor_cache[resolved]:
            problems.append("%s: %s has no heading with the anchor #%s" % (place, resolved, anchor))


def check(root):
    """Every problem with the repository at `root`, one line each."""
    problems = []
    readme = os.path.join(root, "README.md")
    if not os.path.isfile(readme):
        return ["README.md: not found under %s" % root]
    with open(readme, encoding="utf-8") as f:
        count = len(f.read().splitlines())
    if count > MAX_README_LINES:
        problems.append("README.md: %d lines, more than %d" % (count, MAX_README_LINES))
    pages = ["README.md"]
    docs = os.path.join(root, "docs")
    if os.path.isdir(docs):
        pages += sorted("docs/" + name for name in os.listdir(docs) if name.endswith(".md"))
    anchor_cache = {}
    for page in pages:
        check_page(root, page, problems, anchor_cache)
    return problems


def self_test():
    """Checks the checker on small examples; returns the failures."""
    failures = []

    def expect(what, got, want):
        if got != want:
            failures.append("self test: %s: got %r, want %r" % (what, got, want))

    expect("slug", slug("Indices known only at run time"), "indices-known-only-at-run-time")
    expect("slug", slug("`conv_transpose`"), "conv_transpose")
    expect("slug", slug("libm in vectors: libmvec and SLEEF"), "libm-in-vectors-libmvec-and-sleef")
    expect("slug", slug("torch.compile"), "torchcompile")
    expect("slug", slug("Tests per instruction set, and Arm"), "tests-per-instruction-set-and-arm")
    page = "# A\n\n## B c\n\n## B c\n\n```\n## not a heading\n```\n\nD\n-\n"
    expect("anchors", sorted(anchors(page)), ["a", "b-c", "b-c-1", "d"])
    text = ("See [x](a.md#b) and ![p](docs/p.png), not `[y](z.md)`;\n"
            "```\n[q](fenced.md)\n```\n[r]: r.md\n")
    expect("links", links(text), [(1, "a.md#b"), (1, "docs/p.png"), (5, "r.md")])
    return failures


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    run_self_test = False
    for arg in argv[1:]:
        if arg.startswith("--root="):
            root = arg[len("--root="):]
        elif arg == "--self_test":
            run_self_test = True
        else:
            print("usage: check_docs.py [--root=DIR] [--self_test]", file=sys.stderr)
            return 2
    problems = self_test() if run_self_test else []
    problems += check(root)
    for problem in problems:
        print(problem)
    if problems:
        print("check_docs: %d problem(s) in README.md and docs/" % len(problems))
        return 1
    print("check_docs: README.md and docs/ are fine")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
