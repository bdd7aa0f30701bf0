"""Sphinx configuration of the course website (``make site``; sources staged by ``site/build.py``).

Everything a page loads is inside the built folder: MathJax from sphinx-mathjax-offline, the
Vega bundle of the live explorers from vl-convert-python, and no widget manager at all -- the
explorers' saved outputs carry a picture (``text/html``) that the site shows instead.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # the worktree's ctxlab for autodoc

from ctxlab.course.notebooks import load_config  # noqa: E402

config = load_config(ROOT)

project = "ctxlab: the Context Staircase"
author = "the ctxlab authors"
copyright = "the ctxlab authors (MIT)"
extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx-mathjax-offline"]
exclude_patterns = ["_build", "_vendor", "**.ipynb_checkpoints"]
html_static_path = [str(HERE / "static"), str(HERE / "_src" / "_vendor")]  # _vendor: written by build.py
html_css_files = ["ctxlab.css"]

# notebooks are executed by `ctxlab build`; the site never runs them
nb_execution_mode = "off"
myst_enable_extensions = ["dollarmath", "amsmath"]
nb_ipywidgets_js = {}  # no widget manager: explorers are saved without state and show their picture
# prefer an explorer's picture-and-note (text/html) to the widget view that needs a kernel
nb_mime_priority_overrides = [("html", "application/vnd.jupyter.widget-view+json", None)]
suppress_warnings = ["mystnb.unknown_mime_type", "myst.header", "misc.highlighting_failure"]

autodoc_member_order = "bysource"
autodoc_typehints = "none"  # signatures stay readable; the docstrings say why

html_theme = "sphinx_book_theme"
html_title = "ctxlab"
html_theme_options = {
    "repository_url": f"https://github.com/{config.repository}",
    "repository_branch": config.branch,
    "path_to_docs": "",  # the staged sources mirror the repository: lessons/NN.ipynb is lessons/NN.ipynb
    "launch_buttons": {"colab_url": "https://colab.research.google.com",
                       "binderhub_url": "https://mybinder.org", "notebook_interface": "jupyterlab"},
    "use_download_button": True,
    "use_repository_button": True,
    "use_fullscreen_button": False,
    "show_toc_level": 2,
}
html_last_updated_fmt = None
html_copy_source = True  # the download button's .ipynb


def _live_scripts(app, pagename, templatename, context, doctree):
    """The Vega bundle (900 kB) only on the pages that draw a live explorer."""
    if pagename.startswith("explorers/"):
        app.add_js_file("vega-bundle.js", type="module")  # a module: its top-level names stay its own


def setup(app):
    app.connect("html-page-context", _live_scripts)
