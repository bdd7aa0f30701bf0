"""Plumbing shared by the dashboards: a result cache, background jobs, and inline PNG redraw.

The redraw path is the one that works everywhere (JupyterLab, Voila, Colab without ipympl):
render the Figure to PNG ourselves and replace the contents of an ``Output`` widget.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import io
import json
import pickle
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch
from matplotlib.figure import Figure


class ResultCache:
    """A small in-memory LRU keyed by a frozen settings dataclass, optionally mirrored on disk.

    Sweeps are the expensive part of a dashboard; moving a slider must never retrain, and a
    re-opened notebook can reload a sweep from ``cache_dir`` instead of recomputing it. On disk a
    sweep is data only (tensors, numbers, strings; read back with ``weights_only=True``): a cache
    folder others can write to (a shared /tmp, a mounted drive) must never run code in the kernel.
    ``result_type`` is the dataclass the results are (its ``settings`` field is the key itself).
    """

    def __init__(self, maxsize: int = 8, result_type: type | None = None) -> None:
        if maxsize < 1:
            raise ValueError(f"maxsize must be at least 1, got {maxsize}")
        self.maxsize, self.result_type = maxsize, result_type
        self._items: OrderedDict[Any, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, settings, compute: Callable[[], Any], cache_dir: str | Path | None = None) -> Any:
        """The cached result for ``settings``, computing (and storing) it on a miss."""
        with self._lock:
            if settings in self._items:
                self._items.move_to_end(settings)
                return self._items[settings]
        if cache_dir is not None and self.result_type is None:
            raise ValueError("this cache keeps its results in memory only; call it without cache_dir")
        path = _disk_path(settings, cache_dir)
        if path is not None and path.exists():
            result = _load(path, settings, self.result_type)
        else:
            result = compute()
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                _save(result, path)
        with self._lock:
            self._items[settings] = result
            self._items.move_to_end(settings)
            while len(self._items) > self.maxsize:
                self._items.popitem(last=False)
        return result

    def __contains__(self, settings) -> bool:
        return settings in self._items

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


def _disk_path(settings, cache_dir: str | Path | None) -> Path | None:
    if cache_dir is None:
        return None
    text = json.dumps(asdict(settings), sort_keys=True, default=str)
    digest = hashlib.sha1(f"{type(settings).__name__}:{text}".encode()).hexdigest()[:16]
    return Path(cache_dir) / f"{type(settings).__name__.lower()}-{digest}.data.pt"


def _save(result, path: Path) -> None:
    """A result dataclass as a dict of its fields but the settings (the cache key rebuilds it)."""
    fields = {f.name: getattr(result, f.name) for f in dataclasses.fields(result) if f.name != "settings"}
    torch.save({"type": type(result).__name__, "fields": fields}, path)


def _load(path: Path, settings, result_type: type):
    try:
        payload = torch.load(path, weights_only=True)
    except pickle.UnpicklingError as err:
        raise ValueError(f"refused to load {path}: it is not a data-only ctxlab sweep (reading it would run the "
                         "code it holds); delete it, or pass a cache_dir only you can write to") from err
    if not isinstance(payload, dict) or payload.get("type") != result_type.__name__:
        raise ValueError(f"refused to load {path}: not a cached {result_type.__name__}; delete it")
    return result_type(settings=settings, **payload["fields"])


class BackgroundJob:
    """Run ``fn(report)`` in a daemon thread so the notebook stays responsive while it trains.

    ``report(fraction)`` is handed to ``fn`` for progress; ``on_done(result)`` or
    ``on_error(exc)`` runs in the worker thread when it finishes.
    """

    def __init__(self, fn: Callable[[Callable[[float], None]], Any], on_done: Callable[[Any], None],
                 on_error: Callable[[BaseException], None], report: Callable[[float], None]) -> None:
        self._fn, self._on_done, self._on_error, self._report = fn, on_done, on_error, report
        self.result: Any = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.result = self._fn(self._report)
        except BaseException as exc:  # noqa: BLE001 -- surfaced in the dashboard, never lost in a thread
            self.error = exc
            self._on_error(exc)
            return
        self._on_done(self.result)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the job (tests and scripts; a notebook never needs to)."""
        self._thread.join(timeout)


