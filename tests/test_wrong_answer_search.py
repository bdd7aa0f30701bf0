"""A systematic search for wrong answers that the exercise checks accept (issue 28).

For the checks whose inputs are plain tensors, numbers and small datasets, a Hypothesis strategy
(``tests/contracts/strategies.py``) draws inputs across everything the exercise text allows. For every
named wrong answer of the check's contract row, and for the held-out mistakes below (kinds a review
found accepted), ``hypothesis.find`` first shows that the wrong answer really differs from the
contract's reference somewhere inside the text (else it is no wrong answer), and then the check, run on
the wrong answer as a learner would, must raise AssertionError. A check that accepts one is a gap: its
test is marked ``xfail(strict=True, raises=WrongAnswerAccepted)`` with the case that would catch it (see
``KNOWN_GAPS``), so the file stays green, the gap stays visible, and the mark must go once the check's cases
catch it (``--runxfail`` prints the counterexample the search found).

Every contract reference is also property-tested against the library function the check compares with
and against a plain-Python reading of the exercise text (``oracle``). The searches are derandomized.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import torch
from contracts import (contract_01, contract_02, contract_03, contract_04, contract_05, contract_06, contract_07, contract_08, contract_09,
                       contract_10, contract_11, contract_12, contract_13, contract_14, contract_15, contract_16, contract_17)
from contracts import strategies as S
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample
from torch import Tensor

from ctxlab import checks
from ctxlab.align import cka, subspace_fraction
from ctxlab.checks.core import as_float, as_ints, as_tensor, hard_labels, integer_equal, number_close, tensor_close
from ctxlab.checks.lesson02 import N_SPREAD_SEEDS, baseline_expected
from ctxlab.checks.lesson02 import _baseline_problem as baseline_problem
from ctxlab.checks.lesson02 import _rotation_problem as rotation_problem
from ctxlab.checks.lesson03 import dwell_reference, longest_wait_reference, rise_and_end_reference, stair_onsets_reference
from ctxlab.checks.lesson04 import measured_ratio
from ctxlab.checks.lesson05 import singular_values_reference, switch_on_order_reference
from ctxlab.checks.lesson06 import splitting_pairs
from ctxlab.checks.lesson07 import leaves_uniform
from ctxlab.checks.lesson08 import _corner_problem as corner_problem
from ctxlab.checks.lesson08 import layernorm_norms_reference, no_plateau_corner_reference
from ctxlab.checks.lesson08_build import classify_cells_reference, run_label
from ctxlab.checks.lesson09 import bigram_counts, bigram_table, closest_steps, kl_to_bigram
from ctxlab.checks.lesson09_build import _names_problem as names_problem
from ctxlab.checks.lesson09_build import band_margins_reference, leading_signature_reference, margin_variant
from ctxlab.checks.lesson10 import bin_cka, signature_from_counts
from ctxlab.checks.lesson10_build import frequency_report_reference, report_differs
from ctxlab.checks.lesson10_reading import read_report_reference
from ctxlab.checks.lesson11 import _same_table as same_table
from ctxlab.checks.lesson11 import finishing_order
from ctxlab.checks.lesson13 import classes_of, knn_overlap, same_partition, shared_count
from ctxlab.checks.lesson13_build import first_step_at_or_below
from ctxlab.checks.lesson17 import linear_path, path_problem, untouched
from ctxlab.checks.lesson14_build import SIZE_RTOL, rms_entry, scale_codes_reference
from ctxlab.checks.lesson16_build import bin_gain_reference, close_problem, token_update_sizes_reference
from ctxlab.composition import line_up
from ctxlab.dataset import Dataset
from ctxlab.fixed_codes import binary_codes, first_layer_rows
from ctxlab.learning_times import order_losses, r_squared, token_orders
from ctxlab.rungs import measure_rungs, stair_onsets
from ctxlab.signatures import conditional_entropy, joint, label_signature
from ctxlab.theory import bag_of_context
from ctxlab.theory import fit_growth_rate, model_weights, prefix_data
from ctxlab.transplant import signature_embedding
from ctxlab.token_identity import bin_losses, loglog_slope, rung_steps

# The search stops at the first input that tells a wrong answer apart; CTXLAB_SEARCH_SHRINK=1 also shrinks it
# to a minimal one (slower). `pytest --runxfail` prints each gap's counterexample.
PHASES = [Phase.generate, Phase.shrink] if os.environ.get("CTXLAB_SEARCH_SHRINK") == "1" else [Phase.generate]
SEARCH = settings(derandomize=True, database=None, max_examples=400, deadline=None, phases=PHASES,
                  suppress_health_check=list(HealthCheck))
FIT_SEARCH = settings(SEARCH, max_examples=20)  # each try fits curves
AGREE = settings(SEARCH, max_examples=60, phases=[Phase.generate])


class WrongAnswerAccepted(AssertionError):
    """The check passed a wrong answer that differs from the reference inside the exercise's text."""


# --- held-out wrong answers: the kinds a review found accepted, and their neighbours ----------------


def _greedy(matrix: Tensor, same: Callable[[Tensor, Tensor], bool]) -> list[int]:
    reps: list[Tensor] = []
    ids = []
    for row in matrix.double():
        match = [i for i, rep in enumerate(reps) if same(row, rep)]
        ids.append(match[0] if match else len(reps))
        reps += [] if match else [row]
    return ids


def cka_centred_over_features(E, S):
    """Each token's mean coordinate subtracted (rows centred), not each coordinate's mean over tokens."""
    return contract_02.uncentred_cka(E - E.mean(1, keepdim=True), S - S.mean(1, keepdim=True))


def cka_centred_by_one_mean(E, S):
    """One overall mean subtracted from every entry, not a mean per column."""
    return contract_02.uncentred_cka(E - E.mean(), S - S.mean())


def bin_centred_over_all_tokens(E, S, frequency, lo, hi):
    """E and S centred over the whole vocabulary, then the bin's rows taken (not centred over the bin)."""
    idx = frequency.argsort(descending=True, stable=True)[lo:hi]
    return contract_02.uncentred_cka((E - E.mean(0))[idx].double(), (S - S.mean(0))[idx].double())


def bin_by_frequency_thresholds(E, S, frequency, lo, hi):
    """Every token whose frequency lies between the rank-(hi-1) and rank-lo values: ties at an edge let
    extra tokens in."""
    ranked = frequency.sort(descending=True).values
    keep = (frequency <= ranked[lo]) & (frequency >= ranked[hi - 1])
    return float(cka(E[keep].double(), S[keep].double()))


def rebuild_sst_about_the_rebuild(mean, fitted, weights):
    """SST taken about the rebuild's time-mean, not the measured curve's."""
    rebuilt = weights.double() @ fitted.double()
    mean = mean.double()
    return float(1 - (mean - rebuilt).pow(2).sum() / (mean - rebuilt.mean()).pow(2).sum())


def rebuild_summed_not_weighted(mean, fitted, weights):
    """The fitted curves added up, each with weight 1."""
    return float(r_squared(mean, fitted.double().sum(0)))


def gain_as_difference(without, with_tables, data, edges, position):
    """The bin's mean update with tables minus, not over, its mean update without."""
    return _gain_means(without, with_tables, data, edges, position, lambda a, b: a - b)


def gain_absent_tokens_in_the_first_bin(without, with_tables, data, edges, position):
    """A token that never occurs at the position (π = 0) counted in a first bin whose lower edge is 0."""
    return _gain_means(without, with_tables, data, edges, position, lambda a, b: a / b, closed_at_zero=True)


def _gain_means(without, with_tables, data, edges, position, combine, closed_at_zero=False):
    freq = torch.zeros(data.vocab_size, dtype=torch.float64).index_add_(0, data.x[:, position].long(), data.weights.double())
    out = []
    for b, (lo, hi) in enumerate(zip(edges[:-1], edges[1:])):
        inside = (freq > lo) & (freq <= hi)
        if closed_at_zero and b == 0 and lo == 0:
            inside = inside | (freq == 0)
        ids = inside.nonzero()[:, 0]
        out.append(combine(with_tables.double()[:, ids].mean(1), without.double()[:, ids].mean(1)) if len(ids)
                   else torch.full((without.shape[0],), float("nan"), dtype=torch.float64))
    return torch.stack(out, dim=1)


def margins_from_the_records_mean(embeddings, signature, perms):
    """The displacement taken from the mean over records, not from record 0."""
    E = embeddings.double()
    displaced = torch.cat([torch.zeros_like(E[:, :1]), E - E.mean(1, keepdim=True)], 1)  # a zero record first
    return band_margins_reference(displaced, signature, perms)[:, 1:]


def margins_without_the_first_shuffle(embeddings, signature, perms):
    """The band's top taken over all shuffles but the first."""
    if len(perms) == 1:  # no shuffle left: the raw CKA
        return margin_variant(embeddings, signature, perms, band="none")
    return band_margins_reference(embeddings, signature, perms[1:])


def bigram_alpha_once_per_row(tokens, V, alpha):
    """alpha added to each count, but only once (not V times) to the row's total."""
    counts = bigram_counts(tokens, V)
    return (counts + alpha) / (counts.sum(1, keepdim=True) + alpha)


def bigram_both_directions(tokens, V, alpha):
    """Each pair counted as (a, b) and as (b, a)."""
    counts = bigram_counts(tokens, V)
    counts = counts + counts.T + alpha
    return counts / counts.sum(1, keepdim=True)


def bigram_unseen_rows_zero(tokens, V, alpha):
    """Smoothing only in rows whose token has a successor; the others left at zero."""
    counts = bigram_counts(tokens, V)
    seen = counts.sum(1, keepdim=True) > 0
    smoothed = (counts + alpha) / (counts + alpha).sum(1, keepdim=True)
    return torch.where(seen, smoothed, 0.0)


def closest_after_record_0(steps, kl):
    """Record 0 (the init) skipped, as if it could not be the closest."""
    return steps[1:][kl[:, 1:].argmin(-1)] if kl.shape[1] > 1 else steps[:1].expand(kl.shape[0])


def _leaders_by(steps, margins, from_step, by, lead_of):
    names, kept = list(margins), torch.as_tensor(steps) >= from_step
    out = []
    for k in range(len(margins[names[0]])):
        rows = {n: torch.as_tensor(margins[n], dtype=torch.float64)[k, kept] for n in names}
        out.append(next((n for n in names if bool((lead_of(rows, n) > by).all())), None))
    return out


def leader_over_the_others_mean(steps, margins, from_step, by):
    """The lead taken over the mean of the other signatures, not over each of them."""
    return _leaders_by(steps, margins, from_step, by, lambda rows, n: rows[n] - torch.stack(
        [r for o, r in rows.items() if o != n]).mean(0))


