"""Make the members' READMEs read the same on PyPI as on GitHub: relative links become absolute.

``uv run tools/readme_links.py`` rewrites, in every member's README.md, each Markdown link or
image and each HTML ``src``/``href`` whose target is a path inside the repository (``assets/x.png``,
``../../../README.md``) into an absolute URL: images to raw.githubusercontent.com (PyPI renders
them), everything else to the file's GitHub page. ``--check`` rewrites nothing and exits 1 when a
README still has a relative link (tests/test_workspace.py runs it).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _workspace import ROOT, members

REPO = "icml26/icml26"
BRANCH = "main"
IMAGE = (".png", ".svg", ".jpg", ".jpeg", ".gif", ".webp")
# ](target) in Markdown, src="target" / href="target" in HTML
LINK = re.compile(r'(\]\(|(?:src|href)=")([^)"\s]+)')


def absolute(target: str, readme: Path) -> str | None:
    """The absolute URL of a relative ``target`` seen from ``readme``; None when ``target`` is
    already absolute (a scheme, an anchor) or leaves the repository."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith(("#", "/")):
        return None
    path, _, anchor = target.partition("#")
    resolved = (readme.parent / path).resolve()
    try:
        rel = resolved.relative_to(ROOT).as_posix()
    except ValueError:
        return None
    if rel.lower().endswith(IMAGE):
        return f"https://raw.githubusercontent.com/{REPO}/{BRANCH}/{rel}"
    kind = "tree" if resolved.is_dir() else "blob"
    return f"https://github.com/{REPO}/{kind}/{BRANCH}/{rel}" + (f"#{anchor}" if anchor else "")


def rewrite(readme: Path) -> tuple[str, list[str]]:
    """The README's text with its relative links made absolute, and the links changed."""
    changed: list[str] = []

    def sub(m: re.Match) -> str:
        url = absolute(m.group(2), readme)
        if url is None:
            return m.group(0)
        changed.append(m.group(2))
        return m.group(1) + url

    return LINK.sub(sub, readme.read_text()), changed


def main(argv: list[str]) -> int:
    check = "--check" in argv
    bad = 0
    for m in members():
        readme = m.path / "README.md"
        text, changed = rewrite(readme)
        if not changed:
            continue
        if check:
            print(f"{m.rel}/README.md: relative links {changed}")
            bad += 1
        else:
            readme.write_text(text)
            print(f"{m.rel}/README.md: {len(changed)} link(s) made absolute")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
