"""The course website (``make site``): offline, complete, and free of solutions.

The site is built once per session (``built_site`` in conftest.py, with the network cut where
``unshare -n`` works); ``CTXLAB_SITE_DIR`` points the tests at a site built already.
"""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlparse

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
WIDGET = "application/vnd.jupyter.widget-view+json"
pytestmark = pytest.mark.xdist_group("site")  # one build, shared with the browser test


class _Loads(HTMLParser):
    """Every address a page loads by itself: <script src>, <link href>, <img src>, <iframe src>."""

    ATTRIBUTE = {"script": "src", "link": "href", "img": "src", "iframe": "src", "source": "src"}

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        wanted = self.ATTRIBUTE.get(tag)
        for name, value in attrs:
            if name == wanted and value:
                self.urls.append((tag, value))


def outside_loads(page: Path) -> list[tuple[str, str]]:
    """The tags of ``page`` that load from a host (not a relative path, a data: URL or loopback)."""
    parser = _Loads()
    parser.feed(page.read_text(encoding="utf-8"))
    outside = []
    for tag, url in parser.urls:
        parts = urlparse(url)
        if parts.scheme in ("", "data") and not url.startswith("//"):
            continue
        if parts.hostname in ("127.0.0.1", "localhost"):
            continue
        outside.append((tag, url))
    return outside


def page_text(page: Path) -> str:
    """What a reader can see or copy from a page: tags dropped, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))


def test_the_site_builds_offline_within_five_minutes(built_site):
    folder, seconds, offline = built_site
    if seconds is None:
        pytest.skip("CTXLAB_SITE_DIR: a site built elsewhere; its build was not timed here")
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    print(f"site built in {seconds:.0f} s, {size / 1e6:.1f} MB, network cut: {offline}")
    assert (folder / "index.html").is_file() and (folder / "search.html").is_file()
    assert seconds <= 300


def test_no_page_loads_anything_from_outside(built_site):
    folder = built_site[0]
    pages = sorted(folder.rglob("*.html"))
    assert len(pages) > 10
    outside = {str(p.relative_to(folder)): found for p in pages if (found := outside_loads(p))}
    assert outside == {}, f"pages that load from an outside host: {outside}"


def test_outside_loads_are_caught(tmp_path):
    """The check itself: a CDN script, a protocol-relative font and an iframe are found; local ones not."""
    page = tmp_path / "p.html"
    page.write_text('<script src="https://cdn.example/x.js"></script><link href="//fonts.example/f.css">'
                    '<img src="_images/a.png"><img src="data:image/png;base64,AA"><iframe src="http://e.x/"></iframe>'
                    '<script src="http://127.0.0.1:8000/ok.js"></script><a href="https://colab.example/">ok</a>')
    assert [tag for tag, _ in outside_loads(page)] == ["script", "link", "iframe"]


def _public_text() -> str:
    """Everything the course publishes anyway: exercise notebooks and lesson sources."""
    sources = [cell.source for path in sorted((ROOT / "exercises").glob("*.ipynb"))
               for cell in nbformat.read(path, as_version=4).cells]
    return "\n".join(sources + [path.read_text(encoding="utf-8") for path in sorted((ROOT / "lessons").glob("*.py"))])


def _solution_lines(name: str, public: str) -> list[str]:
    """Lines of a solution notebook's code that no exercise notebook or lesson has."""
    solution = nbformat.read(ROOT / "solutions" / name, as_version=4)
    lines = []
    for cell in solution.cells:
        if cell.cell_type != "code":
            continue
        for line in cell.source.splitlines():
            line = line.strip()
            if len(line) >= 30 and not line.startswith(("#", '"""')) and line not in public:
                lines.append(line)
    return lines


def test_no_solution_reaches_the_site(built_site):
    folder = built_site[0]
    solutions = sorted(p.name for p in (ROOT / "solutions").glob("*.ipynb"))
    assert solutions
    texts = {str(p.relative_to(folder)): page_text(p) for p in folder.rglob("*")
             if p.suffix in (".html", ".js", ".ipynb", ".txt", ".md") and "_static" not in p.parts}
    assert any(key.startswith("exercises/") for key in texts)
    leaked, public = {}, _public_text()
    for name in solutions:
        lines = _solution_lines(name, public)
        assert lines, f"solutions/{name} has no solution lines beyond its exercise: the check would be empty"
        for line in lines:
            where = [key for key, text in texts.items() if line in text]
            if where:
                leaked[line] = where
    assert leaked == {}, f"solution code on the site: {leaked}"


def test_lessons_in_order_with_navigation(built_site):
    folder = built_site[0]
    lessons = sorted(p.stem for p in (ROOT / "lessons").glob("*.ipynb"))
    index = (folder / "index.html").read_text(encoding="utf-8")
    positions = [index.find(f'href="lessons/{stem}.html"') for stem in lessons]
    assert all(p >= 0 for p in positions) and positions == sorted(positions)
    article = index[index.find("<article"):index.find("</article>")]
    assert "toctree-l1" not in article  # the table lists the lessons once; the toctrees only feed the sidebar
    for this, following in zip(lessons, lessons[1:]):
        page = (folder / "lessons" / f"{this}.html").read_text(encoding="utf-8")
        assert re.search(rf'class="right-next"\s+href="{following}.html"', page), f"{this} has no 'next' to {following}"