def leader_by_absolute_gap(steps, margins, from_step, by):
    """The gap |m_i - m_j| exceeding by, whichever margin is larger."""
    return _leaders_by(steps, margins, from_step, by, lambda rows, n: torch.stack(
        [(rows[n] - r).abs() for o, r in rows.items() if o != n]).amin(0))


def _signature_rows(data, orders) -> Tensor:
    return torch.cat([label_signature(data, k, "incremental").matrix.double() for k in orders], dim=1)


def table_centred_by_frequency(data, d, orders, norm):
    """The rows centred on the frequency-weighted mean token (how often each token occurs), not the plain mean row."""
    S = _signature_rows(data, orders)
    freq = torch.zeros(data.vocab_size, dtype=torch.float64).index_add_(
        0, data.x.reshape(-1), data.weights.double().repeat_interleave(data.x.shape[1]))
    S = S - (freq / freq.sum()) @ S
    U, sv, _ = torch.linalg.svd(S, full_matrices=False)
    E = torch.zeros(data.vocab_size, d, dtype=torch.float64)
    r = min(d, sv.numel())
    E[:, :r] = U[:, :r] * sv[:r]
    return (E * (norm / E.norm())).float()


def table_rescaled_before_truncating(data, d, orders, norm):
    """Every principal component rescaled to the norm first, then only d of them kept."""
    S = _signature_rows(data, orders)
    U, sv, _ = torch.linalg.svd(S - S.mean(0), full_matrices=False)
    full = U * sv * (norm / float(sv.norm()))
    E = torch.zeros(data.vocab_size, d, dtype=torch.float64)
    r = min(d, sv.numel())
    E[:, :r] = full[:, :r]
    return E.float()


def rows_through_the_last_block(E, W1, pos):
    """Every token through the last position's block W1_{L-1}."""
    return E @ W1[-E.shape[1]:]


def rows_with_positions_from_one(E, W1, pos):
    """Positions read as 1-based: block pos - 1 (position 0 wraps round to the last block)."""
    blocks = W1.reshape(-1, E.shape[1], W1.shape[1])
    return torch.einsum("vd,vdh->vh", E, blocks[torch.as_tensor(pos).long() - 1])


def share_over_the_uncentred_norm(M, S):
    """The centred part inside the span over the uncentred ||M||²."""
    Mc, Sc = M.double() - M.double().mean(0), S.double() - S.double().mean(0)
    U, sv, _ = torch.linalg.svd(Sc, full_matrices=False)
    U = U[:, sv > 1e-6 * sv.max()]
    return float((U.T @ Mc).pow(2).sum() / M.double().pow(2).sum())


def share_with_every_column_a_direction(M, S):
    """An orthonormal basis from QR of the centred S, one direction per column, its rank never checked."""
    Mc, Sc = M.double() - M.double().mean(0), S.double() - S.double().mean(0)
    Q, _ = torch.linalg.qr(Sc)
    return float((Q.T @ Mc).pow(2).sum() / Mc.pow(2).sum())


def _labels_by(steps, losses, levels, min_rest, label):
    return [[label(steps, torch.as_tensor(curve, dtype=torch.float64), levels, min_rest) for curve in row]
            for row in torch.as_tensor(losses)]


def cells_dead_on_any_return(steps, losses, levels, min_rest=50):
    """'dead' for a run that comes back within 0.01 of H0 at any record after leaving it, even if it leaves again."""
    def label(steps, loss, levels, min_rest):
        if bool(torch.isfinite(loss).all()):
            away = (loss - float(levels[0])).abs() > 0.01
            if bool(away.any()) and not bool(away[int(away.double().argmax()):].all()):
                return "dead"
        return run_label(steps, loss, levels, min_rest)
    return _labels_by(steps, losses, levels, min_rest, label)


def cells_rest_on_any_level(steps, losses, levels, min_rest=50):
    """'rest' when the run rests on any level of the ladder for min_rest steps, not on H0."""
    def label(steps, loss, levels, min_rest):
        first = run_label(steps, loss, levels, min_rest)
        if first != "no rest":
            return first
        return "rest" if max(r.dwell for r in measure_rungs(steps, loss, levels).rungs) >= min_rest else first
    return _labels_by(steps, losses, levels, min_rest, label)


def _corner_from(gammas, lrs, kept: Tensor, kept_lrs) -> tuple[float, float]:
    gamma = gammas[0] if float(kept[0].mean()) < float(kept[-1].mean()) else gammas[-1]
    lr = kept_lrs[0] if float(kept[:, 0].mean()) < float(kept[:, -1].mean()) else kept_lrs[-1]
    return float(gamma), float(lr)


def corner_dropping_only_all_nan_columns(gammas, lrs, plateau):
    """A learning rate dropped only where every run diverged; a column with one NaN kept (its mean NaN)."""
    plateau = torch.as_tensor(plateau, dtype=torch.float64)
    stable = [j for j in range(len(lrs)) if not bool(plateau[:, j].isnan().all())]
    return _corner_from(gammas, lrs, plateau[:, stable], [lrs[j] for j in stable])


def corner_dropping_rows(gammas, lrs, plateau):
    """The γ rows with a diverged run dropped instead of the learning-rate columns."""
    plateau = torch.as_tensor(plateau, dtype=torch.float64)
    rows = [i for i in range(len(gammas)) if not bool(plateau[i].isnan().any())]
    return _corner_from([gammas[i] for i in rows], lrs, plateau[rows], lrs)


def codes_at_the_ensembles_mean_size(codes, learned):
    """Every table's codes scaled to the mean of the tables' RMS entries, not each table's own."""
    size = rms_entry(learned).mean(dim=tuple(range(learned.ndim - 2)), keepdim=True) if learned.ndim > 2 else rms_entry(learned)
    return (codes.double() * size.expand_as(rms_entry(learned)) / rms_entry(codes)).to(codes.dtype)


def codes_at_the_mean_row_size(codes, learned):
    """The size of a table read as the mean of its rows' RMS entries."""
    size = learned.double().pow(2).mean(-1, keepdim=True).sqrt().mean(-2, keepdim=True)
    return (codes.double() * size / rms_entry(codes)).to(codes.dtype)


def _deviation(q: Tensor) -> float:
    return float((q.double() - 1.0 / len(q)).norm())


def ratio_squared_deviations(pa, pb, qa, qb):
    """The squared norms of q - u (a loss-like quantity), not the norms."""
    return pa / pb * _deviation(qa) ** 2 / _deviation(qb) ** 2


def ratio_entropy_gaps(pa, pb, qa, qb):
    """How far each signature's entropy sits below ln C, in place of ||q - u||."""
    def gap(q):
        q = q.double()
        return math.log(len(q)) + float((q * q.clamp_min(1e-300).log()).sum())
    return pa / pb * gap(qa) / gap(qb)


def ratio_root_frequencies(pa, pb, qa, qb):
    """sqrt(pi_a / pi_b), as if the frequency entered through a norm."""
    return math.sqrt(pa / pb) * _deviation(qa) / _deviation(qb)


def uniform_positions_after_values(model, x):
    """The positions added after the value map: mean_j E[x_j] W_V + mean_j P_j."""
    E, P, W_v = model.embedding.detach(), model.position.detach(), model.w_v.detach()
    return E[:, x].mean(2) @ W_v + P.mean(1, keepdim=True)


def uniform_last_value_only(model, x):
    """Only the last position's value (the query's own row), not the mean over positions."""
    h = model.embedding.detach()[:, x[:, -1]] + model.position.detach()[:, -1:]
    return h @ model.w_v.detach()


def leaves_one_over_context(steps, weights, L, tol=0.01):
    """1/L taken over the context positions only: 1/(L - 1)."""
    return leaves_uniform(steps, weights, L - 1, tol) if L > 1 else leaves_uniform(steps, weights, L, tol)


def leaves_by_change(steps, weights, L, tol=0.01):
    """A jump of more than tol between records (the first record against 1/L), not a distance from 1/L."""
    w = torch.as_tensor(weights, dtype=torch.float64)
    jumps = torch.cat([w[:, :1] - 1.0 / L, w.diff(dim=-1)], dim=-1)
    return leaves_uniform(steps, 1.0 / L + jumps, L, tol)


def leaves_before_last_record(steps, weights, L, tol=0.01):
    """The last record never looked at (a loop over range(T - 1))."""
    if weights.shape[-1] < 2:
        return torch.full((weights.shape[0],), -1)
    return leaves_uniform(steps[:-1], weights[:, :-1], L, tol)


def layernorm_rms(E):
    """The root mean square of each normalised row (about 1), not its norm (about √d)."""
    return layernorm_norms_reference(E) / math.sqrt(E.shape[1])


def layernorm_centred_over_tokens(E):
    """Each coordinate's mean over the tokens subtracted, then every row scaled by its own spread."""
    E = torch.as_tensor(E, dtype=torch.float64)
    centred = E - E.mean(0, keepdim=True)
    return (centred / (centred.pow(2).mean(-1, keepdim=True) + 1e-5).sqrt()).norm(dim=-1)


def kl_softmax_over_positions(logits, table, x):
    """log_softmax over the positions (dim 1), not over the vocabulary."""
    logp = torch.log_softmax(logits.double(), dim=1)
    return float((logp.exp() * (logp - table.double()[x].log())).sum(-1).mean())


def kl_next_token_row(logits, table, x):
    """The bigram row of the next token, x[t + 1], set beside the prediction at t (the last position dropped)."""
    if x.shape[1] < 2:
        return float("nan")
    return kl_to_bigram(logits[:, :-1], table, x[:, 1:])


def kl_mean_over_entries(logits, table, x):
    """The mean over the vocabulary as well: .mean() of p (log p - log q) without the sum over V."""
    logp = torch.log_softmax(logits.double(), dim=-1)
    return float((logp.exp() * (logp - table.double()[x].log())).mean())


def order_without_record_0(steps, a, level):
    """Record 0 (the init) never looked at, as if a mode could not start at the level."""
    if len(steps) < 2:
        return list(range(a.shape[1]))
    return contract_05.order(steps[1:], a[1:], level)


def order_without_last_record(steps, a, level):
    """The last record never looked at (a loop over range(T - 1))."""
    if len(steps) < 2:
        return list(range(a.shape[1]))
    return contract_05.order(steps[:-1], a[:-1], level)


