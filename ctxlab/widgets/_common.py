"""Plumbing shared by the dashboards: a result cache, background jobs, and inline PNG redraw.

The redraw path is the one that works everywhere (JupyterLab, Voila, Colab without ipympl):
render the Figure to PNG ourselves and replace the contents of an ``Output`` widget.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
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
    re-opened notebook can reload a sweep from ``cache_dir`` instead of recomputing it.
    """

    def __init__(self, maxsize: int = 8) -> None:
        if maxsize < 1:
            raise ValueError(f"maxsize must be at least 1, got {maxsize}")
        self.maxsize = maxsize
        self._items: OrderedDict[Any, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, settings, compute: Callable[[], Any], cache_dir: str | Path | None = None) -> Any:
        """The cached result for ``settings``, computing (and storing) it on a miss."""
        with self._lock:
            if settings in self._items:
                self._items.move_to_end(settings)
                return self._items[settings]
        path = _disk_path(settings, cache_dir)
        if path is not None and path.exists():
            result = torch.load(path, weights_only=False)
        else:
            result = compute()
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                torch.save(result, path)
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
    return Path(cache_dir) / f"{type(settings).__name__.lower()}-{digest}.pt"


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


def encode_png(rgba) -> bytes:
    """PNG bytes of an RGBA buffer [H, W, 4] (a canvas after blitting); fast, lightly compressed."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.asarray(rgba)).save(buf, format="png", compress_level=1)
    return buf.getvalue()


def show_png(out, png: bytes) -> None:
    """Replace what ``out`` (an ``ipywidgets.Output``) shows by the image, without flicker.

    In the kernel's main thread this is the Colab-safe ``clear_output(wait=True)`` + display
    inside the Output. ``with out`` routes by the main thread's current message, so a worker
    thread instead swaps the Output's contents in one state update.
    """
    from IPython.display import Image, clear_output, display

    if threading.current_thread() is threading.main_thread():
        with out:
            clear_output(wait=True)
            display(Image(data=png, format="png"))
    else:
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
        return self.widget._repr_mimebundle_(**kwargs)
