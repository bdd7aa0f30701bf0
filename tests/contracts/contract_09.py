"""Lesson 09: reference answers and typical mistakes for each check."""

from __future__ import annotations

import math

import torch

from contracts import Contract
from ctxlab import checks
from ctxlab.checks.lesson09 import bigram_table, closest_steps, kl_to_bigram
from ctxlab.checks.lesson09_build import alignment_leaders_reference, band_margins_reference, leading_signature_reference


def counts(tokens, V):
    ones = torch.ones(len(tokens) - 1, dtype=torch.float64)
    return torch.zeros(V, V, dtype=torch.float64).index_put_((tokens[:-1], tokens[1:]), ones, accumulate=True)


def reversed_kl(logits, table, x):
    logp, q = torch.log_softmax(logits.double(), -1), table.double()[x]
    return float((q * (q.log() - logp)).sum(-1).mean())


def cross_entropy(logits, table, x):
    p = torch.softmax(logits.double(), -1)
    return float(-(p * table.double()[x].log()).sum(-1).mean())


def margins(E, S, perms, *, origin="first", centre="columns", band="top", squared=True, shuffle="signature", guard=True):
    """A learner's margin over the shuffled band [K, T], with one mistake chosen by the keywords."""
    E, S = E.double(), S.double()
    D = {"first": E - E[:, :1], "none": E, "previous": E - torch.cat([E[:, :1], E[:, :-1]], 1)}[origin]
    if centre != "none":
        axis = -2 if centre == "columns" else -1
        D, S = D - D.mean(axis, keepdim=True), S - S.mean(axis, keepdim=True)

    def cka(A, B):
        ga, gb = A @ A.transpose(-1, -2), B @ B.transpose(-1, -2)
        den = torch.linalg.matrix_norm(ga) * torch.linalg.matrix_norm(gb)
        value = (ga * gb).sum((-1, -2)) / (den.clamp_min(1e-300) if guard else den)
        return value if squared else value.sqrt()

    shuffled = torch.stack([cka(D, S[p]) if shuffle == "signature" else cka(D[..., p, :], S) for p in perms])
    statistic = {"top": shuffled.amax(0), "bottom": shuffled.amin(0), "mean": shuffled.mean(0), "none": 0.0}[band]
    return cka(D, S) - statistic


def leaders(steps, margin_curves, from_step, by, *, keep="from", every=True, above=lambda lead, by: lead > by,
            beat_all=True, largest=True):
    """A learner's leading signature per model, with one mistake chosen by the keywords."""
    names = list(margin_curves)
    late = {"from": steps >= from_step, "all": steps >= steps[0], "after": steps > from_step,
            "last": steps == steps[-1], "index": torch.arange(len(steps)) >= int(from_step)}[keep]
    out = []
    for k in range(len(margin_curves[names[0]])):
        found = None
        for name in names:
            sign = 1 if largest else -1
            leads = [sign * (margin_curves[name][k, late] - margin_curves[o][k, late]) for o in names if o != name]
            ok = [bool(above(lead, by).all()) if every else bool(above(lead.mean(), by)) for lead in leads]
            if all(ok) if beat_all else any(ok):
                found = name
        out.append(found)
    return out


def composed(run, signatures, perms, from_step, by, *, swap=False, pass_from=True, band=True):
    names = list(signatures)
    score = band_margins_reference if band else lambda E, S, p: margins(E, S, p, band="none")
    curves = {name: score(run.embeddings, signatures[other if swap else name], perms) for name, other in zip(names, names[::-1])}
    return leading_signature_reference(run.steps, curves, from_step if pass_from else 0, by)


