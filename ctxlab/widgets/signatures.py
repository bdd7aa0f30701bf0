"""Signature explorer: one token's signature row, the token x token cosine matrix, the entropy ladder.

Signatures are exact population counts, cheap next to training, so each (task, order, kind,
form) is computed on first use and cached; the token selector only indexes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ctxlab.signatures import FORMS, KINDS, Signature, Stair, entropy_ladder, signature
from ctxlab.tasks import make_task
from ctxlab.widgets._common import Blitter, Dashboard, ResultCache, render_png


@dataclass(frozen=True)
class SignatureSettings:
    """Which signature to show; hashable, so it is the cache key."""

    task: str = "hierarchy"
    task_args: tuple[tuple[str, object], ...] = (("block", 6),)
    order: int = 1
    kind: str = "label"
    form: str = "incremental"


@dataclass
class SignatureView:
    """A signature with what the figure needs beside it: the task's entropy ladder and label count."""

    signature: Signature
    ladder: list[Stair]
    n_labels: int


def compute_signature(settings: SignatureSettings) -> SignatureView:
    """The signature of ``settings`` on the task's exact population (uncached)."""
    if settings.kind not in KINDS or settings.form not in FORMS:
        raise ValueError(f"kind must be one of {KINDS} and form one of {FORMS}, got {settings.kind!r}, {settings.form!r}")
    task = make_task(settings.task, **dict(settings.task_args))
    sig = signature(task.population, settings.order, settings.kind, settings.form, names=task.token_names)
    return SignatureView(sig, entropy_ladder(task.population), task.n_labels)


_VIEWS = ResultCache(maxsize=32)


def signature_view(settings: SignatureSettings) -> SignatureView:
    """Cached :func:`compute_signature`."""
    return _VIEWS.get(settings, lambda: compute_signature(settings))


class SignatureFigure:
    """The signature figure, updated in place: a new signature redraws the background once,
    a new token only moves the row, its title and the boxes around its row and column of the cosine
    matrix (drawn over it with ``blit``).

    The row is one ``stairs`` patch, not a bar per column: a third-order signature has
    thousands of columns. Built for one task's tokens; any signature of that task fits.
    """

    def __init__(self, tokens: tuple[str, ...], figsize=(11.0, 3.4), dpi: int = 72, blit: bool = False) -> None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        self.tokens = tuple(tokens)
        V = len(self.tokens)
        self.figure = Figure(figsize=figsize, dpi=dpi)
        self.ax_row, self.ax_cos, self.ax_lad = self.figure.subplots(1, 3, gridspec_kw={"width_ratios": [1.4, 1, 1]})
        self.figure.subplots_adjust(left=0.06, right=0.985, bottom=0.16, top=0.88, wspace=0.45)
        self.row = self.ax_row.stairs([0.0], [-0.5, 0.5], baseline=0.0, fill=True)
        self.ax_row.axhline(0, color="black", lw=0.6)
        self.image = self.ax_cos.imshow(np.zeros((V, V)), vmin=-1, vmax=1, cmap="RdBu_r", interpolation="nearest")
        self.figure.colorbar(self.image, ax=self.ax_cos, fraction=0.046, pad=0.03).ax.tick_params(labelsize=7)
        # the token's row and column of the matrix, boxed: a line through a cell's centre vanishes at the edge
        self.boxes = [Rectangle((-0.5, -0.5), V, 1, fill=False, ec="black", lw=1.6),
                      Rectangle((-0.5, -0.5), 1, V, fill=False, ec="black", lw=1.6)]
        for box in self.boxes:
            self.ax_cos.add_patch(box)
        every = 1 if V <= 20 else 3
        self.ax_cos.set_xticks(range(0, V, every), self.tokens[::every], fontsize=7, rotation=90)
        self.ax_cos.set_yticks(range(0, V, every), self.tokens[::every], fontsize=7)
        self.ax_cos.set_title("cosine similarity of rows (token boxed)", fontsize=10)
        self.ladder_line = self.ax_lad.step([], [], where="post", color="black", lw=1.5)[0]
        self.span = self.ax_lad.axvspan(0, 1, alpha=0.25, visible=False)
        moving = [self.row, self.image, *self.boxes, self.span, self.ax_row.title]
        self.blitter = Blitter(self.figure, moving) if blit else None
        if not blit:
            FigureCanvasAgg(self.figure)
        self._view: SignatureView | None = None

    def update(self, view: SignatureView, token: int) -> Figure:
        """Show ``token``'s row of ``view``'s signature; returns the Figure."""
        sig = view.signature
        V = sig.matrix.shape[0]
        if V != len(self.tokens):
            raise ValueError(f"this figure was built for {len(self.tokens)} tokens, the signature has {V}")
        if not 0 <= token < V:
            raise IndexError(f"token must lie in [0, {V}), got {token}")
        if view is not self._view:
            self._set_signature(view)
            self._view = view
        row = sig.matrix[token].numpy()
        self.row.set_data(values=row)
        self.ax_row.set_title(f"{sig.name} row of token {sig.tokens[token]}")
        self.boxes[0].set_y(token - 0.5)
        self.boxes[1].set_x(token - 0.5)
        return self.figure

    def _set_signature(self, view: SignatureView) -> None:
        """Everything that depends on the signature; only the row's panel needs a new background."""
        from ctxlab.plots import ORDER_COLORS, cosine_similarity

        if self._view is None:
            self._set_ladder(view.ladder)
        sig = view.signature
        m = sig.matrix.shape[1]
        color = ORDER_COLORS[sig.order % len(ORDER_COLORS)]
        self.row.set_data(values=np.zeros(m), edges=np.arange(m + 1) - 0.5)
        self.row.set_color(color)
        lim = float(sig.matrix.abs().max()) or 1.0
        self.ax_row.set(xlim=(-0.5, m - 0.5), ylim=(-lim * 1.05 if (sig.matrix < 0).any() else 0, lim * 1.05),
                        xlabel=f"column (of {m})")
        self.image.set_data(cosine_similarity(sig.matrix).numpy())
        self.span.set_visible(sig.kind == "label" and sig.order < len(view.ladder))
        self.span.set_x(sig.order)
        self.span.set_color(color)
        if self.blitter is not None:
            self.blitter.invalidate(*([] if self._view is None else [self.ax_row]))

    def _set_ladder(self, ladder: list[Stair]) -> None:
        """The task's entropy ladder: the same for every signature of the task."""
        orders = [s.order for s in ladder]
        levels = [s.entropy for s in ladder]
        self.ladder_line.set_data(orders + [orders[-1] + 1], levels + [levels[-1]])
        self.ax_lad.set_xticks([o + 0.5 for o in orders], [str(o) for o in orders])
        self.ax_lad.set(xlabel="order k", ylabel="best loss with order-k statistics", xlim=(orders[0], orders[-1] + 1),
                        ylim=(0, max(levels) * 1.1), title="entropy ladder")

    def render_png(self) -> bytes:
        """The PNG of the current selection; with ``blit`` only the moving artists are redrawn."""
        return render_png(self.figure) if self.blitter is None else self.blitter.render()


