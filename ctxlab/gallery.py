"""The README gallery's bookkeeping: which code made each thumbnail, so that a stale one is caught.

``site/thumbnails.py`` renders every registered figure in a process of its own, notes the ctxlab
modules that process imported, and writes ``gallery/manifest.json``: per figure the fingerprint of
its maker's source and those modules' (the registry module itself left out, so that adding a figure
does not stale the others), the hash of the figure's numbers and of the thumbnail. :func:`stale` compares
that with the code as it is now (cheap: no figure is rendered), naming each thumbnail whose code has
changed since it was made, or that is missing or was replaced by hand.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Iterable
from pathlib import Path

MANIFEST = "manifest.json"
BOOKKEEPING = ("ctxlab/figures.py", "ctxlab/gallery.py")  # the registry and this module: not a figure's code


def file_sha(path: str | Path) -> str:
    """sha256 of a file's bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def fingerprint(modules: Iterable[str], root: str | Path, maker: str = "") -> str:
    """sha256 over a figure's ``maker`` source and the named module files (paths relative to ``root``)."""
    digest = hashlib.sha256(maker.encode() + b"\0")
    for name in sorted(set(modules)):
        digest.update(name.encode() + b"\0" + (Path(root) / name).read_bytes() + b"\0")
    return digest.hexdigest()


def imported_modules(modules: dict, root: str | Path) -> list[str]:
    """The ctxlab source files among ``modules`` (a ``sys.modules``), relative to ``root``."""
    root = Path(root).resolve()
    files = []
    for name, module in modules.items():
        path = getattr(module, "__file__", None)
        if (name == "ctxlab" or name.startswith("ctxlab.")) and path:
            files.append(Path(path).resolve().relative_to(root).as_posix())
    return sorted(f for f in files if f not in BOOKKEEPING)


def maker_source(entry) -> str:
    """The source of a registry entry's ``make`` function."""
    return inspect.getsource(entry.make)


def stale(gallery: str | Path, registry: dict, root: str | Path) -> dict[str, str]:
    """Figure name -> why its thumbnail is not the current code's (empty: the gallery is in step).
    ``registry``: name -> entry with a ``make`` function (:data:`ctxlab.figures.REGISTRY`)."""
    gallery = Path(gallery)
    manifest_path = gallery / MANIFEST
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    problems = {}
    for name, figure in registry.items():
        entry, png = manifest.get(name), gallery / f"{name}.png"
        if entry is None or not png.is_file():
            problems[name] = "no thumbnail made by site/thumbnails.py"
        elif file_sha(png) != entry["thumbnail"]:
            problems[name] = "the thumbnail is not the one site/thumbnails.py made"
        elif any(not (Path(root) / m).is_file() for m in entry["modules"]):
            problems[name] = "a module that made it is gone"
        elif fingerprint(entry["modules"], root, maker_source(figure)) != entry["code"]:
            problems[name] = "the code that makes it has changed since"
    return problems