def test_lesson_pages_have_math_launch_and_download_buttons(built_site):
    folder = built_site[0]
    page = (folder / "lessons" / "01_signatures.html").read_text(encoding="utf-8")
    assert "colab.research.google.com/github/" in page and "mybinder.org/v2/gh/" in page
    assert (folder / "_sources" / "lessons" / "01_signatures.ipynb").is_file()  # the download button's file
    assert re.search(r'class="math[^"]*"', page)  # dollarmath, typeset by the bundled MathJax
    assert (folder / "_static" / "mathjax" / "tex-chtml.js").is_file()
    assert (folder / "searchindex.js").is_file() and "search" in (folder / "search.html").read_text(encoding="utf-8")


def test_exercise_pages_are_the_exercises(built_site):
    folder = built_site[0]
    for exercise in sorted((ROOT / "exercises").glob("*.ipynb")):
        assert (folder / "exercises" / f"{exercise.stem}.html").is_file()
    assert not (folder / "solutions").exists() and not list(folder.rglob("solutions"))


def test_the_command_line_page_is_the_parsers_help(built_site, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    from argparse import _SubParsersAction

    from ctxlab.cli import parser

    text = page_text(built_site[0] / "reference" / "cli.html")
    top = parser()
    sub = next(a for a in top._actions if isinstance(a, _SubParsersAction))
    for name, p in sub.choices.items():
        for line in p.format_help().splitlines():
            assert line.strip() in text, f"ctxlab {name} --help line missing from the CLI page: {line!r}"


def test_the_library_page_documents_the_modules(built_site):
    text = page_text(built_site[0] / "reference" / "api.html")
    for name in ("ctxlab.tasks.make_task", "ctxlab.train.train", "ctxlab.widgets.staircase_explorer"):
        assert name.rsplit(".", 1)[1] in text and name.rsplit(".", 1)[0] in text


def test_live_explorers_ship_their_data_and_charting_code(built_site):
    folder = built_site[0]
    for name in ("staircase", "signatures"):
        page = (folder / "explorers" / f"{name}.html").read_text(encoding="utf-8")
        assert "_static/vega-bundle.js" in page and f'vegaEmbed("#live-{name}"' in page
        spec = json.loads(re.search(r'vegaEmbed\("#live-\w+", (\{.*\}), \{"actions"', page).group(1).replace("<\\/", "</"))
        assert spec["params"] and all("bind" in p for p in spec["params"])
    assert (folder / "_static" / "vega-bundle.js").stat().st_size > 100_000
    lesson = (folder / "lessons" / "00_welcome.html").read_text(encoding="utf-8")
    assert "vega-bundle.js" not in lesson  # only the explorer pages carry the bundle


def test_the_staircase_explorer_data_is_the_quick_sweep():
    """site/data/staircase.json was made with the explorer's quick settings (else the build retrains)."""
    import sys
    from dataclasses import asdict

    from ctxlab.widgets.staircase_sweep import sweep_settings

    data = json.loads((ROOT / "site" / "data" / "staircase.json").read_text())
    assert data["settings"] == json.loads(json.dumps(asdict(sweep_settings("gd", profile="quick"))))
    sys.path.insert(0, str(ROOT / "site"))
    try:
        import explorers
    finally:
        sys.path.remove(str(ROOT / "site"))
    assert len(data["steps"]) == explorers.FRAMES and data["steps"][-1] == data["settings"]["steps"]
    runs = len(data["gammas"]) * len(data["seeds"])
    assert len(data["loss"]) == runs * len(data["steps"])
    assert len(data["shares"]) == runs * len(data["steps"]) * len(data["orders"])


@pytest.mark.parametrize("notebook", sorted(p.name for p in (ROOT / "lessons").glob("*.ipynb")))
def test_every_widget_output_has_a_picture(notebook):
    """GitHub, nbviewer, VS Code and the site show an explorer's saved picture: every widget output
    of a built lesson carries an image/png and the note on where its controls work."""
    nb = nbformat.read(ROOT / "lessons" / notebook, as_version=4)
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET in data:
                assert "image/png" in data, f"{notebook}: a widget output without an image/png (rebuild it)"
                assert "running Python kernel" in data.get("text/html", "")


@pytest.mark.parametrize("notebook", sorted(p.name for p in (ROOT / "lessons").glob("*.ipynb")))
def test_explorers_show_their_picture_on_the_site(built_site, notebook):
    """A lesson's explorer appears on its page as the saved picture with its note, not as widget code."""
    nb = nbformat.read(ROOT / "lessons" / notebook, as_version=4)
    explorers = sum(WIDGET in o.get("data", {}) for c in nb.cells for o in c.get("outputs", []))
    page = (built_site[0] / "lessons" / notebook.replace(".ipynb", ".html")).read_text(encoding="utf-8")
    assert page.count('class="ctxlab-snapshot"') == explorers, f"rebuild it (ctxlab build {notebook[:-6]})"
    assert "VBox(children" not in page
