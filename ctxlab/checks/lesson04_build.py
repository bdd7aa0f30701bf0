"""The build-it check of lesson 04: measure the ε⁴ law of E1 yourself.

The learner draws an Emb-MLP ensemble with one model per γ (all from one seed), computes at init the
exact embedding velocity by autograd and the E1 prediction, and returns 1 − cosine(E1, exact) per γ
with the least-squares slope of ln(1 − cosine) against ln ε, ε = (L d²)^(−γ/2) (lesson 04: h = O(ε²)
with h ∝ (L d²)^(−γ)). Two kinds of case:

* agreement: on tasks, widths, hidden widths, seeds and γ grids the check draws, every 1 − cosine and
  the slope must lie within ``RTOL`` of the reference (the library's E1 and autograd velocity);
* the law: on settings of the check's own, the learner's slope must be 4 within ``RTOL`` (the
  reference's slopes there lie within 0.004 of 4; over widths 8–64, five tasks and four seeds
  at γ ≥ 0.8 they span 3.996–4.07).

Named mistakes get hints: the wrong sign, the cosine of a per-token average or in float32, every
parameter's velocity, a velocity read after an update, ignored row weights or soft labels, a seed
per γ, the slope against γ, mixed logarithms or another ε.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from ctxlab.checks.core import HARD_LABELS_HINT, Case, Diagnosis, as_float, as_tensor, hard_labels, reweighted, run_check
from ctxlab.checks.lesson04 import zipf_hierarchy
from ctxlab.dataset import Dataset
from ctxlab.models import EmbMLP, make_model
from ctxlab.tasks import hierarchy_task, modes_task, xor_task
from ctxlab.theory import cosine_per_model, embedding_velocity, mlp_embedding_velocity
from ctxlab.token_identity import loglog_slope
from ctxlab.train import cross_entropy, train

RTOL = 0.01  # relative, on every 1 − cosine and on the slope (float32 moves the smallest gap here, 2e-9, by 5e-4)
LAW = 4.0  # the slope of ln(1 − cosine) against ln ε: E1's relative error is O(ε²), and 1 − cosine is its square
FLOAT32_STEP = 2.0 ** -24  # the spacing of float32 numbers just below 1: a float32 cosine's 1 − cos is a multiple


@dataclass(frozen=True)
class Setting:
    """A population and the Emb-MLP ensemble (one GELU model per γ, one seed) the learner's function draws."""

    label: str
    data: Dataset
    gammas: tuple[float, ...]
    d: int
    hidden: int = 128
    seed: int = 0

    def args(self) -> tuple:
        return (self.data, list(self.gammas), self.d, self.hidden, self.seed)

    def model(self, seed: int | list[int] | None = None) -> EmbMLP:
        chosen = self.seed if seed is None else seed
        return make_model("mlp", self.data, gamma=list(self.gammas), seed=chosen, d=self.d, hidden=self.hidden)

    def log_eps(self) -> Tensor:
        """ln ε per γ: ε = (L d²)^(−γ/2)."""
        return -torch.tensor(self.gammas, dtype=torch.float64) / 2 * math.log(self.data.seq_len * self.d ** 2)


def key_at(data: Dataset, position: int) -> Dataset:
    """The same population with position 0 (the hierarchy task's key) moved to ``position``."""
    order = list(range(1, data.seq_len))
    order.insert(position, 0)
    return Dataset(data.x[:, order], data.y, data.vocab_size, data.n_labels, data.weights)


def e1_gaps_reference(data: Dataset, gammas, d: int = 32, hidden: int = 128, seed: int = 0) -> Tensor:
    """1 − cosine(E1, autograd velocity) at init, one model per γ from one seed: [G] float64."""
    model = make_model("mlp", data, gamma=list(gammas), seed=seed, d=d, hidden=hidden)
    return 1 - cosine_per_model(mlp_embedding_velocity(model, data), embedding_velocity(model, data))


