# %% [markdown]
# # Exercises 15 — Token learning times
#
# Three exercises on lesson 15: fit one sigmoid to one loss curve, give every sequence its order,
# and rebuild a mean loss curve from fitted sigmoids. Fill in each `# YOUR CODE HERE`, then run
# the check cell below it: it prints `PASS check_15_…` or stops with a hint. The checks also try
# *hidden* cases (other curves, tasks, weights and tolerances), so write code for any input.
# Grade the whole notebook from a terminal:
#
# ```bash
# ctxlab grade exercises/15_learning_times.ipynb
# ```
#
# | # | exercise | difficulty | time |
# |---|---|---|---|
# | 1 | fit one sigmoid in log-step | ★★☆ | 20 min |
# | 2 | the order of every sequence | ★★☆ | 20 min |
# | 3 | rebuild the mean loss from sigmoids | ★☆☆ | 5 min |

# %%
import math

import torch

import ctxlab.checks
from ctxlab.learning_times import log_spaced_steps, token_loss_probe
from ctxlab.models import make_model
from ctxlab.tasks import hierarchy_task
from ctxlab.train import train

# %% [markdown]
# The exercises use lesson 15's binary hierarchy task and one small Emb-MLP (d 16, 64 GELU units,
# γ = 1), trained here once with every sequence's loss recorded (a few seconds).

# %%
task = hierarchy_task(block=8, n_values=2)
data = task.population
run = train(make_model("mlp", task, gamma=1.0, seed=0, d=16, hidden=64), data, 1200,
            record_steps=log_spaced_steps(1200, 60), probes={"rows": token_loss_probe(data)}, progress=False)
steps, curves = run.steps.double(), run.extras["rows"][0].T.double()  # [T], [512 sequences, T]
print(f"{curves.shape[0]} sequences x {steps.numel()} recorded steps; final mean loss {float(run.loss[0, -1]):.3f}")

# %% [markdown]
# ## Exercise 1 — fit one sigmoid in log-step (★★☆, 20 min)
#
# Write `fit_sigmoid(steps, curve)` that fits
#
# $$\ell(t) = \ell_\infty + \frac{\Delta}{1 + \exp\big((\ln t - \ln \tau)/w\big)}$$
#
# to one curve (`steps` [T], all > 0; `curve` [T]) by least squares, and returns the four numbers
# `(floor, drop, tau, width)` = (ℓ∞, Δ, τ, w). Conventions: τ in steps (not log steps); w in
# units of the **natural** log of t; Δ = (loss before) − (loss after), so a falling curve has
# Δ > 0 and a rising one Δ < 0. The check's curves are exact sigmoids (one with a little noise),
# so a good fit recovers their parameters.
#
# <details><summary>Hint 1: the idea</summary>
#
# Against ln t the drop is a logistic curve: level at ℓ∞ + Δ before, at ℓ∞ after, centred at ln τ,
# with width w. Fitting it is finding the four numbers with the smallest squared error, and from a
# start near the answer an optimiser of torch's finds them.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Optimise ℓ∞, Δ, ln τ and ln w, so that τ and w stay positive. Start near the answer: ℓ∞ from the
# last value, Δ from the first minus the last, ln τ at the log-step where the curve has made half
# its change, a width of a few tenths. Minimise the mean squared error in float64 (a quasi-Newton
# optimiser with a line search needs one call; a first-order one needs a thousand steps or so), then
# turn ln τ and ln w back into τ and w.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Return τ in steps, not ln τ. Δ is before minus after: positive for a falling curve, negative for a
# rising one, which the same code must fit. w is in units of the natural log of t, not log₁₀, and it
# divides ln t − ln τ inside the exponential. A start far from the answer can leave the optimiser
# stuck where the curve is flat.
# </details>

