"""Signature explorer: one token's signature row, the token x token cosine matrix, the entropy ladder.

Signatures are exact population counts, cheap next to training, so each (task, order, kind,
form) is computed on first use and cached; the token selector only indexes.
"""

from __future__ import annotations

from dataclasses import dataclass

from matplotlib.figure import Figure

from ctxlab.signatures import FORMS, KINDS, Signature, Stair, entropy_ladder, signature
from ctxlab.tasks import make_task
from ctxlab.widgets._common import Dashboard, ResultCache


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


def draw_signature(view: SignatureView, token: int, figsize=(11.0, 3.4), dpi: int = 72) -> Figure:
    """The token's signature row, the cosine-similarity matrix (token marked), and the entropy ladder."""
    from ctxlab.plots import ORDER_COLORS, cosine_similarity

    sig = view.signature
    V = sig.matrix.shape[0]
    if not 0 <= token < V:
        raise IndexError(f"token must lie in [0, {V}), got {token}")
    fig = Figure(figsize=figsize, dpi=dpi)
    ax_row, ax_cos, ax_lad = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.4, 1, 1]})
    fig.subplots_adjust(left=0.06, right=0.985, bottom=0.16, top=0.88, wspace=0.3)

    row = sig.matrix[token].numpy()
    ax_row.bar(range(len(row)), row, width=1.0, color=ORDER_COLORS[sig.order % len(ORDER_COLORS)])
    ax_row.axhline(0, color="black", lw=0.6)
    lim = float(sig.matrix.abs().max()) or 1.0
    ax_row.set(ylim=(-lim * 1.05 if (sig.matrix < 0).any() else 0, lim * 1.05), xlabel=f"column (of {len(row)})",
               title=f"{sig.name} row of token {sig.tokens[token]}")

    ax_cos.imshow(cosine_similarity(sig.matrix).numpy(), vmin=-1, vmax=1, cmap="RdBu_r", interpolation="nearest")
    ax_cos.axhline(token, color="black", lw=0.8)
    ax_cos.axvline(token, color="black", lw=0.8)
    every = 1 if V <= 20 else 3
    ax_cos.set_xticks(range(0, V, every), sig.tokens[::every], fontsize=6, rotation=90)
    ax_cos.set_yticks(range(0, V, every), sig.tokens[::every], fontsize=6)
    ax_cos.set_title("cosine similarity of rows", fontsize=10)

    orders = [s.order for s in view.ladder]
    levels = [s.entropy for s in view.ladder]
    ax_lad.step(orders + [orders[-1] + 1], levels + [levels[-1]], where="post", color="black", lw=1.5)
    if sig.kind == "label" and sig.order < len(levels):
        ax_lad.axvspan(sig.order, sig.order + 1, color=ORDER_COLORS[sig.order % len(ORDER_COLORS)], alpha=0.25)
    ax_lad.set_xticks([o + 0.5 for o in orders], [str(o) for o in orders])
    ax_lad.set(xlabel="order k", ylabel="H(Y | best k tokens)", ylim=(0, max(levels) * 1.1), title="entropy ladder")
    return fig


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
        self._show(draw_signature(view, self.token.value), self.out)


def signature_explorer(settings: SignatureSettings | None = None) -> SignatureExplorer:
    """Build the signature dashboard; display the returned object."""
    return SignatureExplorer(settings or SignatureSettings())