def e1_law_reference(data: Dataset, gammas, d: int = 32, hidden: int = 128, seed: int = 0) -> tuple[Tensor, float]:
    """(1 − cosine per γ [G], least-squares slope of ln(1 − cosine) against ln ε), ε = (L d²)^(−γ/2)."""
    gaps = e1_gaps_reference(data, gammas, d, hidden, seed)
    eps = (data.seq_len * d * d) ** (-torch.tensor(list(gammas), dtype=torch.float64) / 2)
    return gaps, float(loglog_slope(eps, gaps))


@dataclass(frozen=True)
class Expected:
    """The reference's answer on a setting; ``law``: judge only the phenomenon (slope 4)."""

    setting: Setting
    gaps: Tensor
    slope: float
    law: bool = False


def _agreement_settings() -> list[tuple[Setting, bool]]:
    h = hierarchy_task().population
    return [
        (Setting("the exercise's task, d 32, γ 0.75 to 1.5", h, (0.75, 1.0, 1.25, 1.5), 32), False),
        (Setting("key tokens at position 2, d 16", key_at(h, 1), (1.0, 1.2, 1.4), 16, seed=1), True),
        (Setting("xor task, 2000 sampled rows (integer labels), d 24, hidden 64, γ 0.5 to 1.5",
                 xor_task().sample(2000, seed=1), (0.5, 1.0, 1.5), 24, hidden=64, seed=2), True),
        (Setting("random row weights, d 48, two γ", reweighted(h, 3), (1.1, 1.3), 48, seed=3), True),
        (Setting("modes task, d 8, hidden 32, γ not in order", modes_task().population, (1.5, 0.8, 1.15, 1.9), 8,
                 hidden=32, seed=4), True),
        (Setting("Zipf-distributed keys, d 64", zipf_hierarchy(), (0.9, 1.05, 1.2), 64, seed=5), True),
    ]  # fmt: skip


def _law_settings() -> list[Setting]:
    return [
        Setting("the ε⁴ law: hierarchy task, d 16, γ 1 to 1.75", hierarchy_task().population, (1.0, 1.25, 1.5, 1.75), 16, seed=11),
        Setting("the ε⁴ law: xor task, d 24, hidden 64", xor_task().population, (1.0, 1.2, 1.4, 1.6), 24, hidden=64, seed=12),
        Setting("the ε⁴ law: Zipf keys at position 3, d 32", key_at(zipf_hierarchy(), 2), (0.9, 1.1, 1.3, 1.5), 32, seed=13),
    ]  # fmt: skip


def _cases() -> list[Case]:
    cases = [Case(s.label, s.args(), Expected(s, *e1_law_reference(*s.args())), hidden) for s, hidden in _agreement_settings()]
    return cases + [Case(s.label, s.args(), Expected(s, *e1_law_reference(*s.args()), law=True), True) for s in _law_settings()]


def _answer(got: Any, n: int) -> tuple[Tensor, float] | str:
    """The learner's (gaps [n] float64, slope) or what is wrong with its shape."""
    pair = tuple(got) if isinstance(got, (tuple, list)) else ()
    if len(pair) != 2:
        return f"expected a pair (gaps, slope), got {type(got).__name__}"
    gaps, slope = as_tensor(pair[0]), as_float(pair[1])
    if gaps is None or gaps.numel() != n or gaps.ndim != 1:
        shape = None if gaps is None else tuple(gaps.shape)
        return f"gaps: expected one 1 − cosine per γ, a tensor [{n}], got {shape or type(pair[0]).__name__}"
    if slope is None:
        return f"slope: expected a number, got {type(pair[1]).__name__}"
    return gaps.double(), slope


def _fmt(values: Tensor) -> str:
    return "[" + ", ".join(f"{float(v):.4g}" for v in values) + "]"