CONTRACT = [
    Contract(
        checks.check_09_bigram_table,
        reference=bigram_table,
        wrong={
            "transposed": lambda t, V, a: bigram_table(t, V, a).T,
            "no smoothing": lambda t, V, a: counts(t, V) / counts(t, V).sum(1, keepdim=True).clamp_min(1e-300),
            "normalised over columns": lambda t, V, a: (counts(t, V) + a) / (counts(t, V) + a).sum(0, keepdim=True),
            "alpha fixed at 1": lambda t, V, a: bigram_table(t, V, 1.0),
            "smoothing added after normalising": lambda t, V, a: bigram_table(t, V, 1e-9) + a,
            "wrap-around pair (torch.roll)": lambda t, V, a: bigram_table(torch.cat([t, t[:1]]), V, a),
        },
    ),
    Contract(
        checks.check_09_kl_to_bigram,
        reference=kl_to_bigram,
        wrong={
            "reversed KL": reversed_kl,
            "cross-entropy": cross_entropy,
            "summed over positions": lambda lg, tb, x: kl_to_bigram(lg, tb, x) * x.numel(),
            "logits used as log-probabilities": lambda lg, tb, x: float((lg.exp() * (lg - tb[x].log())).sum(-1).mean()),
            "in bits": lambda lg, tb, x: kl_to_bigram(lg, tb, x) / math.log(2),
            "summed over positions, averaged over sequences": lambda lg, tb, x: kl_to_bigram(lg, tb, x) * x.shape[1],
            "table indexed by column (P(current | next))": lambda lg, tb, x: kl_to_bigram(lg, tb.T / tb.T.sum(1, keepdim=True), x),
        },
    ),
    Contract(
        checks.check_09_closest_step,
        reference=closest_steps,
        wrong={
            "index instead of step": lambda s, kl: kl.argmin(-1),
            "largest KL": lambda s, kl: s[kl.argmax(-1)],
            "the smallest value": lambda s, kl: kl.min(-1).values,
            "one step for all models": lambda s, kl: s[kl.min(0).values.argmin()],
            "last step": lambda s, kl: s[-1].expand(kl.shape[0]),
            "latest of tied minima": lambda s, kl: s[kl.shape[-1] - 1 - kl.flip(-1).argmin(-1)],
        },
    ),
    Contract(
        checks.check_09_band_margins,
        reference=band_margins_reference,
        wrong={
            "NaN at the zero displacement of record 0": lambda *a: margins(*a, guard=False),
            "the embedding itself, not E_t - E_0": lambda *a: margins(*a, origin="none"),
            "displacement from the previous record": lambda *a: margins(*a, origin="previous"),
            "Gram matrices not centred": lambda *a: margins(*a, centre="none"),
            "rows centred instead of columns": lambda *a: margins(*a, centre="rows"),
            "square root of CKA (numerator not squared)": lambda *a: margins(*a, squared=False),
            "raw CKA, no band subtracted": lambda *a: margins(*a, band="none"),
            "the band's bottom": lambda *a: margins(*a, band="bottom"),
            "the band's mean": lambda *a: margins(*a, band="mean"),
            "band minus CKA": lambda *a: -margins(*a),
            "the embedding's rows shuffled": lambda *a: margins(*a, shuffle="embedding"),
        },
        hints={
            "NaN at the zero displacement of record 0": "your margin is NaN", "the embedding itself, not E_t - E_0": "the embedding itself",
            "displacement from the previous record": "from the previous record", "Gram matrices not centred": "are not centred",
            "rows centred instead of columns": "you centred each row", "square root of CKA (numerator not squared)": "square root",
            "raw CKA, no band subtracted": "that is the raw CKA", "the band's bottom": "the band's bottom",
            "the band's mean": "the band's mean", "band minus CKA": "the sign is flipped",
            "the embedding's rows shuffled": "you shuffled the embedding's rows",
        },
    ),
    Contract(
        checks.check_09_leading_signature,
        reference=leading_signature_reference,
        wrong={
            "every record read, from_step ignored": lambda *a: leaders(*a, keep="all"),
            "the last record only": lambda *a: leaders(*a, keep="last"),
            "the lead on average": lambda *a: leaders(*a, every=False),
            "a lead equal to by counted": lambda *a: leaders(*a, above=lambda lead, by: lead >= by),
            "any positive lead": lambda *a: leaders(*a, above=lambda lead, by: lead > 0),
            "the record at from_step left out": lambda *a: leaders(*a, keep="after"),
            "from_step read as a record index": lambda *a: leaders(*a, keep="index"),
            "beats one other signature, not all": lambda *a: leaders(*a, beat_all=False),
            "the trailing signature": lambda *a: leaders(*a, largest=False),
            "model 0's leader for every model": lambda *a: leaders(*a)[:1] * len(leaders(*a)),
            "positions instead of names": lambda *a: [None if n is None else list(a[1]).index(n) for n in leaders(*a)],
        },
        hints={
            "every record read, from_step ignored": "you read every record", "the last record only": "you read only the last record",
            "the lead on average": "you tested the lead on average", "a lead equal to by counted": "is not a lead",
            "any positive lead": "any positive lead counted", "the record at from_step left out": "itself counts",
            "from_step read as a record index": "not a position in the records", "beats one other signature, not all": "not just one of them",
            "the trailing signature": "that is the trailing signature", "model 0's leader for every model": "one answer for all models",
            "positions instead of names": "not its position",
        },
    ),
    Contract(
        checks.check_09_alignment_order,
        reference=alignment_leaders_reference,
        wrong={
            "each signature's margins under the other's name": lambda *a: composed(*a, swap=True),
            "from_step not passed on (every record read)": lambda *a: composed(*a, pass_from=False),
            "one leader for every seed": lambda *a: composed(*a)[:1],
            "raw CKA compared, no band": lambda *a: composed(*a, band=False),
        },
        hints={
            "each signature's margins under the other's name": "other way round",
            "from_step not passed on (every record read)": "pass from_step and by through",
            "one leader for every seed": "one name or None per model", "raw CKA compared, no band": "raw CKA values",
        },
    ),
]