def progress_probe(total_records: int, report: Callable[[float], None]) -> Callable:
    """A ``train`` probe that reports the fraction of recorded steps done; it records nothing useful."""
    seen = [0]

    def probe(model) -> torch.Tensor:
        seen[0] += 1
        report(min(1.0, seen[0] / total_records))
        return torch.zeros(model.n_models)

    return probe


def render_png(fig: Figure) -> bytes:
    """The PNG an inline backend would show (no tight bbox: the figures lay themselves out)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=fig.dpi, pil_kwargs={"compress_level": 1})
    return buf.getvalue()


class Blitter:
    """Render a Figure to PNG redrawing only what changed, over cached background pixels.

    A full Agg draw of a three-panel figure costs ~100-200 ms, mostly tick labels; the artists a
    slider moves cost a few ms. *Animated* artists are redrawn on every render over the saved
    background. ``invalidate(ax)`` re-renders just that panel's area of the background (and any
    panel overlapping it) when its limits or contents changed; ``invalidate()`` the whole
    figure. Such a figure is only complete through :meth:`render`.
    """

    def __init__(self, figure: Figure, animated: list) -> None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(figure)
        self.figure, self.animated = figure, list(animated)
        for artist in self.animated:
            artist.set_animated(True)
        self._background = None
        self._stale: set = set()
        self._extents: dict = {}

    def invalidate(self, *axes) -> None:
        """Mark ``axes`` (default: the whole figure) for a background redraw at the next render."""
        if axes:
            self._stale.update(axes)
        else:
            self._background = None

    def replace(self, old, new) -> None:
        """Swap an animated artist for a new one (a legend rebuilt for other entries)."""
        if old is not None:
            self.animated.remove(old)
        if new is not None:
            new.set_animated(True)
            self.animated.append(new)

    def render(self) -> bytes:
        canvas = self.figure.canvas
        if self._background is not None:
            canvas.restore_region(self._background)
            if self._stale and not self._redraw_panels():
                self._background = None
        if self._background is None:
            canvas.draw()
            self._extents = {ax: self._extent(ax) for ax in self.figure.axes}
        if self._background is None or self._stale:
            self._background = canvas.copy_from_bbox(self.figure.bbox)
        self._stale.clear()
        for artist in self.animated:
            self.figure.draw_artist(artist)
        return encode_png(canvas.buffer_rgba())

    def _extent(self, ax):
        """The pixels a panel's background occupies: frame, axes decorations and static texts.
        Animated artists are left out (a long title would make every panel overlap the next)."""
        from matplotlib.transforms import Bbox

        renderer = self.figure.canvas.get_renderer()
        boxes = [ax.get_window_extent(renderer)]
        boxes += [axis.get_tightbbox(renderer) for axis in (ax.xaxis, ax.yaxis) if axis.get_visible()]
        boxes += [a.get_tightbbox(renderer) for a in [ax.title, *ax.get_default_bbox_extra_artists()]
                  if a.get_visible() and not a.get_animated()]
        return Bbox.union([b for b in boxes if b is not None and np.isfinite(b.bounds).all() and b.width > 0])

    def _redraw_panels(self) -> bool:
        """Blank the stale panels' last extents (grown over any panel they touch) with the face
        colour and draw those panels again; the rest keeps its pixels. False if a panel now
        reaches outside the blanked area (longer tick labels): then only a full draw is right."""
        from matplotlib.patches import Rectangle
        from matplotlib.transforms import Bbox

        panels = set(self._stale)
        if any(ax not in self._extents for ax in panels):
            return False
        area = Bbox.union([self._extents[ax] for ax in panels])
        grown = True
        while grown:
            grown = False
            for ax in self.figure.axes:
                if ax not in panels and self._extents[ax].overlaps(area):
                    panels.add(ax)
                    area = Bbox.union([area, self._extents[ax]])
                    grown = True
        area = area.padded(1)
        blank = Rectangle((area.x0, area.y0), area.width, area.height, transform=None, linewidth=0,
                          facecolor=self.figure.get_facecolor())
        blank.set_figure(self.figure)
        self.figure.draw_artist(blank)
        for ax in self.figure.axes:
            if ax in panels:
                self.figure.draw_artist(ax)
        fresh = {ax: self._extent(ax) for ax in panels}
        self._extents.update(fresh)
        return all(area.x0 <= b.x0 and area.y0 <= b.y0 and b.x1 <= area.x1 and b.y1 <= area.y1 for b in fresh.values())


def encode_png(rgba) -> bytes:
    """PNG bytes of an RGBA buffer [H, W, 4] (a canvas after blitting); fast, lightly compressed."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.asarray(rgba)).save(buf, format="png", compress_level=1)
    return buf.getvalue()