# %%
def fit_sigmoid(steps: torch.Tensor, curve: torch.Tensor) -> tuple[float, float, float, float]:
    """(floor, drop, tau, width) of the least-squares sigmoid in log-step through ``curve``."""
    ### BEGIN SOLUTION
    log_t, c = steps.double().log(), curve.double()
    halfway = ((c - c[0]).abs() >= 0.5 * (c[-1] - c[0]).abs()).double().argmax()
    p = torch.tensor([float(c[-1]), float(c[0] - c[-1]), float(log_t[halfway]), math.log(0.3)],
                     dtype=torch.float64, requires_grad=True)  # floor, drop, ln tau, ln w
    opt = torch.optim.LBFGS([p], lr=1, max_iter=200, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = (p[0] + p[1] * torch.sigmoid(-(log_t - p[2]) / p[3].exp()) - c).pow(2).mean()
        loss.backward()
        return loss

    opt.step(closure)
    floor, drop, log_tau, log_w = p.detach().tolist()
    return floor, drop, math.exp(log_tau), math.exp(log_w)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_15_fit_sigmoid(fit_sigmoid)

# %% tags=["solution"]
both_zero = (task.info["attribute"][data.x[:, 1]] == 0) & (task.info["attribute"][data.x[:, 2]] == 0)
floor, drop, tau, width = fit_sigmoid(steps, curves[both_zero.nonzero()[0, 0]])
print(f"a sequence with A(x2) = A(x3) = 0: floor {floor:.3f}, drop {drop:.3f}, τ {tau:.0f} steps, w {width:.2f}")

# %% [markdown]
# ## Exercise 2 — the order of every sequence (★★☆, 20 min)
#
# Write `token_orders(data, final_loss, tol)`: for each row n of `data`, the smallest k in
# 0 … L (L = `data.seq_len`) such that the statistic of the **first k positions**,
# p(y | x₁ … x_k), gives that row a loss within `tol` of its final loss:
#
# $$-\sum_y q_n(y)\, \ln p(y \mid x_{n,1..k}) \;\le\; \text{final\_loss}_n + \text{tol},$$
#
# where q_n = `data.targets()[n]` is the row's label distribution. Count p(y | x₁ … x_k) over the
# whole dataset **with its weights** `data.weights` (k = 0 is the label marginal p(y)). k = L
# always qualifies. Return a tensor [N] of integers.
#
# <details><summary>Hint 1: the idea</summary>
#
# Each prefix length k gives a predictor: the label statistic of the first k tokens, counted over
# the whole dataset. A row's order is the shortest prefix that already gives that row, within
# `tol`, the loss the model ended on.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# For each k from 0 to L: number every row's first k tokens as one id (its tokens read as digits
# in base V; with k = 0 every row gets the same id), add the rows' weighted label distributions into
# a table by that id, normalise the table's rows, and read each row's p back by its id. The row's
# cross-entropy is one sum over the labels. Keep, per row, the smallest k that qualifies.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Orders start at 0, the label marginal, not at 1. The first k positions, not the last k. Count
# with the rows' weights, not one count per row. Allow the tolerance: at most final loss + tol.
# A label with q_n(y) = 0 adds nothing to the loss, even where p is 0: do not let 0 · log 0 become NaN.
# </details>

# %%
def token_orders(data, final_loss: torch.Tensor, tol: float) -> torch.Tensor:
    """Per row [N]: the fewest leading positions whose label statistic gives the row its final loss."""
    ### BEGIN SOLUTION
    q = data.targets().double()
    orders = torch.full((data.n,), data.seq_len, dtype=torch.long)
    for k in range(data.seq_len, -1, -1):
        ids = torch.zeros(data.n, dtype=torch.long)
        for pos in range(k):
            ids = ids * data.vocab_size + data.x[:, pos]
        table = torch.zeros(data.vocab_size ** k, data.n_labels, dtype=torch.float64)
        table.index_add_(0, ids, data.weights.double()[:, None] * q)
        p = (table / table.sum(-1, keepdim=True).clamp_min(1e-300))[ids]
        loss = -(q * torch.where(q > 0, p.clamp_min(1e-300).log(), 0.0)).sum(-1)
        orders = torch.where(loss <= final_loss.double() + tol, k, orders)
    return orders
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_15_token_orders(token_orders)

# %% tags=["solution"]
orders = token_orders(data, curves[:, -1], 0.01)
print("sequences of order 0, 1, 2, 3:", torch.bincount(orders, minlength=4).tolist())

# %% [markdown]
# ## Exercise 3 — rebuild the mean loss from sigmoids (★☆☆, 5 min)
#
# Write `reconstruction_r2(mean_curve, fitted, weights)`: `fitted` [N, T] holds each sequence's
# fitted sigmoid, `weights` [N] the sequences' probabilities (they sum to 1), `mean_curve` [T] the
# measured mean loss. Rebuild the mean as the weighted sum of the fitted curves and return the R²
# of that rebuild against `mean_curve`, 1 − SSE / SST, with SST taken about the mean of
# `mean_curve` over time. Return a Python float.
#
# <details><summary>Hint 1: the idea</summary>
#
# R² asks how much of the mean curve's change over time the rebuild explains: one minus the
# rebuild's squared error over the curve's squared spread about its own mean over time.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Rebuild the mean as the weighted sum of the fitted curves over the sequences. SSE sums the squared
# differences to the measured mean curve over time; SST the squared differences between the measured
# curve and its average over time. Return 1 − SSE / SST as a number.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Weight each sequence's curve by its probability, not equally. R² is not the squared correlation,
# which forgives an offset: a rebuild off by a constant has correlation 1. SST is the spread about
# the time-mean, not the plain sum of squares of the curve.
# </details>

# %%
def reconstruction_r2(mean_curve: torch.Tensor, fitted: torch.Tensor, weights: torch.Tensor) -> float:
    """R² of the weighted sum of fitted curves against the measured mean curve."""
    ### BEGIN SOLUTION
    rebuilt = weights.double() @ fitted.double()
    mean = mean_curve.double()
    return float(1 - (mean - rebuilt).pow(2).sum() / (mean - mean.mean()).pow(2).sum())
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_15_reconstruction_r2(reconstruction_r2)

# %% tags=["solution"]
# the library's fit, all curves at once
from ctxlab.learning_times import fit_sigmoids

fit = fit_sigmoids(steps, curves)
print(f"sum of sigmoids vs the mean loss: R² {reconstruction_r2(run.loss[0].double(), fit.curves(steps), data.weights):.3f}")