def draw_signature(view: SignatureView, token: int, figsize=(11.0, 3.4), dpi: int = 72) -> Figure:
    """The token's signature row, the cosine-similarity matrix (token marked), and the entropy ladder."""
    return SignatureFigure(view.signature.tokens, figsize, dpi).update(view, token)


class SignatureExplorer(Dashboard):
    """The signature dashboard; build it with :func:`signature_explorer`."""

    def __init__(self, settings: SignatureSettings) -> None:
        import ipywidgets as w

        super().__init__()
        self.settings = settings
        task = make_task(settings.task, **dict(settings.task_args))
        self.out = w.Output(layout=w.Layout(min_height="250px"))
        self.order = w.IntSlider(value=settings.order, min=1, max=task.seq_len, description="order k",
                                 continuous_update=False)
        self.kind = w.ToggleButtons(options=list(KINDS), value=settings.kind, description="kind")
        self.form = w.ToggleButtons(options=list(FORMS), value=settings.form, description="form")
        self.token = w.Dropdown(options=[(n, i) for i, n in enumerate(task.token_names)], value=0, description="token")
        self.status = w.Label("")
        self.view = SignatureFigure(task.token_names, blit=True)
        for control in (self.order, self.kind, self.form, self.token):
            control.observe(lambda _: self.redraw(), names="value")
        self.widget = w.VBox([w.HBox([self.order, self.token]), w.HBox([self.kind, self.form]), self.status, self.out])
        self.redraw()

    def redraw(self) -> None:
        """Draw the selected signature; an order the kind cannot support is explained, not raised."""
        chosen = SignatureSettings(self.settings.task, self.settings.task_args, self.order.value,
                                   self.kind.value, self.form.value)
        try:
            view = signature_view(chosen)
        except ValueError as exc:
            self.status.value = str(exc)
            return
        self.status.value = ""
        figure = self.view.update(view, self.token.value)
        self._show(figure, self.out, self.view.render_png())


def signature_explorer(settings: SignatureSettings | None = None) -> SignatureExplorer:
    """Build the signature dashboard; display the returned object."""
    return SignatureExplorer(settings or SignatureSettings())