def show_png(out, png: bytes) -> None:
    """Replace what ``out`` (an ``ipywidgets.Output``) shows by the image, in one state update.

    We never capture into the Output (``with out:`` / ``clear_output``): capturing routes the
    kernel's display messages through the Output's ``msg_id``, and nbclient's emulation of that
    (``store_widget_state=False``, as ``ctxlab build`` runs) raises a KeyError and kills the
    kernel. Assigning ``outputs`` is a plain widget-state update: no flicker, nothing routed by
    the current message, and the same from the kernel's main thread or a training thread.
    """
    bundle = {"output_type": "display_data", "metadata": {},
              "data": {"image/png": base64.b64encode(png).decode("ascii"), "text/plain": "<figure>"}}
    out.outputs = (bundle,)


class Dashboard:
    """A built dashboard: ``widget`` is the container to display; ``figure``/``png`` the last redraw.

    Displaying the dashboard displays its widget, so a notebook cell can end with it.
    """

    def __init__(self) -> None:
        self.widget = None
        self.figure: Figure | None = None
        self.png: bytes | None = None
        self.redraws = 0

    def _show(self, fig: Figure, out, png: bytes | None = None) -> None:
        self.figure, self.png = fig, render_png(fig) if png is None else png
        self.redraws += 1
        show_png(out, self.png)

    def _repr_mimebundle_(self, **kwargs):
        """The widget, plus a picture of its current (at build time: first) view for every place
        without a kernel: GitHub, nbviewer, VS Code and the course website show the ``text/html``
        (picture and a line saying where the controls work) or the ``image/png``."""
        if hasattr(self.widget, "_repr_mimebundle_"):  # ipywidgets 8
            bundle = dict(self.widget._repr_mimebundle_(**kwargs))
        else:  # ipywidgets 7 (Colab's 7.7) displays through _ipython_display_; this is the bundle it sends
            view = {"version_major": 2, "version_minor": 0, "model_id": self.widget.model_id}
            bundle = {"text/plain": repr(self.widget)[:110], "application/vnd.jupyter.widget-view+json": view}
        if self.png is not None:
            png = base64.b64encode(self.png).decode("ascii")
            bundle["image/png"] = png
            bundle["text/html"] = (f'<img class="ctxlab-snapshot" alt="the explorer\'s first view" '
                                   f'src="data:image/png;base64,{png}"/>\n<p class="ctxlab-snapshot-note">{snapshot_note()}</p>')
        return bundle


def snapshot_note() -> str:
    """The line under an explorer's saved picture: its controls need a running kernel, and where to get one."""
    links = course_links()
    where = f' (open the course in <a href="{links[0]}">Colab</a> or on <a href="{links[1]}">Binder</a>)' if links else ""
    return f"A picture of the explorer's first view: its controls need a running Python kernel{where}."


@functools.lru_cache(maxsize=1)
def course_links() -> tuple[str, str] | None:
    """Colab and Binder addresses of the course, from ``[tool.ctxlab]`` of the repository this
    package (or the working folder) lies in; None for an installed copy without one."""
    from ctxlab.repo import find_root, load_config

    for start in (Path(__file__).resolve().parent, None):
        try:
            config = load_config(find_root(start))
        except (FileNotFoundError, ValueError, OSError):
            continue
        return (f"https://colab.research.google.com/github/{config.repository}/blob/{config.branch}",
                f"https://mybinder.org/v2/gh/{config.repository}/{config.branch}")
    return None
