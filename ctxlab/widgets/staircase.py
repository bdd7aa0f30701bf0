"""Staircase explorer: loss, order shares and embedding PCA over a cached (γ × seed) sweep.

One batched ensemble run per (task, optimizer) does all the training; the sliders only index
the result and redraw. A γ off the grid trains in a background thread (three small models).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import torch
from matplotlib.figure import Figure

from ctxlab.align import pca_2d
from ctxlab.plots import measured_rests
from ctxlab.widgets._common import BackgroundJob, Blitter, Dashboard, render_png
from ctxlab.widgets.staircase_sweep import (OPTIMIZER_LR, StaircaseSweep, SweepSettings, staircase_sweep,
                                          sweep_from_result, sweep_settings)

MAX_RESTS = 3  # measured rests the loss panel can name for one seed


def _check_index(name: str, value: int, size: int) -> None:
    if not 0 <= value < size:
        raise IndexError(f"{name} must lie in [0, {size}), got {value}")


class StaircaseView:
    """A Figure whose artists are updated in place for each selection.

    With ``blit=True`` (the dashboard) everything a γ, seed or step change moves is an animated
    artist drawn over a saved background: the loss axis spans every run seen so far, the PCA is
    scaled per run into fixed axes and the order legend is animated too, so only a wider loss
    range redraws (one panel of) the background. Such a figure is only complete through
    :meth:`render_png`. Any sweep of the same task, seeds and orders fits.
    """

    def __init__(self, sweep: StaircaseSweep, figsize=(11.0, 3.3), dpi: int = 72, blit: bool = False) -> None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        from ctxlab.plots import ORDER_COLORS, label_levels, label_sub_levels

        self.shape = (sweep.loss.shape[1], sweep.orders, sweep.roles)
        self.figure = Figure(figsize=figsize, dpi=dpi)
        self.ax_loss, self.ax_align, self.ax_pca = self.figure.subplots(1, 3)
        self.figure.subplots_adjust(left=0.06, right=0.985, bottom=0.15, top=0.88, wspace=0.45)
        steps = sweep.steps.numpy()
        self.seed_lines = [self.ax_loss.plot(steps, steps * 0, color="lightgrey", lw=1)[0] for _ in range(self.shape[0])]
        self.loss_line = self.ax_loss.plot(steps, steps * 0, color="black", lw=1.5)[0]
        label_levels(self.ax_loss, sweep.levels)
        label_sub_levels(self.ax_loss, sweep.sub_levels)
        self.named = [*sweep.levels, *(h for _, h in sweep.sub_levels)]
        # the chosen seed's rests at none of those levels (ctxlab.plots.measured_rests), dotted grey and named
        self.rest_lines = [self.ax_loss.axhline(0, color="grey", ls=":", lw=1.0, visible=False) for _ in range(MAX_RESTS)]
        self.rest_labels = [self.ax_loss.annotate("", (1.0, 0), xycoords=("axes fraction", "data"), xytext=(3, 0),
                                                  textcoords="offset points", va="center", fontsize=7, color="grey",
                                                  annotation_clip=False) for _ in range(MAX_RESTS)]
        self.markers = [ax.axvline(0, color="crimson", lw=1) for ax in (self.ax_loss, self.ax_align)]
        self.ax_loss.set(xlabel="step", ylabel="loss (nats)", xlim=(0, steps[-1]))
        self.order_lines = {o: self.ax_align.plot(steps, steps * 0, color=ORDER_COLORS[(o - 1) % len(ORDER_COLORS)], lw=1.5,
                                                  label=f"order {o}")[0] for o in sweep.orders}
        for o in sweep.orders:
            self.ax_align.axhline(sweep.chance[o - 1], color=ORDER_COLORS[(o - 1) % len(ORDER_COLORS)], lw=0.8,
                                  ls=(0, (2, 3)))
        self.ax_align.set(xlabel="step", ylabel="share of ‖E − E₀‖²", ylim=(-0.02, 1.02), xlim=(0, steps[-1]),
                          title="order-k directions (dotted: chance)")
        self.role_index = {role: [i for i, r in enumerate(sweep.roles) if r == role] for role in dict.fromkeys(sweep.roles)}
        self.role_points = {role: self.ax_pca.scatter([0.0] * len(idx), [0.0] * len(idx), s=22, label=role,
                                                      color=ORDER_COLORS[r % len(ORDER_COLORS)])
                            for r, (role, idx) in enumerate(self.role_index.items())}
        # coordinates are divided by the run's largest radius, so these axes never change
        self.ax_pca.set(xlabel="PC 1", ylabel="PC 2", xlim=(-1.1, 1.1), ylim=(-1.1, 1.1), xticks=[], yticks=[])
        self.ax_pca.legend(loc="upper left", fontsize=7)
        self.scale_text = self.ax_pca.text(0.98, 0.02, "", transform=self.ax_pca.transAxes, ha="right", va="bottom",
                                           fontsize=8, color="dimgrey")
        moving = [*self.seed_lines, self.loss_line, *self.rest_lines, *self.rest_labels, *self.order_lines.values(), *self.markers,
                  *self.role_points.values(), self.ax_loss.title, self.ax_pca.title, self.scale_text]
        self.blitter = Blitter(self.figure, moving) if blit else None
        if not blit:
            FigureCanvasAgg(self.figure)
        self._run: tuple | None = None
        self._orders: tuple[int, ...] | None = None
        self._loss_range: tuple[float, float] | None = None
        self._radius = 1.0

    def update(self, sweep: StaircaseSweep, gamma_index: int, seed_index: int, step_index: int,
               orders: Sequence[int] | None = None) -> Figure:
        """Show one (γ, seed, step) of ``sweep`` with the chosen signature orders; returns the Figure."""
        G, S, T = sweep.loss.shape
        _check_index("gamma_index", gamma_index, G)
        _check_index("seed_index", seed_index, S)
        _check_index("step_index", step_index, T)
        if (S, sweep.orders, sweep.roles) != self.shape:
            raise ValueError("this view was built for a sweep with other seeds, orders or tokens; make a new view")
        orders = tuple(sorted(sweep.orders if orders is None else orders))
        if any(o not in sweep.orders for o in orders):
            raise ValueError(f"orders must be among {sweep.orders}, got {list(orders)}")
        self._set_frame(sweep, orders)
        run = (id(sweep), gamma_index, seed_index)
        if run != self._run:
            self._run = run
            self._set_run(sweep, gamma_index, seed_index)
        step = int(sweep.steps[step_index])
        for marker in self.markers:
            marker.set_xdata([step, step])
        coords = pca_2d(sweep.embeddings[gamma_index, seed_index, step_index]).numpy() / self._radius
        for role, points in self.role_points.items():
            points.set_offsets(coords[self.role_index[role]])
        self.ax_pca.set_title(f"embedding PCA at step {step}")
        return self.figure

    def _set_frame(self, sweep: StaircaseSweep, orders: tuple[int, ...]) -> None:
        """The background: the loss range (grown to cover every run seen) and the order legend."""
        low = min(float(sweep.loss.min()), sweep.levels[-1])
        high = max(float(sweep.loss.max()), sweep.levels[0])
        if self._loss_range is not None:
            low, high = min(low, self._loss_range[0]), max(high, self._loss_range[1])
        if (low, high) != self._loss_range:
            self._loss_range = (low, high)
            self.ax_loss.set_ylim(low - 0.03 * (high - low), high + 0.03 * (high - low))
            self._invalidate(self.ax_loss)
        if orders != self._orders:
            self._orders = orders
            for o, line in self.order_lines.items():
                line.set_visible(o in orders)
            old = self.ax_align.get_legend()
            if old is not None:
                old.remove()
            new = self.ax_align.legend(handles=[self.order_lines[o] for o in orders], loc="lower right",
                                       fontsize=8) if orders else None
            if self.blitter is not None:  # the legend is drawn over the lines, so no new background
                self.blitter.replace(old, new)

    def _set_run(self, sweep: StaircaseSweep, gamma_index: int, seed_index: int) -> None:
        for s, line in enumerate(self.seed_lines):
            line.set_ydata(sweep.loss[gamma_index, s].numpy())
        self.loss_line.set_ydata(sweep.loss[gamma_index, seed_index].numpy())
        rests = [level for level, _, _ in measured_rests(sweep.steps, sweep.loss[gamma_index, seed_index][None],
                                                         self.named)][:MAX_RESTS]
        for i, (line, label) in enumerate(zip(self.rest_lines, self.rest_labels)):
            shown = i < len(rests)
            line.set_visible(shown)
            label.set_visible(shown)
            if shown:
                line.set_ydata([rests[i], rests[i]])
                label.xy = (1.0, rests[i])
                label.set_text(f"rest (measured) = {rests[i]:.3f}")
        self.ax_loss.set_title(f"γ = {sweep.gammas[gamma_index]:g}, seed {sweep.seeds[seed_index]}, "
                               f"{sweep.settings.optimizer}")
        for o, line in self.order_lines.items():
            line.set_ydata(sweep.alignment[gamma_index, seed_index, o - 1].numpy())
        # one scale for the whole run, so the points move and the axes stay put while scrubbing
        E = sweep.embeddings[gamma_index, seed_index]
        self._radius = float((E - E.mean(1, keepdim=True)).norm(dim=-1).max()) or 1.0
        self.scale_text.set_text(f"axes: ±{1.1 * self._radius:.2g}")

    def _invalidate(self, ax) -> None:
        if self.blitter is not None:
            self.blitter.invalidate(ax)

    def render_png(self) -> bytes:
        """The PNG of the current selection; with ``blit`` only the moving artists are redrawn."""
        return render_png(self.figure) if self.blitter is None else self.blitter.render()


def draw_staircase(sweep: StaircaseSweep, gamma_index: int, seed_index: int, step_index: int,
                   orders: Sequence[int] | None = None, figsize=(11.0, 3.3), dpi: int = 72) -> Figure:
    """Loss with predicted plateaus (dashed), alignment per order, and the embedding PCA at one step."""
    return StaircaseView(sweep, figsize, dpi).update(sweep, gamma_index, seed_index, step_index, orders)


class StaircaseExplorer(Dashboard):
    """The staircase dashboard; build it with :func:`staircase_explorer`."""

    def __init__(self, settings: SweepSettings, cache_dir=None, sweep: StaircaseSweep | None = None) -> None:
        import ipywidgets as w

        super().__init__()
        self.finished = sweep is not None  # a lesson's own run: the controls look it up, nothing trains
        if sweep is not None:
            settings = sweep.settings
        self.settings, self.cache_dir = settings, cache_dir
        self.job: BackgroundJob | None = None
        self._extra: dict[tuple[str, float], StaircaseSweep] = {}  # (optimizer, γ) -> one-γ sweep
        self._sweeps = {settings.optimizer: sweep or staircase_sweep(settings, cache_dir)}
        self._current = settings.optimizer  # the optimizer whose sweep the controls index
        self._quiet = False
        sweep = self._sweeps[settings.optimizer]
        self.view = StaircaseView(sweep, blit=True)
        last = int(sweep.steps[-1])
        every = settings.record_every
        self.out = w.Output(layout=w.Layout(min_height="250px"))
        self.gamma = w.SelectionSlider(options=self._gamma_options(), description="γ", continuous_update=False)
        self.gamma.value = min(self.gamma.options, key=lambda o: abs(o[1] - 1.0))[1]
        self.step = w.IntSlider(value=last // 2 // every * every, min=0, max=last, step=every,
                                description="step", continuous_update=False)
        self.play = w.Play(value=self.step.value, min=0, max=last, step=every, interval=150, description="play")
        w.jslink((self.play, "value"), (self.step, "value"))
        self.orders = w.SelectMultiple(options=[(f"order {o}", o) for o in sweep.orders], value=tuple(sweep.orders),
                                       description="orders", rows=len(sweep.orders))
        options = list(OPTIMIZER_LR) if settings.optimizer in OPTIMIZER_LR else [settings.optimizer]
        self.optimizer = w.ToggleButtons(options=options, value=settings.optimizer, description="optimizer")
        self.seed = w.Dropdown(options=list(settings.seeds), value=settings.seeds[0], description="seed")
        self.new_gamma = w.BoundedFloatText(value=0.9, min=0.05, max=3.0, step=0.05, description="train γ")
        self.train_button = w.Button(description="train", tooltip="train this γ in the background")
        self.progress = w.FloatProgress(value=0.0, min=0.0, max=1.0, description="idle")
        self.status = w.Label("")
        if self.finished:
            for control in (self.optimizer, self.new_gamma, self.train_button):
                control.disabled = True
            self.status.value = "a finished run: staircase_explorer() trains its own sweep with these controls"
        for control in (self.gamma, self.step, self.orders, self.seed):
            control.observe(self._on_change, names="value")
        self.optimizer.observe(self._on_optimizer, names="value")
        self.train_button.on_click(lambda _: self.train_gamma(self.new_gamma.value))
        self.widget = w.VBox([
            w.HBox([self.gamma, self.seed, self.optimizer]),
            w.HBox([self.play, self.step, self.orders]),
            w.HBox([self.new_gamma, self.train_button, self.progress, self.status]),
            self.out,
        ])
        self.redraw()

    def _gamma_options(self) -> list[tuple[str, float]]:
        opt = self._current
        grid = set(self._sweeps[opt].gammas)
        extra = {g for (o, g) in self._extra if o == opt}
        return [(f"{g:g}", g) for g in sorted(grid | extra)]

    def _locate(self, gamma: float) -> tuple[StaircaseSweep, int]:
        opt = self._current
        if (opt, gamma) in self._extra:
            return self._extra[(opt, gamma)], 0
        sweep = self._sweeps[opt]
        return sweep, sweep.gammas.index(gamma)

    def redraw(self) -> None:
        """Index the cached sweep with the current controls and redraw the figure."""
        sweep, gi = self._locate(self.gamma.value)
        si = sweep.seeds.index(self.seed.value)
        ti = int(torch.argmin((sweep.steps - self.step.value).abs()))
        figure = self.view.update(sweep, gi, si, ti, sorted(self.orders.value))
        self._show(figure, self.out, self.view.render_png())

    def _on_change(self, _change=None) -> None:
        if not self._quiet:
            self.redraw()

    def _refresh_gammas(self, select: float | None = None) -> None:
        keep = self.gamma.value if select is None else select
        self._quiet = True
        try:
            self.gamma.options = self._gamma_options()
            values = [v for _, v in self.gamma.options]
            self.gamma.value = keep if keep in values else min(values, key=lambda v: abs(v - keep))
        finally:
            self._quiet = False
        self.redraw()

    def _on_optimizer(self, change) -> None:
        opt = change["new"]
        if opt in self._sweeps:
            self._switch(opt)
            return
        settings = replace(self.settings, optimizer=opt, lr=OPTIMIZER_LR[opt])

        def done(sweep: StaircaseSweep) -> None:
            self._sweeps[opt] = sweep
            if self.optimizer.value == opt:
                self._switch(opt)

        self._start(f"training the {opt} sweep", lambda report: staircase_sweep(settings, self.cache_dir, report), done)

    def _switch(self, opt: str) -> None:
        self._current = opt
        self._refresh_gammas()

    def train_gamma(self, gamma: float) -> BackgroundJob | None:
        """Train ``gamma`` (all seeds) in the background and add it to the γ slider when done."""
        if not (isinstance(gamma, (int, float)) and math.isfinite(gamma) and gamma > 0):
            raise ValueError(f"γ must be a positive number, got {gamma!r}")
        if self.finished:
            raise ValueError("this explorer shows a finished run; staircase_explorer() trains its own sweep "
                             "and can train more γ values")
        gamma, opt = float(gamma), self._current
        if gamma in [v for _, v in self.gamma.options]:
            self.gamma.value = gamma
            return None
        settings = replace(self.settings, optimizer=opt, lr=OPTIMIZER_LR[opt], gammas=(gamma,))

        def done(sweep: StaircaseSweep) -> None:
            self._extra[(opt, gamma)] = sweep
            if self._current == opt:
                self._refresh_gammas(select=gamma)

        return self._start(f"training γ = {gamma:g}", lambda report: staircase_sweep(settings, self.cache_dir, report), done)

    def _start(self, what: str, fn, on_done) -> BackgroundJob | None:
        if self.job is not None and self.job.running:
            self.status.value = "busy: wait for the current training to finish"
            return None
        self.progress.value, self.progress.description, self.status.value = 0.0, "training", what + " ..."

        def finished(result) -> None:
            on_done(result)
            self.progress.value, self.progress.description, self.status.value = 1.0, "done", what + ": done"

        def failed(exc: BaseException) -> None:
            self.progress.description, self.status.value = "failed", f"{what} failed: {exc}"

        self.job = BackgroundJob(fn, finished, failed, lambda f: setattr(self.progress, "value", f))
        return self.job


def staircase_explorer(settings: SweepSettings | None = None, cache_dir=None, result=None) -> StaircaseExplorer:
    """Build the staircase dashboard; display the returned object.

    Without ``result`` it trains (or loads) the sweep for ``settings`` first. With a
    :func:`ctxlab.experiments.staircase` result it explores that run instead, training nothing
    (and its training controls are off).
    """
    if result is not None:
        if settings is not None:
            raise ValueError("pass settings (a sweep to train) or result (a finished run), not both")
        sweep = sweep_from_result(result)
        return StaircaseExplorer(sweep.settings, cache_dir, sweep=sweep)
    return StaircaseExplorer(settings or sweep_settings(), cache_dir)