def _problem(got: Any, e: Expected) -> str | None:
    answer = _answer(got, len(e.setting.gammas))
    if isinstance(answer, str):
        return answer
    gaps, slope = answer
    if e.law:
        if not abs(slope - LAW) <= RTOL * LAW:
            return (f"your slope is {slope:.4g} on this setting: E1's relative error is O(ε²), so 1 − cosine ∝ ε⁴ and the "
                    f"slope against ln ε is 4 within {RTOL * LAW:g} (the reference: {e.slope:.4f})")
        return None
    off = ~((gaps - e.gaps).abs() <= RTOL * e.gaps)
    if bool(off.any()):
        k = int(off.nonzero()[0])
        return (f"at γ = {e.setting.gammas[k]:g}: expected 1 − cosine {float(e.gaps[k]):.4g}, got {float(gaps[k]):.4g} "
                f"(tolerance {RTOL:.0%} relative); expected {_fmt(e.gaps)}, got {_fmt(gaps)}")
    if not abs(slope - e.slope) <= RTOL * abs(e.slope):
        return (f"your 1 − cosine values are right, but the slope is {slope:.4g}: the least-squares slope of ln(1 − cosine) "
                f"against ln ε is {e.slope:.4f} (tolerance {RTOL:.0%})")
    return None


# --- what the named mistakes compute ------------------------------------------------------------------------


def _gap(predicted: Tensor, exact: Tensor) -> Tensor:
    return 1 - cosine_per_model(predicted, exact)


def _per_token(s: Setting, skip_zero: bool) -> Tensor:
    """Mean over tokens of 1 − cosine of each token's row; a row E1 leaves still (the anchors' rows: zero up to
    rounding) counts as cosine 0, or is left out."""
    model = s.model()
    a, b = mlp_embedding_velocity(model, s.data).double(), embedding_velocity(model, s.data).double()
    moved = a.norm(dim=-1) > 1e-6 * a.norm(dim=-1).amax(-1, keepdim=True)
    gap = torch.where(moved, 1 - (a * b).sum(-1) / (a.norm(dim=-1) * b.norm(dim=-1)).clamp_min(1e-300), 1.0)
    return torch.stack([row[m].mean() if skip_zero else row.mean() for row, m in zip(gap, moved)])


def _every_parameter(s: Setting) -> Tensor:
    """The cosine of E1 (zero for the other weights) with the velocity of every parameter together."""
    model = s.model()
    grads = torch.autograd.grad(cross_entropy(model(s.data.x), s.data).sum(), list(model.parameters()))
    together = torch.cat([g.flatten(1) for g in grads], 1).double()
    predicted = mlp_embedding_velocity(model, s.data).double().flatten(1)
    dot = (predicted * -grads[0].flatten(1).double()).sum(1)
    return 1 - dot / (predicted.norm(dim=1) * together.norm(dim=1))


def _after_update(s: Setting, exact_later: bool) -> Tensor:
    """One velocity at init, the other after one GD step at lr 1."""
    model = s.model()
    later = copy.deepcopy(model)
    train(later, s.data, 1, lr=1.0, progress=False)
    if exact_later:
        return _gap(mlp_embedding_velocity(model, s.data), embedding_velocity(later, s.data))
    return _gap(mlp_embedding_velocity(later, s.data), embedding_velocity(model, s.data))


def _with_exact_on(s: Setting, data: Dataset) -> Tensor:
    """E1 of the setting's population, the exact velocity of another (unweighted rows, argmax labels)."""
    model = s.model()
    return _gap(mlp_embedding_velocity(model, s.data), embedding_velocity(model, data))


def _unweighted(data: Dataset) -> Dataset:
    return Dataset(data.x, data.y, data.vocab_size, data.n_labels, torch.full((data.n,), 1.0 / data.n))


def _seed_per_gamma(s: Setting) -> Tensor:
    model = s.model([s.seed + k for k in range(len(s.gammas))])
    return _gap(mlp_embedding_velocity(model, s.data), embedding_velocity(model, s.data))


def _sorted_gammas(s: Setting) -> Tensor:
    return e1_gaps_reference(s.data, sorted(s.gammas), s.d, s.hidden, s.seed)