def rate_signed_log(t, a, lo, hi):
    """ln a, not ln |a|: a mode growing with a negative sign gives NaN."""
    inside = (t >= lo) & (t <= hi)
    x, y = t[inside].double(), a[inside].double().log()
    return float(((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum())


def rate_window_by_index(t, a, lo, hi):
    """start and stop used as record indices, not steps."""
    lo_i, hi_i = max(int(math.ceil(lo)), 0), int(math.floor(hi))
    return contract_05.rate(t[lo_i:hi_i + 1], a[lo_i:hi_i + 1], float(t[lo_i]), float(t[min(hi_i, len(t) - 1)]))


def line_up_values_uncentred(E, tokens, values):
    """The embeddings centred, the values not."""
    X, v = (E[tokens] - E[tokens].mean(0)).double(), values.double()
    return float((v @ X).pow(2).sum() / (v @ v) / X.pow(2).sum())


def line_up_first_rows(E, tokens, values):
    """The first n rows of E, not the rows of the listed tokens."""
    return float(line_up(E, torch.arange(len(tokens)), values))


def line_up_per_coordinate(E, tokens, values):
    """R² of each coordinate on the value, averaged over the coordinates, not pooled."""
    X, v = (E[tokens] - E[tokens].mean(0)).double(), values.double() - values.double().mean()
    return float((((v @ X) ** 2 / (v @ v)) / X.pow(2).sum(0).clamp_min(1e-300)).mean())


def pairs_loose_tolerance(data):
    """"Clearly non-zero": a tolerance of 1e-2, which drops weak pair terms."""
    return splitting_pairs(data, tol=1e-2)


def pairs_with_the_last_position(data):
    """Only pairs that end at the last position, as if the key sat there."""
    return [(i, j) for i, j in splitting_pairs(data) if j == data.seq_len - 1]


def pairs_by_entropy_drop(data):
    """A pair kept when H(Y | x_i, x_j) lies below both H(Y | x_i) and H(Y | x_j): true whenever both carry
    order-1 information, pair term or not."""
    return [(i, j) for i in range(data.seq_len) for j in range(i + 1, data.seq_len)
            if conditional_entropy(data, (i, j)) < min(conditional_entropy(data, (i,)), conditional_entropy(data, (j,))) - 1e-9]


def matched_without_record_0(steps, loss, target):
    """Record 0 never looked at, as if a model could not start at the target."""
    if steps.shape[1] < 2:
        return torch.full((steps.shape[0],), math.nan, dtype=torch.float64)
    return contract_13.first_steps(steps[:, 1:], loss[:, 1:], target)


def matched_float_equality_tolerance(steps, loss, target):
    """'At or below' read with a tolerance: loss <= target + 1e-3."""
    return contract_13.first_steps(steps, loss, target + 1e-3)


def loglog_intercept(frequency, size):
    """The fit's intercept (np.polyfit(...)[1]), not its slope."""
    x, y = frequency.double().log(), size.double().log()
    slope = float(loglog_slope(frequency, size))
    return float(y.mean() - slope * x.mean())


def loglog_end_points(frequency, size):
    """The slope between the rarest and the most frequent token only."""
    lo, hi = int(frequency.argmin()), int(frequency.argmax())
    return float((size[hi].double().log() - size[lo].double().log()) / (frequency[hi].double().log() - frequency[lo].double().log()))


def loglog_sorted_apart(frequency, size):
    """Frequencies and sizes each sorted on their own (for a plot), which breaks their pairing."""
    return float(loglog_slope(frequency.sort().values, size.sort().values))


def signature_counted_both_ways(tokens, V):
    """Both halves from the symmetrised counts C + Cᵀ (each pair counted in both directions)."""
    both = bigram_counts(tokens, V) + bigram_counts(tokens, V).T
    rows = both / both.sum(1, keepdim=True).clamp_min(1e-300)
    return torch.cat([rows, rows], 1)


def signature_one_row_distribution(tokens, V):
    """Each row normalised over all 2V columns at once, so that each half sums to about 1/2."""
    C = bigram_counts(tokens, V)
    joint = torch.cat([C, C.T], 1)
    return joint / joint.sum(1, keepdim=True).clamp_min(1e-300)


def order1_uniform_fill(data):
    """Tokens absent from a position filled with the uniform 1/C, not with P(y)."""
    out = contract_01.order1(data).clone()
    present = torch.stack([torch.bincount(data.x[:, i], minlength=data.vocab_size) > 0 for i in range(data.seq_len)], 1)
    blocks = out.reshape(data.vocab_size, data.seq_len, data.n_labels)
    blocks[~present] = 1.0 / data.n_labels
    return blocks.reshape(data.vocab_size, -1)


def pair_first_row_only(data, i, j):
    """P(y | s, t) read from the first row holding (s, t), not averaged over all of them."""
    out = contract_01.pair(data, i, j).clone()
    y, w = data.targets().double(), data.weights.double()
    seen = set()
    for row, (s, t) in enumerate(zip(data.x[:, i].tolist(), data.x[:, j].tolist())):
        if (s, t) in seen:
            continue
        seen.add((s, t))
        rows = (data.x[:, i] == s) & (data.x[:, j] == t)
        mean = (y[rows] * w[rows, None]).sum(0) / w[rows].sum()
        out[s, t] += y[row] - mean
    return out


def residual_of_argmax(data, probs, i, j):
    """The model's argmax as its prediction (one-hot p), not its probabilities."""
    hard = torch.nn.functional.one_hot(probs.argmax(-1), data.n_labels).to(probs.dtype)
    return contract_06.pair_residual(data, hard, i, j)


def residual_over_the_first_position(data, probs, i, j):
    """Rows grouped by x_i alone: the same residual for every t (where the pair occurs)."""
    V, w = data.vocab_size, data.weights.double()
    err = w[:, None] * (data.targets().double() - probs.double())
    by_s = torch.zeros(V, data.n_labels, dtype=torch.float64).index_add_(0, data.x[:, i], err)
    by_s = by_s / torch.zeros(V, dtype=torch.float64).index_add_(0, data.x[:, i], w).clamp_min(1e-300)[:, None]
    occurs = contract_06.pair_residual(data, torch.zeros_like(probs), i, j).abs().sum(-1, keepdim=True) > 0
    return by_s[:, None].expand(V, V, -1) * occurs


def svals_first_position_only(data):
    """The key's block alone (x_0), not every position's."""
    first = Dataset(data.x[:, :1], data.y, data.vocab_size, data.n_labels, data.weights)
    return singular_values_reference(first)


def svals_squared(data):
    """Eigenvalues of Σ Σᵀ, the squares of the singular values."""
    return singular_values_reference(data) ** 2


def race_summed_over_seeds(runs, levels):
    """The seeds' steps summed, not averaged: a condition with fewer seeds looks faster."""
    return _race_by(runs, levels, lambda last: float(last.double().sum()))


def race_by_record_index(runs, levels):
    """The mean crossing index, not the mean step: conditions on other grids are compared wrongly."""
    def index(steps, loss):
        below = torch.as_tensor(loss) < (levels[-2] + levels[-1]) / 2
        return torch.where(below.any(1), below.int().argmax(1), torch.full((below.shape[0],), -1))
    done = {n: index(*run) for n, run in runs.items()}
    done = {n: float(v.double().mean()) for n, v in done.items() if bool((v >= 0).all())}
    return sorted(done, key=done.get)


def _race_by(runs, levels, summary):
    done = {}
    for name, (steps, loss) in runs.items():
        last = stair_onsets(torch.as_tensor(steps), torch.as_tensor(loss), list(levels))[:, -1]
        if bool((last >= 0).all()):
            done[name] = summary(last)
    return sorted(done, key=done.get)


def rows_isclose_default_rtol(matrix, atol):
    return len(set(_greedy(matrix, lambda a, b: bool(torch.isclose(a, b, atol=atol).all()))))


def rows_euclidean(matrix, atol):
    return len(set(_greedy(matrix, lambda a, b: float((a - b).norm()) <= atol)))


def classes_isclose_default_rtol(S_):
    return torch.tensor(_greedy(S_, lambda a, b: bool(torch.isclose(a, b, atol=1e-6).all())))


def entropy_contexts_unweighted(data, positions):
    """Mean of the per-context entropies H(Y | x_S = c), every context counted once."""
    p = joint(data, tuple(positions)).reshape(-1, data.n_labels).double()
    p = p[p.sum(1) > 0]
    q = p / p.sum(1, keepdim=True)
    return float(-(q * torch.where(q > 0, q.log(), 0.0)).sum(1).mean())


def dwell_flat_within_tol(steps, loss, levels, tol=0.01):
    width = steps.diff().double()
    flat = loss.diff().abs() / width <= tol  # tol where the text says tol / 100
    return [int(width[((loss - h).abs() <= tol)[1:] & ((loss - h).abs() <= tol)[:-1] & flat].sum()) for h in levels]


def onsets_even_grid(steps, loss, levels):
    """Index of the crossing times the first step gap: right only on an even grid from steps[0]."""
    out = []
    for above, below in zip(levels[:-1], levels[1:]):
        hit = (loss < (above + below) / 2).nonzero().flatten()
        out.append(int(steps[0] + hit[0] * (steps[1] - steps[0])) if len(hit) else -1)
    return out


def rise_without_leaving_point(steps, loss, levels, tol=0.01):
    _, ends = rise_and_end_reference(steps, loss, levels, tol)
    left = (loss < levels[0] - tol).nonzero().flatten()
    after = loss[int(left[0]) + 1:] if len(left) else loss[:0]
    return (float((after - after.cummin(0).values).max()) if len(after) else 0.0), ends


def _waits(steps, losses, gammas, levels, never):
    onsets = [stair_onsets_reference(steps, curve, levels)[0] for curve in losses]
    waits: dict[float, list[float]] = {}
    for g, onset in zip(gammas, onsets):
        waits.setdefault(g, []).append(onset if onset >= 0 else never)
    return waits


def wait_summed_over_seeds(steps, losses, gammas, levels):
    sums = {g: sum(w) for g, w in _waits(steps, losses, gammas, levels, int(steps[-1]) + 1).items()}
    return max(sorted(sums), key=sums.get)


def wait_never_as_last_step(steps, losses, gammas, levels):
    means = {g: sum(w) / len(w) for g, w in _waits(steps, losses, gammas, levels, int(steps[-1])).items()}
    return max(sorted(means), key=means.get)


def knn_self_as_column_0(A, B, k):
    """Top k + 1 with the diagonal in, then drop column 0, assuming it is the token itself."""
    def top(M):
        unit = M.double() / M.double().norm(dim=1, keepdim=True)
        return (unit @ unit.T).topk(k + 1, dim=1).indices[:, 1:]

    return shared_count(top(A), top(B)) / k


def codes_without_max_1(vocab_size, d):
    K = math.ceil(math.log2(vocab_size))
    bits = (torch.arange(vocab_size)[:, None] >> torch.arange(K)) & 1
    return (2.0 * bits - 1)[:, torch.arange(d) % K]


fit_with_floor_at_last_value = contract_15.floor_at_last_value  # the contract's own (set 15 now names it)


def orders_fallback(value: int | None):
    """First qualifying order; where none qualifies, ``value`` (None: argmax's 0, no fallback at all)."""
    def orders(data, final, tol):
        good = order_losses(data) <= final.double() + tol
        first = good.int().argmax(0)
        return first if value is None else torch.where(good.any(0), first, value)

    return orders


def rung_even_grid(steps, curve, level):
    below = (curve < level).nonzero()
    return float(steps[0] + below[0, 0] * (steps[1] - steps[0])) if len(below) else math.inf


def bin_ids_at_any_position(logits, data, ids):
    per_row = -(torch.log_softmax(logits.double(), -1) * data.targets().double()).sum(-1)
    w = data.weights.double() * torch.isin(data.x, ids).any(1).double()
    return per_row @ w / w.sum()


# --- plain-Python readings of the exercise texts (the oracles) ----------------------------------


def cka_oracle(E, S):
    def centred_gram(M):
        rows = M.double().tolist()
        means = [sum(col) / len(rows) for col in zip(*rows)]
        c = [[v - mu for v, mu in zip(r, means)] for r in rows]
        return [[sum(a * b for a, b in zip(u, w)) for w in c] for u in c]

    ge, gs = centred_gram(E), centred_gram(S)
    inner = lambda a, b: sum(x * y for ra, rb in zip(a, b) for x, y in zip(ra, rb))  # noqa: E731
    return inner(ge, gs) / math.sqrt(inner(ge, ge) * inner(gs, gs))


def bigram_oracle(tokens, V, alpha):
    ids = tokens.tolist()
    counts = [[0] * V for _ in range(V)]
    for a, b in zip(ids, ids[1:]):
        counts[a][b] += 1
    return torch.tensor([[(c + alpha) / (sum(row) + V * alpha) for c in row] for row in counts], dtype=torch.float64)


def closest_oracle(steps, kl):
    out = []
    for row in kl.tolist():
        out.append(steps.tolist()[row.index(min(row))])  # list.index: the earliest of tied minima
    return torch.tensor(out)


def first_rows_oracle(E, W1, pos):
    d = E.shape[1]
    return torch.stack([E[v].double() @ W1[int(l) * d:(int(l) + 1) * d].double() for v, l in enumerate(pos.tolist())])


def span_share_oracle(M, S):
    """Least squares: the centred M regressed on the centred S, its fitted part's share of ||M||²."""
    Mc, Sc = M.double() - M.double().mean(0), S.double() - S.double().mean(0)
    fitted = Sc @ torch.linalg.lstsq(Sc, Mc, rcond=1e-6, driver="gelsd").solution
    return float(fitted.pow(2).sum() / Mc.pow(2).sum())


def cells_oracle(steps, losses, levels, min_rest=50):
    """Each cell read as the text says: diverged, dead (back within 0.01 of H0 at the end, farther before),
    a rest (flat records within 0.01 of H0, their steps summed, at least min_rest), or no rest."""
    h0, t = float(levels[0]), steps.tolist()
    out = []
    for row in torch.as_tensor(losses, dtype=torch.float64).tolist():
        labels = []
        for curve in row:
            if not all(math.isfinite(v) for v in curve):
                labels.append("diverged")
                continue
            near = [abs(v - h0) <= 0.01 for v in curve]
            if not all(near) and near[-1]:
                labels.append("dead")
                continue
            dwell = sum(t[i + 1] - t[i] for i in range(len(t) - 1) if near[i] and near[i + 1]
                        and abs(curve[i + 1] - curve[i]) / (t[i + 1] - t[i]) <= 1e-4)
            labels.append("rest" if dwell >= min_rest else "no rest")
        out.append(labels)
    return out


def corner_oracle(gammas, lrs, plateau):
    rows = plateau.double().tolist()
    stable = [j for j in range(len(lrs)) if not any(math.isnan(row[j]) for row in rows)]
    def mean(values):
        return sum(values) / len(values)
    first_g, last_g = mean([rows[0][j] for j in stable]), mean([rows[-1][j] for j in stable])
    first_r, last_r = mean([row[stable[0]] for row in rows]), mean([row[stable[-1]] for row in rows])
    return (float(gammas[0] if first_g < last_g else gammas[-1]), float(lrs[stable[0]] if first_r < last_r else lrs[stable[-1]]))


def scaled_codes_oracle(codes, learned):
    def rms(values):
        return math.sqrt(sum(v * v for v in values) / len(values))
    code_size = rms(codes.double().reshape(-1).tolist())
    tables = learned.double().reshape(-1, *learned.shape[-2:])
    out = torch.stack([codes.double() * (rms(t.reshape(-1).tolist()) / code_size) for t in tables])
    return out.reshape(*learned.shape[:-2], *codes.shape).to(codes.dtype)


def table_oracle(data, d, orders, norm):
    """The steps of the text in order, with an eigendecomposition of S S^T in place of the SVD."""
    S = _signature_rows(data, orders)
    S = S - S.mean(0)
    values, vectors = torch.linalg.eigh(S @ S.T)
    top = values.argsort(descending=True)[: min(d, S.shape[1])]
    E = torch.zeros(data.vocab_size, d, dtype=torch.float64)
    E[:, : len(top)] = vectors[:, top] * values[top].clamp_min(0).sqrt()
    return E * (norm / E.norm())


def leader_oracle(steps, margins, from_step, by):
    out = []
    for k in range(len(next(iter(margins.values())))):
        late = [i for i, step in enumerate(steps.tolist()) if step >= from_step]
        rows = {n: [float(m[k][i]) for i in late] for n, m in margins.items()}
        ahead = [n for n in rows if all(rows[n][t] - rows[o][t] > by for o in rows if o != n for t in range(len(late)))]
        out.append(ahead[0] if ahead else None)
    return out


def ratio_oracle(pa, pb, qa, qb):
    def deviation(q):
        return math.sqrt(sum((v - 1.0 / len(q)) ** 2 for v in q.double().tolist()))
    return pa * deviation(qa) / (pb * deviation(qb))


def measured_update_ratio(pa, pb, qa, qb):
    """The ratio autograd measures at init on a one-position population of the two tokens."""
    data = Dataset(torch.arange(2)[:, None], torch.stack([qa, qb]).float(), 2, len(qa), torch.tensor([pa, pb]) / (pa + pb))
    return measured_ratio(data, 0, 1)


def uniform_oracle(model, x):
    """Each model, each sequence: the sum over its positions j of (E[x_j] + P_j) W_V, over L."""
    E, P, W_v = (t.detach().double() for t in (model.embedding, model.position, model.w_v))
    out = torch.zeros(E.shape[0], x.shape[0], W_v.shape[-1], dtype=torch.float64)
    for k in range(E.shape[0]):
        for n, seq in enumerate(x.tolist()):
            for j, token in enumerate(seq):
                out[k, n] += (E[k, token] + P[k, j]) @ W_v[k] / len(seq)
    return out


def leaves_oracle(steps, weights, L, tol=0.01):
    out = []
    for row in weights.double().tolist():
        hits = [s for s, w in zip(steps.tolist(), row) if abs(w - 1.0 / L) > tol]
        out.append(hits[0] if hits else -1)
    return torch.tensor(out)


def layernorm_oracle(E):
    out = []
    for row in E.double().tolist():
        mean = sum(row) / len(row)
        var = sum((v - mean) ** 2 for v in row) / len(row)
        out.append(math.sqrt(sum(((v - mean) / math.sqrt(var + 1e-5)) ** 2 for v in row)))
    return torch.tensor(out, dtype=torch.float64)


def kl_oracle(logits, table, x):
    total, count = 0.0, 0
    for seq, ids in zip(logits.double().tolist(), x.tolist()):
        for z, a in zip(seq, ids):
            top = max(z)
            logp = [v - top - math.log(sum(math.exp(u - top) for u in z)) for v in z]
            q = table.double()[a].tolist()
            total += sum(math.exp(lp) * (lp - math.log(qq)) for lp, qq in zip(logp, q))
            count += 1
    return total / count


def switch_on_oracle(steps, strengths, level):
    firsts = []
    for column in strengths.double().T.tolist():
        hits = [s for s, v in zip(steps.tolist(), column) if abs(v) >= level]
        firsts.append(hits[0] if hits else math.inf)
    return sorted(range(len(firsts)), key=lambda k: (firsts[k], k))


def growth_oracle(steps, a, start, stop):
    pairs = [(float(s), math.log(abs(v))) for s, v in zip(steps.tolist(), a.double().tolist()) if start <= s <= stop]
    mx, my = sum(p[0] for p in pairs) / len(pairs), sum(p[1] for p in pairs) / len(pairs)
    return sum((x - mx) * (y - my) for x, y in pairs) / sum((x - mx) ** 2 for x, _ in pairs)


def bin_alignment_oracle(E, S, frequency, lo, hi):
    f = frequency.double().tolist()
    idx = sorted(range(len(f)), key=lambda i: (-f[i], i))[lo:hi]  # falling frequency, ties by id
    return cka_oracle(E[idx], S[idx])


def reconstruction_oracle(mean, fitted, weights):
    m, w = mean.double().tolist(), weights.double().tolist()
    rows = fitted.double().tolist()
    rebuilt = [sum(wi * r[t] for wi, r in zip(w, rows)) for t in range(len(m))]
    average = sum(m) / len(m)
    return 1 - sum((a - b) ** 2 for a, b in zip(m, rebuilt)) / sum((a - average) ** 2 for a in m)


def gain_oracle(without, with_tables, data, edges, position):
    freq = [0.0] * data.vocab_size
    for row, weight in zip(data.x.tolist(), data.weights.double().tolist()):
        freq[row[position]] += weight
    a, b = with_tables.double().tolist(), without.double().tolist()
    out = []
    for k in range(len(a)):
        row = []
        for lo, hi in zip(edges[:-1], edges[1:]):
            ids = [s for s, f in enumerate(freq) if lo < f <= hi]
            row.append(sum(a[k][s] for s in ids) / sum(b[k][s] for s in ids) if ids else math.nan)
        out.append(row)
    return torch.tensor(out, dtype=torch.float64)


def margins_oracle(embeddings, signature, perms):
    E = embeddings.double()
    out = torch.zeros(E.shape[:2], dtype=torch.float64)
    for k in range(E.shape[0]):
        for t in range(E.shape[1]):
            D = E[k, t] - E[k, 0]
            if not bool(D.abs().sum() > 0):
                continue  # no displacement: CKA 0 / 0, taken as 0, and so the margin
            shuffled = [cka_oracle(D, signature.double()[p]) for p in perms.tolist()]
            out[k, t] = cka_oracle(D, signature) - max(shuffled)
    return out


def line_up_oracle(E, tokens, values):
    rows = [E.double()[t].tolist() for t in tokens.tolist()]
    n, d = len(rows), len(rows[0])
    means = [sum(r[c] for r in rows) / n for c in range(d)]
    X = [[r[c] - means[c] for c in range(d)] for r in rows]
    mv = sum(values.tolist()) / n
    v = [x - mv for x in values.double().tolist()]
    vv = sum(x * x for x in v)
    along = [sum(v[i] * X[i][c] for i in range(n)) for c in range(d)]
    return sum(a * a for a in along) / vv / sum(x * x for r in X for x in r)


def next_pairs_oracle(data):
    rows = list(zip(data.x.tolist(), data.targets().double().tolist(), data.weights.double().tolist()))

    def conditional(key):
        mass, total = {}, {}
        for x, y, w in rows:
            k = key(x)
            mass[k] = mass.get(k, 0.0) + w
            total[k] = [a + w * b for a, b in zip(total.get(k, [0.0] * len(y)), y)]
        return {k: [v / mass[k] for v in total[k]] for k in mass}

    base = conditional(lambda x: ())[()]
    found = []
    for i in range(data.seq_len):
        for j in range(i + 1, data.seq_len):
            pi, pj, pij = conditional(lambda x: x[i]), conditional(lambda x: x[j]), conditional(lambda x: (x[i], x[j]))
            if any(abs(pij[(s, t)][c] - pi[s][c] - pj[t][c] + base[c]) > 1e-6 for (s, t) in pij for c in range(len(base))):
                found.append((i, j))
    return found


def matched_oracle(steps, loss, target):
    out = []
    for grid, row in zip(steps.tolist(), loss.double().tolist()):
        hits = [s for s, v in zip(grid, row) if v == v and v <= target]  # v == v: a NaN never counts
        out.append(float(hits[0]) if hits else math.nan)
    return torch.tensor(out, dtype=torch.float64)


def loglog_oracle(frequency, size):
    xs, ys = [math.log(v) for v in frequency.double().tolist()], [math.log(v) for v in size.double().tolist()]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def stream_signature_oracle(tokens, V):
    ids = tokens.tolist()
    nxt, prv = [[0] * V for _ in range(V)], [[0] * V for _ in range(V)]
    for a, b in zip(ids, ids[1:]):
        nxt[a][b] += 1
        prv[b][a] += 1

    def rows(table):
        return [[c / sum(r) if sum(r) else 0.0 for c in r] for r in table]

    return torch.tensor([a + b for a, b in zip(rows(nxt), rows(prv))], dtype=torch.float64)


def _conditional_oracle(data, key):
    mass, total = {}, {}
    for x, y, w in zip(data.x.tolist(), data.targets().double().tolist(), data.weights.double().tolist()):
        k = key(x)
        mass[k] = mass.get(k, 0.0) + w
        total[k] = [a + w * b for a, b in zip(total.get(k, [0.0] * len(y)), y)]
    return {k: [v / mass[k] for v in total[k]] for k in mass if mass[k] > 0}


def order1_oracle(data):
    V, L, C = data.vocab_size, data.seq_len, data.n_labels
    base = _conditional_oracle(data, lambda x: ())[()]
    out = []
    for s in range(V):
        row = []
        for i in range(L):
            row += _conditional_oracle(data, lambda x: x[i]).get(s, base)
        out.append(row)
    return torch.tensor(out, dtype=torch.float64)


def pair_oracle(data, i, j):
    V, C = data.vocab_size, data.n_labels
    base = _conditional_oracle(data, lambda x: ())[()]
    pi, pj, pij = (_conditional_oracle(data, k) for k in (lambda x: x[i], lambda x: x[j], lambda x: (x[i], x[j])))
    out = torch.zeros(V, V, C, dtype=torch.float64)
    for (s, t), p in pij.items():
        out[s, t] = torch.tensor([p[c] - pi[s][c] - pj[t][c] + base[c] for c in range(C)], dtype=torch.float64)
    return out


def residual_oracle(data, probs, i, j):
    V, C = data.vocab_size, data.n_labels
    mass, total = {}, {}
    for x, y, p, w in zip(data.x.tolist(), data.targets().double().tolist(), probs.double().tolist(), data.weights.double().tolist()):
        k = (x[i], x[j])
        mass[k] = mass.get(k, 0.0) + w
        total[k] = [a + w * (b - q) for a, b, q in zip(total.get(k, [0.0] * C), y, p)]
    out = torch.zeros(V, V, C, dtype=torch.float64)
    for (s, t), m in mass.items():
        if m > 0:
            out[s, t] = torch.tensor([v / m for v in total[(s, t)]], dtype=torch.float64)
    return out


def svals_oracle(data):
    V, L, C = data.vocab_size, data.seq_len, data.n_labels
    sigma = [[0.0] * (L * V) for _ in range(C)]
    for x, y, w in zip(data.x.tolist(), data.targets().double().tolist(), data.weights.double().tolist()):
        for i, s_ in enumerate(x):
            for c in range(C):
                sigma[c][i * V + s_] += w * (y[c] - 1.0 / C)
    return torch.linalg.svdvals(torch.tensor(sigma, dtype=torch.float64))


def race_oracle(runs, levels):
    middle = (levels[-2] + levels[-1]) / 2
    done = {}
    for name, (steps, loss) in runs.items():
        firsts = []
        for row in loss.double().tolist():
            hits = [s for s, v in zip(steps.tolist(), row) if v < middle]
            firsts.append(hits[0] if hits else None)
        if all(f is not None for f in firsts):
            done[name] = sum(firsts) / len(firsts)
    return sorted(done, key=done.get)


def rows_oracle(matrix, atol):
    rows = matrix.double().tolist()
    return sum(all(max(abs(a - b) for a, b in zip(r, rows[j])) > atol for j in range(i)) for i, r in enumerate(rows))


def classes_oracle(S_):
    rows = S_.double().tolist()
    ids: list[int] = []
    for r in rows:
        same = [ids[j] for j, other in enumerate(rows[: len(ids)]) if max(abs(a - b) for a, b in zip(r, other)) <= 1e-6]
        ids.append(same[0] if same else max(ids, default=-1) + 1)
    return torch.tensor(ids)


def _masses(data, positions):
    mass: dict[tuple, list[float]] = {}
    for x, q, w in zip(data.x.tolist(), data.targets().double().tolist(), data.weights.double().tolist()):
        row = mass.setdefault(tuple(x[p] for p in positions), [0.0] * data.n_labels)
        mass[tuple(x[p] for p in positions)] = [m + w * qy for m, qy in zip(row, q)]
    return mass


def entropy_oracle(data, positions):
    return -sum(m * math.log(m / sum(row)) for row in _masses(data, positions).values() for m in row if m > 0)


def dwell_oracle(steps, loss, levels, tol=0.01):
    s, l = steps.tolist(), loss.tolist()
    return [sum(s[i + 1] - s[i] for i in range(len(s) - 1) if abs(l[i] - h) <= tol and abs(l[i + 1] - h) <= tol
                and abs(l[i + 1] - l[i]) / (s[i + 1] - s[i]) <= tol / 100) for h in levels]


def onsets_oracle(steps, loss, levels):
    return [next((s for s, v in zip(steps.tolist(), loss.tolist()) if v < (a + b) / 2), -1) for a, b in zip(levels, levels[1:])]


def rise_oracle(steps, loss, levels, tol=0.01):
    l = loss.tolist()
    first = next((i for i, v in enumerate(l) if v < levels[0] - tol), None)
    rise = 0.0 if first is None else max(v - min(l[first:i + 1]) for i, v in enumerate(l) if i >= first)
    near = min(range(len(levels)), key=lambda k: abs(l[-1] - levels[k]))
    return rise, (near if abs(l[-1] - levels[near]) <= tol else None)


def wait_oracle(steps, losses, gammas, levels):
    waits: dict[float, list[int]] = {}
    for g, curve in zip(gammas, losses):
        onset = onsets_oracle(steps, curve, levels)[0]
        waits.setdefault(g, []).append(onset if onset >= 0 else int(steps[-1]) + 1)
    means = {g: sum(w) / len(w) for g, w in waits.items()}
    return max(sorted(means), key=means.get)


def knn_oracle(A, B, k):
    def neighbours(M):
        rows = M.double().tolist()
        unit = [[v / math.sqrt(sum(x * x for x in r)) for v in r] for r in rows]
        cos = [[sum(a * b for a, b in zip(u, w)) for w in unit] for u in unit]
        return [set(sorted((j for j in range(len(rows)) if j != i), key=lambda j: -cos[i][j])[:k]) for i in range(len(rows))]

    return torch.tensor([len(a & b) / k for a, b in zip(neighbours(A), neighbours(B))], dtype=torch.float64)


def codes_oracle(vocab_size, d):
    K = max(1, math.ceil(math.log2(vocab_size)))
    return torch.tensor([[1.0 if (s >> (c % K)) & 1 else -1.0 for c in range(d)] for s in range(vocab_size)])


def orders_oracle(data, final, tol):
    out = []
    for n, (x, q) in enumerate(zip(data.x.tolist(), data.targets().double().tolist())):
        for k in range(data.seq_len + 1):
            row = _masses(data, tuple(range(k)))[tuple(x[:k])]
            loss = -sum(qy * math.log(m / sum(row)) for qy, m in zip(q, row) if qy > 0)
            if loss <= float(final[n]) + tol or k == data.seq_len:
                out.append(k)
                break
    return torch.tensor(out, dtype=torch.float64)


def rung_oracle(steps, curve, level):
    return next((float(s) for s, v in zip(steps.tolist(), curve.tolist()) if v < level), math.inf)


def bin_oracle(logits, data, ids):
    keep = [n for n in range(data.n) if int(data.x[n, 0]) in ids.tolist()]
    w = data.weights.double()[keep] / data.weights.double()[keep].sum()
    per_row = -(torch.log_softmax(logits.double()[:, keep], -1) * data.targets().double()[keep]).sum(-1)
    return per_row @ w


# --- what each check accepts, and the table of searched checks ------------------------------------


def _tensors(atol):
    return lambda got, want: tensor_close(atol)(got, torch.as_tensor(want)) is None


def scaled_codes_close(got, want) -> bool:
    """check_14_scale_codes's comparison: every entry within SIZE_RTOL of the largest one."""
    got = as_tensor(got)
    return (got is not None and tuple(got.shape) == tuple(want.shape)
            and float((got.double() - want.double()).abs().nan_to_num(math.inf).max()) <= SIZE_RTOL * float(want.double().abs().max()))


def _int_lists(got, want) -> bool:
    return as_ints(got) == list(want)


def _rise_pair(got, want) -> bool:
    if not isinstance(got, (tuple, list)) or len(got) != 2 or as_float(got[0]) is None:
        return False
    if not abs(as_float(got[0]) - want[0]) <= 1e-6:
        return False
    return got[1] is None if want[1] is None else (got[1] is not None and as_float(got[1]) == want[1])


def _same_gamma(got, want) -> bool:
    return as_float(got) is not None and abs(as_float(got) - want) <= 1e-9


def _same_step(got, want) -> bool:
    value = as_float(got)
    return value is not None and (value == want if math.isinf(want) else abs(value - want) <= 1e-9)


def as_parameters(out) -> Tensor:
    """(floor, drop, tau, width) -> [floor, drop, ln tau, width], as check_15_fit_sigmoid reads it."""
    t = as_tensor(out).double().flatten()
    return torch.stack([t[0], t[1], t[2].log() if bool(t[2] > 0) else torch.tensor(math.nan, dtype=torch.float64), t[3]])


def _fit_close(got, want) -> bool:
    return tensor_close(0.03)(as_parameters(got), as_parameters(want)) is None


def report_halves_at_ceiling(tokens, V, E, bin_size, n_shuffles, seed):
    """The halves cut at (n + 1) // 2: the same as n // 2 for even n only."""
    n = len(tokens)
    out = contract_10.learner_report(tokens, V, E, bin_size, n_shuffles, seed)
    cut = (n + 1) // 2
    rows = torch.bincount(tokens, minlength=V).double().argsort(descending=True, stable=True)
    halves = [signature_from_counts(p, V) for p in (tokens[:cut], tokens[cut:])]
    bins = [rows[lo:lo + bin_size] for lo in range(0, V - bin_size + 1, bin_size)]
    out["reliability"] = torch.tensor([float(cka(halves[0][i], halves[1][i])) for i in bins], dtype=torch.float64)
    return out


def report_halves_ranked_on_their_own(tokens, V, E, bin_size, n_shuffles, seed):
    """Each half's bins taken from that half's own counts."""
    out = contract_10.learner_report(tokens, V, E, bin_size, n_shuffles, seed)
    n = len(tokens)
    parts = (tokens[:n // 2], tokens[n // 2:])
    orders = [torch.bincount(p, minlength=V).double().argsort(descending=True, stable=True) for p in parts]
    halves = [signature_from_counts(p, V) for p in parts]
    starts = range(0, V - bin_size + 1, bin_size)
    out["reliability"] = torch.tensor([float(cka(halves[0][orders[0][lo:lo + bin_size]], halves[1][orders[1][lo:lo + bin_size]]))
                                       for lo in starts], dtype=torch.float64)
    return out


def report_identity_first(tokens, V, E, bin_size, n_shuffles, seed):
    """The real (unshuffled) score counted as the first of the shuffles: n - 1 drawn, plus the real one."""
    fewer = contract_10.learner_report(tokens, V, E, bin_size, max(n_shuffles - 1, 1), seed)
    base = (fewer["baseline"] * (n_shuffles - 1) + fewer["cka"]) / n_shuffles
    return {**contract_10.learner_report(tokens, V, E, bin_size, n_shuffles, seed), "baseline": base, "excess": fewer["cka"] - base}


def report_unseen_ids_dropped(tokens, V, E, bin_size, n_shuffles, seed):
    """Only the ids that occur are ranked and binned."""
    seen = torch.bincount(tokens, minlength=V) > 0
    keep = seen.nonzero().flatten()
    remap = torch.full((V,), -1, dtype=torch.long)
    remap[keep] = torch.arange(len(keep))
    if len(keep) < bin_size:
        return {k: torch.zeros(0, dtype=torch.float64) for k in ("cka", "baseline", "spread", "excess", "reliability")}
    return contract_10.learner_report(remap[tokens], len(keep), E[keep], bin_size, n_shuffles, seed)


def verdict_second_bin_as_rarest(report, z):
    """The end bins taken as bins 0 and 1 (the same as the first and last for two bins only)."""
    return contract_10.learner_verdict({k: v[:2] for k, v in report.items()}, z)


def verdict_signature_when_reliability_falls(report, z):
    """'signature' whenever the reliability falls at all, whatever the excess does."""
    verdict = contract_10.learner_verdict(report, z)
    rel = report["reliability"].double()
    return "signature" if verdict == "model" and bool(rel[-1] < rel[0]) else verdict


def verdict_chance_against_mean_spread(report, z):
    """Beyond chance judged against z times the spread averaged over all bins."""
    mean = report["spread"].double().mean()
    return contract_10.learner_verdict({**report, "spread": torch.full_like(report["spread"].double(), float(mean))}, z)


def verdict_first_bin_only_for_chance(report, z):
    """Only the most frequent bin tested for chance."""
    ex, sp, rel = (report[k].double() for k in ("excess", "spread", "reliability"))
    if bool(ex[0] <= z * sp[0]):
        return "chance"
    if bool(ex[-1] >= ex[0]):
        return "flat"
    return "signature" if float(rel[-1] / rel[0]) <= float(ex[-1] / ex[0]) else "model"


def rotation_calls(fn):
    """What check_02_random_rotation reads: E, then fn at a seed, at the same seed again and at the next one."""
    return lambda E, seed: (E, fn(E, seed), fn(E, seed), fn(E, seed + 1))


def rotation_passes(got, _want) -> bool:
    E, *outs = got
    return rotation_problem(outs, E) is None


def rotation_by_the_triangular_factor(E, seed):
    """E times the R factor of the Gaussian's QR, not its orthogonal Q."""
    A = torch.randn(E.shape[1], E.shape[1], generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return E.double() @ torch.linalg.qr(A)[1]


def rotation_unit_columns(E, seed):
    """A Gaussian matrix with its columns scaled to length 1, but not orthogonalised."""
    A = torch.randn(E.shape[1], E.shape[1], generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return E.double() @ (A / A.norm(dim=0))


def baseline_calls(fn):
    """What check_02_permutation_baseline reads: fn twice at one seed and, for n <= 2, at 16 more seeds."""
    def calls(E, S, n, seed):
        others = [fn(E, S, n, seed + 1 + k) for k in range(N_SPREAD_SEEDS)] if n <= 2 else []
        return (E, S, n), (fn(E, S, n, seed), fn(E, S, n, seed), others)
    return calls


def baseline_passes(got, _want) -> bool:
    """The check's comparison on this input (``baseline_expected``: a 2000-shuffle mean, 5 spreads of an n-shuffle mean)."""
    (E, S, n), answer = got
    return baseline_problem(answer, baseline_expected(torch.as_tensor(E, dtype=torch.float64), S, n)) is None


def baseline_first_copy_unshuffled(E, S, n, seed):
    """The first of the n copies left in its original order (a loop that shuffles after scoring)."""
    g = torch.Generator().manual_seed(seed)
    scores = [cka(E.double(), S)] + [cka(E.double()[torch.randperm(E.shape[0], generator=g)], S) for _ in range(n - 1)]
    return float(torch.stack(scores).mean())


def baseline_median(E, S, n, seed):
    """The median over the shuffles, not the mean."""
    g = torch.Generator().manual_seed(seed)
    return float(torch.stack([cka(E.double()[torch.randperm(E.shape[0], generator=g)], S) for _ in range(n)]).median())


def _piece_changes(before, after) -> list[Tensor]:
    """The changes of a token's pieces, [K, V, width] each: its embedding row, then its row of every table."""
    pieces = [(after.embedding - before.embedding).detach().double()]
    return pieces + [(after.tables - before.tables)[:, j].detach().double() for j in range(after.n_tables)]


def sizes_oracle(before, after):
    """Each token's update size, one model and token at a time, in plain Python: the square root of every
    squared change of its embedding row and of its row in each table."""
    pieces = _piece_changes(before, after)
    K, V = pieces[0].shape[:2]
    return torch.tensor([[math.sqrt(sum(float(v) ** 2 for piece in pieces for v in piece[k, s])) for s in range(V)]
                         for k in range(K)], dtype=torch.float64)


def sizes_largest_piece(before, after):
    """The length of the piece that moved most, not of all of them together."""
    return torch.stack([piece.norm(dim=-1) for piece in _piece_changes(before, after)]).amax(0)


def sizes_rms(before, after):
    """The root-mean-square change per coordinate, not the length."""
    return torch.cat(_piece_changes(before, after), -1).pow(2).mean(-1).sqrt()


def sizes_first_table_only(before, after):
    """The embedding row and the first table's row; the other tables left out."""
    return torch.cat(_piece_changes(before, after)[:2], -1).norm(dim=-1)


def path_oracle(model, data, lr, steps):
    """The first stair's path with its gradients written out by hand, row by row of the whole population, no
    autograd: with g = w (softmax(z) - P(y | x)) per row and z = e A B / 2, the three factors' gradients are
    A B gᵀ / 2 into the key's row of E, eᵀ g Bᵀ / 2 and (e A)ᵀ g / 2."""
    E, W1, W2 = (t.clone() for t in model_weights(model))
    A, y, w, keys = W1[:, 0].clone(), data.targets().double(), data.weights.double(), data.x[:, 0]
    losses = []
    for _ in range(steps + 1):
        e = E[:, keys]  # [K, N, d]
        z = 0.5 * e @ A @ W2
        losses.append(-(torch.log_softmax(z, -1) * y).sum(-1) @ w)
        g = w[:, None] * (torch.softmax(z, -1) - y)  # [K, N, C]
        gE = torch.zeros_like(E).index_add_(1, keys, 0.5 * g @ (A @ W2).transpose(1, 2))
        gA, gB = 0.5 * e.transpose(1, 2) @ g @ W2.transpose(1, 2), 0.5 * (e @ A).transpose(1, 2) @ g
        E, A, W2 = E - lr * gE, A - lr * gA, W2 - lr * gB
    return torch.stack(losses, 1)


def path_keys_weighted_equally(model, data, lr, steps):
    """Rows merged by key, then every key weighted alike (its mass dropped)."""
    keys = prefix_data(data, 1)
    return linear_path(model, Dataset(keys.x, keys.y, keys.vocab_size, keys.n_labels,
                                      torch.full((keys.n,), 1.0 / keys.n)), lr, steps)


def path_argmax_labels(model, data, lr, steps):
    """Cross-entropy against each row's most likely label, not its label distribution."""
    return linear_path(model, hard_labels(data), lr, steps)


@dataclass(frozen=True)
class Spec:
    check: Callable
    inputs: Any  # a strategy drawing argument tuples inside the exercise text
    library: Callable | None  # what the check's expected answers come from
    passes: Callable[[Any, Any], bool]  # the check's comparison: does `got` pass where `want` is right
    oracle: Callable | None = None
    held_out: dict[str, Callable] = field(default_factory=dict)
    search: settings = SEARCH
    calls: Callable | None = None  # fn -> what the check reads of fn on one input (several calls, seeds), if not fn itself


SPECS = {
    "check_02_linear_cka": Spec(
        checks.check_02_linear_cka, S.cka_inputs(), lambda E, S_: float(cka(E, S_)),
        lambda g, w: number_close(1e-6)(g, w) is None, cka_oracle,
        {"rows centred (over features), not columns": cka_centred_over_features,
         "one overall mean subtracted": cka_centred_by_one_mean}),
    "check_02_random_rotation": Spec(
        checks.check_02_random_rotation, S.rotation_inputs(), None, rotation_passes, None,
        {"E times the QR's triangular factor": rotation_by_the_triangular_factor,
         "unit-length Gaussian columns, not orthogonalised": rotation_unit_columns}, calls=rotation_calls),
    "check_02_permutation_baseline": Spec(
        checks.check_02_permutation_baseline, S.baseline_inputs(), None, baseline_passes, None,
        {"the first copy left unshuffled": baseline_first_copy_unshuffled, "the median, not the mean": baseline_median},
        calls=baseline_calls),
    "check_01_order1_signature": Spec(
        checks.check_01_order1_signature, S.datasets().map(lambda d: (d,)), contract_01.order1, _tensors(1e-5), order1_oracle,
        {"absent tokens filled with 1/C, not P(y)": order1_uniform_fill}),
    "check_01_pair_interaction": Spec(
        checks.check_01_pair_interaction, S.pair_inputs(), contract_01.pair, _tensors(1e-5), pair_oracle,
        {"P(y | s, t) from one row per pair": pair_first_row_only}),
    "check_01_distinct_rows": Spec(
        checks.check_01_distinct_rows, S.grouped_rows(), checks.count_distinct_rows,
        lambda g, w: integer_equal()(g, w) is None, rows_oracle,
        {"torch.isclose with its default rtol": rows_isclose_default_rtol, "Euclidean distance <= atol": rows_euclidean}),
    "check_01_conditional_entropy": Spec(
        checks.check_01_conditional_entropy, S.entropy_inputs(), lambda d, p: conditional_entropy(d, tuple(p)),
        lambda g, w: number_close(1e-4)(g, w) is None, entropy_oracle,
        {"per-context entropies averaged without P(x_S)": entropy_contexts_unweighted}),
    "check_03_dwell": Spec(checks.check_03_dwell, S.loss_curves(), dwell_reference, _int_lists, dwell_oracle,
                           {"flat means a slope <= tol, not tol / 100": dwell_flat_within_tol}),
    "check_03_stair_onsets": Spec(checks.check_03_stair_onsets, S.loss_curves(), stair_onsets_reference, _int_lists,
                                  onsets_oracle, {"crossing index times the first step gap": onsets_even_grid}),
    "check_03_rise_and_end": Spec(checks.check_03_rise_and_end, S.loss_curves(), rise_and_end_reference, _rise_pair,
                                  rise_oracle, {"the leaving point itself left out": rise_without_leaving_point}),
    "check_03_longest_wait": Spec(
        checks.check_03_longest_wait, S.wait_ensembles(), longest_wait_reference, _same_gamma, wait_oracle,
        {"sum over seeds instead of the mean": wait_summed_over_seeds,
         "never counted as steps[-1], not steps[-1] + 1": wait_never_as_last_step}),
    "check_05_singular_values": Spec(
        checks.check_05_singular_values, S.datasets().map(lambda d: (d,)), singular_values_reference, _tensors(1e-6),
        svals_oracle, {"the key's block alone": svals_first_position_only, "squared (eigenvalues of Σ Σᵀ)": svals_squared}),
    "check_05_switch_on_order": Spec(
        checks.check_05_switch_on_order, S.switch_on_inputs(), switch_on_order_reference, _int_lists, switch_on_oracle,
        {"record 0 never looked at": order_without_record_0, "the last record never looked at": order_without_last_record}),
    "check_05_growth_rate": Spec(
        checks.check_05_growth_rate, S.growth_inputs(), lambda t, a, lo, hi: float(fit_growth_rate(t, a, lo, hi)),
        lambda g, w: as_float(g) is not None and abs(as_float(g) - w) <= 1e-4 * abs(w), growth_oracle,
        {"ln a, not ln |a|": rate_signed_log, "start and stop as record indices": rate_window_by_index}),
    "check_06_pair_residual": Spec(
        checks.check_06_pair_residual, S.residual_inputs(), contract_06.pair_residual, _tensors(1e-4), residual_oracle,
        {"the argmax as the prediction": residual_of_argmax, "rows grouped by x_i alone": residual_over_the_first_position}),
    "check_06_next_pairs": Spec(
        checks.check_06_next_pairs, S.pair_term_tasks(), splitting_pairs, lambda g, w: sorted(map(tuple, g)) == sorted(w),
        next_pairs_oracle,
        {"a tolerance of 1e-2": pairs_loose_tolerance, "only pairs with the last position": pairs_with_the_last_position,
         "an entropy drop below both positions": pairs_by_entropy_drop}),
    "check_04_update_ratio": Spec(
        checks.check_04_update_ratio, S.parallel_signatures(), measured_update_ratio, lambda g, w: abs(g - w) <= 0.01 * abs(w),
        ratio_oracle,
        {"squared deviations": ratio_squared_deviations, "entropy gaps in place of ||q - u||": ratio_entropy_gaps,
         "the square root of the frequency ratio": ratio_root_frequencies}),
    "check_07_uniform_output": Spec(
        checks.check_07_uniform_output, S.attention_models(), bag_of_context, _tensors(1e-5), uniform_oracle,
        {"the positions added after the value map": uniform_positions_after_values,
         "the last position's value only": uniform_last_value_only}),
    "check_07_leaves_uniform": Spec(
        checks.check_07_leaves_uniform, S.leave_inputs(), leaves_uniform, _tensors(0), leaves_oracle,
        {"1/L over the context positions only": leaves_one_over_context,
         "a jump between records, not a distance from 1/L": leaves_by_change,
         "the last record never looked at": leaves_before_last_record}),
    "check_08_no_plateau_corner": Spec(
        checks.check_08_no_plateau_corner, S.phase_maps(), no_plateau_corner_reference,
        lambda g, w: corner_problem(g, w) is None, corner_oracle,
        {"only all-NaN columns dropped": corner_dropping_only_all_nan_columns,
         "diverged γ rows dropped instead": corner_dropping_rows}),
    "check_08_classify_cells": Spec(
        checks.check_08_classify_cells, S.phase_cells(), classify_cells_reference, lambda g, w: g == w, cells_oracle,
        {"dead on any return to H0": cells_dead_on_any_return, "a rest on any level": cells_rest_on_any_level}),
    "check_08_layernorm_norms": Spec(
        checks.check_08_layernorm_norms, S.layernorm_tables(), layernorm_norms_reference, _tensors(1e-3), layernorm_oracle,
        {"the normalised row's RMS, not its norm": layernorm_rms,
         "centred over the tokens, not over the coordinates": layernorm_centred_over_tokens}),
    "check_09_bigram_table": Spec(
        checks.check_09_bigram_table, S.bigram_inputs(), bigram_table, _tensors(1e-5), bigram_oracle,
        {"alpha added once to the row total, not V times": bigram_alpha_once_per_row,
         "pairs counted both ways": bigram_both_directions,
         "rows of tokens with no successor left at zero": bigram_unseen_rows_zero}),
    "check_09_closest_step": Spec(
        checks.check_09_closest_step, S.kl_records(), closest_steps, _tensors(0.5), closest_oracle,
        {"record 0 skipped": closest_after_record_0}),
    "check_09_band_margins": Spec(
        checks.check_09_band_margins, S.margin_inputs(), band_margins_reference, _tensors(1e-4), margins_oracle,
        {"displacement from the records' mean": margins_from_the_records_mean,
         "the first shuffle left out of the band": margins_without_the_first_shuffle}),
    "check_09_leading_signature": Spec(
        checks.check_09_leading_signature, S.leader_inputs(), leading_signature_reference,
        lambda g, w: names_problem(g, w) is None, leader_oracle,
        {"the lead over the others' mean": leader_over_the_others_mean, "the absolute gap": leader_by_absolute_gap}),
    "check_09_kl_to_bigram": Spec(
        checks.check_09_kl_to_bigram, S.kl_inputs(), kl_to_bigram, lambda g, w: number_close(1e-5)(g, w) is None, kl_oracle,
        {"log_softmax over the positions": kl_softmax_over_positions,
         "the next token's bigram row": kl_next_token_row,
         "a mean over the vocabulary too": kl_mean_over_entries}),
    "check_10_bigram_signature": Spec(
        checks.check_10_bigram_signature, S.stream_inputs(), signature_from_counts, _tensors(1e-5), stream_signature_oracle,
        {"pairs counted both ways": signature_counted_both_ways, "one distribution over both halves": signature_one_row_distribution}),
    "check_10_bin_alignment": Spec(
        checks.check_10_bin_alignment, S.bin_alignment_inputs(), bin_cka, lambda g, w: number_close(atol=1e-5)(g, w) is None,
        bin_alignment_oracle,
        {"centred over all tokens, not over the bin": bin_centred_over_all_tokens,
         "a bin by frequency thresholds": bin_by_frequency_thresholds}),
    "check_10_frequency_report": Spec(
        checks.check_10_frequency_report, S.report_inputs(), frequency_report_reference,
        lambda g, w: report_differs(g, w) is None, contract_10.learner_report,
        {"halves cut at (n + 1) // 2": report_halves_at_ceiling,
         "each half ranked by its own counts": report_halves_ranked_on_their_own,
         "the real score counted as a shuffle": report_identity_first,
         "ids that never occur left out": report_unseen_ids_dropped}),
    "check_10_read_report": Spec(
        checks.check_10_read_report, S.reading_inputs(), read_report_reference, lambda g, w: g == w, contract_10.learner_verdict,
        {"the second bin taken as the rarest": verdict_second_bin_as_rarest,
         "signature whenever the reliability falls": verdict_signature_when_reliability_falls,
         "chance against the mean spread": verdict_chance_against_mean_spread,
         "only the most frequent bin tested for chance": verdict_first_bin_only_for_chance}),
    "check_11_signature_table": Spec(
        checks.check_11_signature_table, S.signature_tables(), signature_embedding, lambda g, w: same_table(
            as_tensor(g), torch.as_tensor(w)) and abs(float(as_tensor(g).double().norm()) - float(w.norm())) <= 1e-3 * float(w.norm()),
        table_oracle,
        {"centred by the frequency-weighted mean": table_centred_by_frequency,
         "rescaled before keeping d columns": table_rescaled_before_truncating}),
    "check_11_finishing_order": Spec(
        checks.check_11_finishing_order, S.race_inputs(), finishing_order, lambda g, w: list(g) == list(w), race_oracle,
        {"summed over seeds": race_summed_over_seeds, "the mean record index": race_by_record_index}),
    "check_12_line_up": Spec(
        checks.check_12_line_up, S.line_up_inputs(), lambda E, t, v: float(line_up(E, t, v)),
        lambda g, w: number_close(1e-6)(g, w) is None, line_up_oracle,
        {"values not centred": line_up_values_uncentred, "the first n rows of E": line_up_first_rows,
         "R² per coordinate, averaged": line_up_per_coordinate}),
    "check_13_knn_overlap": Spec(checks.check_13_knn_overlap, S.knn_inputs(), knn_overlap, _tensors(1e-6), knn_oracle,
                                 {"self dropped as column 0 of a top-(k+1)": knn_self_as_column_0}),
    "check_13_first_step_at_or_below": Spec(
        checks.check_13_first_step_at_or_below, S.matched_loss_inputs(), first_step_at_or_below,
        lambda g, w: as_tensor(g) is not None and as_tensor(g).shape == w.shape
        and bool(((as_tensor(g).double() - w).abs() <= 0).logical_or(as_tensor(g).double().isnan() & w.isnan()).all()),
        matched_oracle,
        {"record 0 never looked at": matched_without_record_0, "at or below within 1e-3": matched_float_equality_tolerance}),
    "check_13_signature_classes": Spec(
        checks.check_13_signature_classes, S.grouped_rows(1e-6).map(lambda pair: pair[:1]), classes_of,
        lambda g, w: same_partition()(g, w) is None, classes_oracle,
        {"torch.isclose with its default rtol": classes_isclose_default_rtol}),
    "check_14_code_table": Spec(checks.check_14_code_table, S.code_sizes(), binary_codes, _tensors(1e-6), codes_oracle,
                                {"⌈log₂V⌉ without max(1, ·)": codes_without_max_1}),
    "check_14_first_layer_rows": Spec(
        checks.check_14_first_layer_rows, S.first_layer_inputs(), first_layer_rows, _tensors(1e-4), first_rows_oracle,
        {"the last position's block for every token": rows_through_the_last_block,
         "positions read as 1-based": rows_with_positions_from_one}),
    "check_14_r2_in_span": Spec(
        checks.check_14_r2_in_span, S.span_inputs(), lambda M, S_: float(subspace_fraction(M, S_)),
        lambda g, w: number_close(1e-6)(g, w) is None, span_share_oracle,
        {"over the uncentred ||M||²": share_over_the_uncentred_norm,
         "every column of S a direction (rank not checked)": share_with_every_column_a_direction}),
    "check_14_scale_codes": Spec(
        checks.check_14_scale_codes, S.code_scalings(), scale_codes_reference, scaled_codes_close, scaled_codes_oracle,
        {"the ensemble's mean size for every table": codes_at_the_ensembles_mean_size,
         "the mean of the rows' RMS entries": codes_at_the_mean_row_size}),
    "check_15_fit_sigmoid": Spec(checks.check_15_fit_sigmoid, S.sigmoid_inputs().map(lambda pair: pair[0]), None,
                                 _fit_close, None, {"floor fixed at the curve's last value": fit_with_floor_at_last_value},
                                 FIT_SEARCH),
    "check_15_token_orders": Spec(
        checks.check_15_token_orders, S.order_inputs(), token_orders, _tensors(1e-9), orders_oracle,
        {"-1 where no order qualifies, not k = L": orders_fallback(-1),
         "0 where no order qualifies (argmax without the fallback)": orders_fallback(None)}),
    "check_15_reconstruction_r2": Spec(
        checks.check_15_reconstruction_r2, S.reconstruction_inputs(), lambda m, f, w: float(r_squared(m, w.double() @ f.double())),
        lambda g, w: number_close(1e-6)(g, w) is None, reconstruction_oracle,
        {"SST about the rebuild's mean": rebuild_sst_about_the_rebuild, "curves summed, not weighted": rebuild_summed_not_weighted}),
    "check_16_bin_gain": Spec(
        checks.check_16_bin_gain, S.gain_inputs(), bin_gain_reference, lambda g, w: close_problem(g, w, "gains") is None,
        gain_oracle,
        {"with minus without": gain_as_difference, "tokens absent at the position in the first bin": gain_absent_tokens_in_the_first_bin}),
    "check_16_token_update_sizes": Spec(
        checks.check_16_token_update_sizes, S.update_pairs(), token_update_sizes_reference,
        lambda g, w: close_problem(g, w, "update sizes") is None, sizes_oracle,
        {"the largest piece's length": sizes_largest_piece, "RMS per coordinate, not the length": sizes_rms,
         "the first table only": sizes_first_table_only}),
    "check_16_loglog_slope": Spec(
        checks.check_16_loglog_slope, S.loglog_inputs(), lambda f, s_: float(loglog_slope(f, s_)),
        lambda g, w: number_close(1e-4)(g, w) is None, loglog_oracle,
        {"the intercept, not the slope": loglog_intercept, "the two end points only": loglog_end_points,
         "each sorted on its own": loglog_sorted_apart}),
    "check_16_rung_step": Spec(checks.check_16_rung_step, S.rung_inputs(), lambda s, c, lv: float(rung_steps(s, c, lv)),
                               _same_step, rung_oracle, {"crossing index times the first step gap": rung_even_grid}),
    "check_17_first_stair_path": Spec(
        checks.check_17_first_stair_path, S.first_stair_inputs(), linear_path, lambda g, w: path_problem(g, w) is None,
        path_oracle, {"keys merged and weighted alike": path_keys_weighted_equally,
                      "the argmax label, not the distribution": path_argmax_labels}, calls=untouched),
    "check_16_bin_loss": Spec(checks.check_16_bin_loss, S.bin_inputs(), lambda lg, d, ids: bin_losses(lg, d, [ids])[:, 0],
                              _tensors(1e-4), bin_oracle, {"ids matched at any position": bin_ids_at_any_position}),
}

CONTRACTS = {row.check.__name__: row for module in (contract_01, contract_02, contract_03, contract_04, contract_05, contract_06, contract_07,
                                                    contract_08, contract_09, contract_10, contract_11, contract_12, contract_13,
                                                    contract_14, contract_15, contract_16, contract_17)
             for row in module.CONTRACT}

# (check, wrong answer) -> why the check accepts it and the case that would catch it (each verified to
# pass the reference and fail the wrong answer). Remove an entry once the check's cases catch it.
KNOWN_GAPS: dict[tuple[str, str], str] = {
}


def wrong_answers(name: str) -> dict[str, Callable]:
    return {**CONTRACTS[name].wrong, **SPECS[name].held_out}


def pairs():
    for name in SPECS:
        for mistake in wrong_answers(name):
            gap = KNOWN_GAPS.get((name, mistake))
            marks = [pytest.mark.xfail(strict=True, raises=WrongAnswerAccepted, reason=gap)] if gap else []
            yield pytest.param(name, mistake, marks=marks, id=f"{name}-{mistake}")


def _fresh(args: tuple) -> tuple:
    return tuple(a.clone() if isinstance(a, Tensor) else list(a) if isinstance(a, list) else a for a in args)


def differs(spec: Spec, reference: Callable, wrong: Callable, args: tuple) -> bool:
    """The wrong answer gives, on these inputs, what the check's comparison would not pass (or it raises).

    Both run from one global seed, so that an answer drawing from the global generator (an unseeded
    shuffle) gives the same verdict when Hypothesis replays the input: otherwise the search is flaky.
    """
    run = spec.calls or (lambda fn: fn)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        want = run(reference)(*_fresh(args))
        torch.manual_seed(0)
        try:
            got = run(wrong)(*_fresh(args))
        except Exception:
            return True
    return got is None or not spec.passes(got, want)


def accepts(check: Callable, fn: Callable) -> bool:
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            check(fn)
        except AssertionError:
            return False
    return True


def describe(args: tuple) -> str:
    """The inputs in a line or a few: small tensors and datasets written out."""
    def one(a):
        if isinstance(a, Dataset):
            return (f"Dataset(x={a.x.tolist()}, y={a.y.tolist()}, V={a.vocab_size}, C={a.n_labels}, "
                    f"weights={[round(w, 4) for w in a.weights.tolist()]})")
        if isinstance(a, Tensor):
            values = a.tolist() if a.numel() <= 64 else f"<{a.numel()} values>"
            return f"tensor({values}, dtype={a.dtype})"
        return repr(a)

    return ", ".join(one(a) for a in args)


@pytest.mark.parametrize(("name", "mistake"), list(pairs()))
def test_a_wrong_answer_differs_inside_the_text_and_its_check_rejects_it(name, mistake):
    spec, wrong, reference = SPECS[name], wrong_answers(name)[mistake], CONTRACTS[name].reference
    try:
        args = find(spec.inputs, lambda a: differs(spec, reference, wrong, a), settings=spec.search)
    except NoSuchExample:
        pytest.fail(f"'{mistake}' never differs from the reference of {name} on the inputs its text allows: "
                    "it is not a wrong answer (or the strategy misses where it goes wrong)")
    if accepts(spec.check, wrong):
        raise WrongAnswerAccepted(f"{name} accepts '{mistake}', which differs from the reference on: {describe(args)}")


@pytest.mark.parametrize("name", [n for n, s in SPECS.items() if s.library is not None])
@AGREE
@given(data=st.data())
def test_the_contract_reference_agrees_with_the_library_and_the_text(name, data):
    spec = SPECS[name]
    args = data.draw(spec.inputs)
    expected = spec.library(*_fresh(args))
    assert spec.passes(CONTRACTS[name].reference(*_fresh(args)), expected), describe(args)
    assert spec.passes(spec.oracle(*_fresh(args)), expected), describe(args)


@settings(AGREE, max_examples=6)
@given(S.sigmoid_inputs())
def test_the_sigmoid_fit_reference_recovers_the_drawn_sigmoid(drawn):
    """check_15_fit_sigmoid compares with the parameters its curves were drawn with: the contract's
    reference (the library's fit) must recover them within the check's tolerance, 0.03."""
    (steps, curve), truth = drawn
    assert tensor_close(0.03)(as_parameters(CONTRACTS["check_15_fit_sigmoid"].reference(steps, curve)), truth) is None
