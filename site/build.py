"""Build the course website: ``python site/build.py [--out DIR]`` (``make site``).

Stages what Sphinx reads into ``site/_src`` -- the executed lesson notebooks and the exercise
notebooks as they are (never re-executed, never a solution), the live explorers' pages, a page
for the command line generated from its argparse help, one for the library (autodoc) -- then
builds the HTML into ``site/_build/html`` (or ``--out``), a folder any static file server can serve
and that loads nothing from outside it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
STAGE = HERE / "_src"
VENDOR = "_vendor"  # inside STAGE: scripts taken from Python packages at build time
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

# the library modules the API page documents, in reading order
API_MODULES = ["ctxlab.tasks", "ctxlab.signatures", "ctxlab.models", "ctxlab.train", "ctxlab.align",
               "ctxlab.rungs", "ctxlab.theory", "ctxlab.experiments", "ctxlab.plots", "ctxlab.widgets",
               "ctxlab.figures", "ctxlab.course"]


def stage(refresh: bool = False) -> None:
    """Write everything Sphinx reads into ``STAGE`` (emptied first)."""
    from ctxlab.course.notebooks import lesson_title

    import explorers

    if STAGE.exists():
        shutil.rmtree(STAGE)
    lessons = sorted((ROOT / "lessons").glob("*.ipynb"))
    exercises = sorted((ROOT / "exercises").glob("*.ipynb"))
    if not lessons:
        raise SystemExit("site: no executed lessons in lessons/*.ipynb; run `ctxlab build` first")
    for folder, notebooks in (("lessons", lessons), ("exercises", exercises)):
        (STAGE / folder).mkdir(parents=True)
        for nb in notebooks:
            shutil.copy2(nb, STAGE / folder / nb.name)
    live = explorers.write_pages(STAGE / "explorers", refresh=refresh)
    (STAGE / VENDOR).mkdir()
    import vl_convert

    (STAGE / VENDOR / "vega-bundle.js").write_text(vl_convert.javascript_bundle(), encoding="utf-8")
    (STAGE / "reference").mkdir()
    (STAGE / "reference" / "cli.md").write_text(cli_page(), encoding="utf-8")
    (STAGE / "reference" / "api.md").write_text(api_page(), encoding="utf-8")
    titles = {nb.stem: lesson_title(ROOT / "lessons" / f"{nb.stem}.py") if (ROOT / "lessons" / f"{nb.stem}.py").is_file()
              else nb.stem for nb in lessons}
    rows = "\n".join(f"| {stem[:2]} | [{title}](lessons/{stem}.ipynb) | "
                     + (f"[exercises](exercises/{stem}.ipynb)" if (ROOT / "exercises" / f"{stem}.ipynb").is_file() else "—")
                     + " |" for stem, title in titles.items())
    # hidden: the sidebar still navigates them, and the front page lists the lessons once (the table)
    toc = lambda caption, entries: ("```{toctree}\n:maxdepth: 1\n:hidden:\n:caption: " + caption + "\n\n"
                                    + "\n".join(entries) + "\n```\n")
    (STAGE / "index.md").write_text(
        "# The Context Staircase\n\n"
        "A course on how token embeddings learn low-order statistics of their data before high-order ones "
        "when a network starts small. Each lesson below is the executed notebook; the buttons at the top of "
        "a page open it in Colab or on Binder, or download it. The explorers in the lessons are saved as "
        "pictures (their controls need a running kernel); two of them also run right here, in your browser, "
        "from precomputed data: the [staircase explorer](explorers/staircase.md) and the "
        "[signature explorer](explorers/signatures.md).\n\n"
        "| # | Lesson | Exercises |\n|---|---|---|\n" + rows + "\n\n"
        + toc("Lessons", [f"lessons/{nb.stem}" for nb in lessons])
        + toc("Exercises", [f"exercises/{nb.stem}" for nb in exercises])
        + toc("Live explorers", [f"explorers/{name}" for name in live])
        + toc("Reference", ["reference/cli", "reference/api"]), encoding="utf-8")


def cli_page() -> str:
    """The ``ctxlab`` command's help, every subcommand, straight from its argparse parser."""
    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal; the page should not depend on it
    from ctxlab.cli import parser

    top = parser()
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    parts = ["# The `ctxlab` command\n", "Generated from the command's own help at build time.\n",
             "```text\n" + top.format_help() + "```\n"]
    for name, p in sub.choices.items():
        parts.append(f"## `ctxlab {name}`\n\n```text\n{p.format_help()}```\n")
    return "\n".join(parts)


def api_page() -> str:
    """The library's modules, documented from their docstrings (autodoc)."""
    parts = ["# The `ctxlab` library\n", "Generated from the docstrings at build time.\n"]
    for module in API_MODULES:
        parts.append(f"## `{module}`\n\n```{{eval-rst}}\n.. automodule:: {module}\n   :members:\n```\n")
    return "\n".join(parts)


def build(out: Path, refresh: bool = False, quiet: bool = True) -> float:
    """Stage and build; returns the seconds it took."""
    from sphinx.cmd.build import build_main

    start = time.perf_counter()
    stage(refresh)
    args = ["-b", "html", "-c", str(HERE), "-j", "1", "-E", str(STAGE), str(out)]
    if quiet:
        args.insert(0, "-q")
    code = build_main(args)
    if code:
        raise SystemExit(f"site: sphinx-build failed (exit {code}); see the warnings above")
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(prog="site/build.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE / "_build" / "html", help="the built site's folder")
    ap.add_argument("--refresh", action="store_true", help="retrain the staircase explorer's sweep")
    args = ap.parse_args()
    seconds = build(args.out, args.refresh)
    size = sum(f.stat().st_size for f in args.out.rglob("*") if f.is_file())
    print(f"site: built {args.out} in {seconds:.0f} s ({size / 1e6:.1f} MB); serve it with "
          f"`python -m http.server -d {args.out}`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