def _gives(variant: Callable[[Setting, Tensor], Tensor]) -> Callable[[Any, Expected, Case], bool]:
    """A diagnosis predicate: the learner's gaps are what ``variant`` computes (and that is not the answer)."""

    def matches(got: Any, e: Expected, case: Case) -> bool:
        answer, wrong = _answer(got, len(e.setting.gammas)), variant(e.setting, e.gaps).double()
        differs = not bool(((wrong - e.gaps).abs() <= RTOL * e.gaps).all())
        return not isinstance(answer, str) and differs and bool(((answer[0] - wrong).abs() <= 2 * RTOL * wrong.abs()).all())

    return matches


def _float32_cosine(got: Any, e: Expected, case: Case) -> bool:
    """Where 1 − cosine should be below 1e-6 the learner's is a whole multiple of 2^-24 (zero included)."""
    answer = _answer(got, len(e.setting.gammas))
    if isinstance(answer, str):
        return False
    tiny = e.gaps < 1e-6
    steps = answer[0][tiny] / FLOAT32_STEP
    return bool(tiny.any()) and bool(((steps - steps.round()).abs() < 0.02).all()) and not bool(
        ((answer[0] - e.gaps).abs() <= RTOL * e.gaps)[tiny].all())


def _not_finite(got: Any, e: Expected, case: Case) -> bool:
    answer = _answer(got, len(e.setting.gammas))
    return not isinstance(answer, str) and not bool(torch.isfinite(answer[0]).all())


def _fits(slope_of: Callable[[Setting, Tensor], float]) -> Callable[[Any, Expected, Case], bool]:
    """A diagnosis predicate: the gaps are right and the slope is ``slope_of`` the learner's own gaps."""

    def matches(got: Any, e: Expected, case: Case) -> bool:
        answer = _answer(got, len(e.setting.gammas))
        if isinstance(answer, str) or not bool(((answer[0] - e.gaps).abs() <= RTOL * e.gaps).all()):
            return False
        wrong = slope_of(e.setting, answer[0])
        return abs(wrong - e.slope) > RTOL * abs(e.slope) and abs(answer[1] - wrong) <= RTOL * abs(wrong)

    return matches


def _against(x_of: Callable[[Setting], Tensor], scale: float = 1.0) -> Callable[[Setting, Tensor], float]:
    """The slope of ``scale`` · ln(gaps) against ln x_of(setting)."""
    return lambda s, gaps: scale * float(loglog_slope(x_of(s), gaps))


def _eps(s: Setting) -> Tensor:
    return s.log_eps().exp()


def _scale_of(fan_in: Callable[[Setting], int], power: float = 1.0) -> Callable[[Setting], Tensor]:
    """ε = fan_in^(−power γ): another reading of the init scale."""
    return lambda s: fan_in(s) ** (-power * torch.tensor(s.gammas, dtype=torch.float64))