# --- putting them together: the KL over training ----------------------------------------------------------------


def kl_run(model, tokens, table, x_eval, steps, every, seed, *, first=True, last=True, on="eval", models="all",
           trained="given", optimizer="adam"):
    """A learner's kl_over_training, one mistake chosen by the keywords."""
    import copy

    g = torch.Generator().manual_seed(seed)
    net = copy.deepcopy(model) if trained == "copy" else model
    params = list(net.parameters())
    opt = torch.optim.Adam(params, lr=1e-2) if optimizer == "adam" else torch.optim.SGD(params, lr=1e-2)
    T, V = net.seq_len, table.shape[0]
    recorded, kls = [], []
    for step in range(steps + 1):
        batch = tokens[torch.randint(0, len(tokens) - T - 1, (32,), generator=g)[:, None] + torch.arange(T + 1)]
        wanted = step % every == 0 or (last and step == steps)
        if wanted and (first or step > 0):
            with torch.no_grad():
                x = x_eval if on == "eval" else batch[:, :-1]
                logits = net(x)
            recorded.append(step)
            kls.append([kl_to_bigram(logits[k], table, x) for k in range(logits.shape[0])])
        if step == steps:
            break
        logits = net(batch[:, :-1])
        losses = [torch.nn.functional.cross_entropy(lk.reshape(-1, V), batch[:, 1:].reshape(-1)) for lk in logits]
        loss = sum(losses) if models == "all" else losses[0]
        opt.zero_grad()
        loss.backward()
        opt.step()
    return torch.tensor(recorded), torch.tensor(kls, dtype=torch.float64).T


CONTRACT.append(
    Contract(
        checks.check_09_kl_over_training,
        reference=kl_run,
        wrong={
            "no record before the first update": lambda *a: kl_run(*a, first=False),
            "the last step missed when it is no multiple of every": lambda *a: kl_run(*a, last=False),
            "KL read on the training windows": lambda *a: kl_run(*a, on="train"),
            "only model 0 trained": lambda *a: kl_run(*a, models="first"),
            "a copy trained, not the model given": lambda *a: kl_run(*a, trained="copy"),
            "SGD at the same learning rate": lambda *a: kl_run(*a, optimizer="sgd"),
        },
        hints={"no record before the first update": "step 0", "a copy trained, not the model given": "in place"},
    )
)