def _diagnoses() -> list[Diagnosis]:
    ln10 = math.log(10)
    cell = (lambda s: s.data.seq_len * s.d ** 2)
    return [
        Diagnosis(_gives(lambda s, gaps: 2 - gaps), "1 − cosine near 2: the cosine is near −1, so one of your two velocities has the wrong sign; the velocity is minus the gradient of the loss, dE/dt = −∂R/∂E, and E1 predicts that"),
        Diagnosis(_gives(lambda s, gaps: 1 - gaps), "those are the cosines themselves: return 1 − cosine per γ"),
        Diagnosis(_float32_cosine, "your small 1 − cosine values are 0 or whole multiples of 2⁻²⁴ ≈ 6e-8: the cosine was computed in float32, whose numbers next to 1 are 6e-8 apart; compute the dot product and the norms in float64"),
        Diagnosis(_not_finite, "a 1 − cosine is not finite: a cosine divided by a zero norm? The anchors' E1 rows are exactly zero, so a cosine per token is 0/0; the lesson's cosine is one per model, over its whole embedding table flattened"),
        Diagnosis(_gives(lambda s, gaps: _per_token(s, skip_zero=False)), "you averaged a cosine per token: the lesson's cosine is one per model, between the two velocity tables [V, d] flattened whole"),
        Diagnosis(_gives(lambda s, gaps: _per_token(s, skip_zero=True)), "you averaged a cosine per token (over the tokens E1 moves): the lesson's cosine is one per model, between the two velocity tables [V, d] flattened whole"),
        Diagnosis(_gives(lambda s, gaps: _every_parameter(s)), "your exact velocity includes the other weights: compare E1 with the velocity of the embeddings alone, −∂R/∂E [V, d]"),
        Diagnosis(_gives(lambda s, gaps: _after_update(s, True)), "one velocity was read after an update: E1 and the exact velocity must both be read at the init, before any optimizer step"),
        Diagnosis(_gives(lambda s, gaps: _after_update(s, False)), "one velocity was read after an update: E1 and the exact velocity must both be read at the init, before any optimizer step"),
        Diagnosis(_gives(lambda s, gaps: _with_exact_on(s, _unweighted(s.data))), "your loss ignores the row weights: R is the weighted sum over the population, each row's cross-entropy times data.weights"),
        Diagnosis(_gives(lambda s, gaps: _with_exact_on(s, hard_labels(s.data))), HARD_LABELS_HINT),
        Diagnosis(_gives(lambda s, gaps: _seed_per_gamma(s)), "draw every γ from the same seed: then each γ scales the same random draw and only ε changes along the grid"),
        Diagnosis(_gives(lambda s, gaps: _sorted_gammas(s)), "return the values in the order of the γ you were given (the grid need not be sorted)"),
        Diagnosis(_fits(_against(lambda s: torch.tensor(s.gammas, dtype=torch.float64).exp())), "that slope is against γ: fit against ln ε = −(γ/2) ln(L d²), which turns the per-γ slope −2 ln(L d²) into 4"),
        Diagnosis(_fits(_against(lambda s: torch.tensor(s.gammas, dtype=torch.float64).exp(), 1 / ln10)), "that slope is log10(1 − cosine) against γ (the lesson's decades per unit of γ): fit ln(1 − cosine) against ln ε instead"),
        Diagnosis(_fits(_against(_eps, 1 / ln10)), "you mixed logarithms: log10 of 1 − cosine against the natural log of ε; take the same logarithm on both axes"),
        Diagnosis(_fits(_against(_eps, ln10)), "you mixed logarithms: the natural log of 1 − cosine against log10 of ε; take the same logarithm on both axes"),
        Diagnosis(_fits(_against(_eps, -1.0)), "ε shrinks as γ grows: against ln ε itself (not ln 1/ε) the slope is positive"),
        Diagnosis(_fits(lambda s, gaps: float(loglog_slope(gaps, _eps(s)))), "the axes are swapped: fit ln(1 − cosine) (the y axis) against ln ε (the x axis)"),
        Diagnosis(_fits(_against(_scale_of(cell))), "ε² is the size of h, (L d²)^(−γ): so ε = (L d²)^(−γ/2), not (L d²)^(−γ)"),
        Diagnosis(_fits(_against(_scale_of(lambda s: s.d))), "ε is the lesson's ε of the error estimate, ε = (L d²)^(−γ/2) (h = O(ε²)): not the embedding's scale d^(−γ) alone"),
        Diagnosis(_fits(_against(_scale_of(lambda s: s.data.seq_len * s.d))), "ε is the lesson's ε of the error estimate, ε = (L d²)^(−γ/2) (h = O(ε²)): not the first layer's scale (L d)^(−γ) alone"),
    ]  # fmt: skip


def check_04_e1_law(fn: Callable[[Dataset, list, int, int, int], tuple]) -> None:
    """fn(data, gammas, d, hidden, seed) -> (gaps [G], slope): 1 − cosine(E1, exact velocity) at init of one GELU
    Emb-MLP per γ (one seed), and the least-squares slope of ln(1 − cosine) against ln ε, ε = (L d²)^(−γ/2).
    Every value within 1 % of the reference; on the check's own settings the slope within 1 % of 4."""
    run_check("check_04_e1_law", fn, _cases(), _problem, _diagnoses())
