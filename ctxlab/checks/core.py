"""The checking machinery every exercise check uses: cases, comparisons, known-mistake diagnoses.

A check compares what the learner's function returns with the library's reference within a
stated tolerance, prints exactly ``PASS <check name>`` when every case agrees, and otherwise
raises ``AssertionError``. The message's first line names the case and what went wrong (the
score table of ``ctxlab grade`` shows that line); the next lines give expected vs got.
Visible cases are the ones the exercise shows; hidden ones use other tasks, sizes, sampled
data and non-uniform weights, so an answer that only fits the example does not pass, and the
edge cases the exercise's stated conventions decide (ties, a threshold never reached, a first
crossing that falls back, rows on either side of a rounding line), so a plausible wrong
convention does not pass either.
"""

from __future__ import annotations

import ast
import functools
import inspect
import math
import textwrap
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import torch
from torch import Tensor

from ctxlab.dataset import Dataset


@dataclass(frozen=True)
class Case:
    """One call of the learner's function and the answer it must give."""

    label: str
    args: tuple
    expected: Any
    hidden: bool = False
    kwargs: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Diagnosis:
    """A recognisable mistake: ``matches(got, expected, case)`` and the hint to show when it does."""

    matches: Callable[[Any, Any, Case], bool]
    hint: str


Compare = Callable[[Any, Any], str | None]  # returns None when equal, else what differs


def tensor_close(atol: float) -> Compare:
    """Compare tensors (or arrays) of the same shape elementwise within ``atol``."""

    def compare(got: Any, expected: Tensor) -> str | None:
        got_t = as_tensor(got)
        if got_t is None:
            return f"expected a tensor of shape {tuple(expected.shape)}, got {type(got).__name__}"
        if tuple(got_t.shape) != tuple(expected.shape):
            return f"expected shape {tuple(expected.shape)}, got shape {tuple(got_t.shape)}"
        try:
            torch.testing.assert_close(got_t.double(), expected.double(), atol=atol, rtol=0.0, equal_nan=False)
        except AssertionError:
            diff = (got_t.double() - expected.double()).abs().nan_to_num(math.inf)
            where = tuple(int(i) for i in torch.unravel_index(diff.argmax(), diff.shape))
            return (
                f"values differ by up to {float(diff.max()):.3g} (tolerance {atol:g}) at index {where}: "
                f"expected {float(expected[where]):.4f}, got {float(got_t[where]):.4f}"
            )
        return None

    return compare


def number_close(atol: float) -> Compare:
    """Compare a single number within ``atol``."""

    def compare(got: Any, expected: float) -> str | None:
        value = as_float(got)
        if value is None:
            return f"expected a number, got {type(got).__name__}"
        if not abs(value - expected) <= atol:
            return f"expected {expected:.4f}, got {value:.4f} (tolerance {atol:g})"
        return None

    return compare


def integer_equal() -> Compare:
    """Compare an integer count exactly."""

    def compare(got: Any, expected: int) -> str | None:
        value = as_float(got)
        if value is None or value != int(value):
            return f"expected an integer, got {got!r}"
        if int(value) != expected:
            return f"expected {expected}, got {int(value)}"
        return None

    return compare


def _not_done_yet(name: str, fn: Callable) -> AssertionError:
    return AssertionError(
        f"{name}: not done yet: {getattr(fn, '__name__', 'your function')} still raises "
        "NotImplementedError; write your code where it says # YOUR CODE HERE"
    )


def is_stub(fn: Any) -> bool:
    """Whether ``fn``'s whole body (docstring and ``pass`` aside) is ``raise NotImplementedError``: the
    exercise as shipped. False whenever its source cannot be read."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    node = tree.body[0] if tree.body else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    body = [s for s in node.body if not isinstance(s, ast.Pass) and not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    raised = body[0].exc if len(body) == 1 and isinstance(body[0], ast.Raise) else None
    raised = raised.func if isinstance(raised, ast.Call) else raised
    return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"


def stub_first(check: Callable) -> Callable:
    """``check`` that says "not done yet" at once for the shipped stub, before it builds its cases (some
    train models for them), with the message it would give after calling the stub."""

    @functools.wraps(check)
    def checked(fn, *args, **kwargs):
        if is_stub(fn):
            raise _not_done_yet(check.__name__, fn)
        return check(fn, *args, **kwargs)

    return checked


def run_check(
    name: str, fn: Callable, cases: Sequence[Case], compare: Compare, diagnoses: Sequence[Diagnosis] = ()
) -> None:
    """Run ``fn`` on every case; print ``PASS name`` or raise ``AssertionError`` with a hint."""
    if not callable(fn):
        raise AssertionError(f"{name}: pass your function itself (e.g. `{name}(my_function)`), got {fn!r}")
    for case in cases:
        where = f"{name}, {'hidden' if case.hidden else 'visible'} case '{case.label}'"
        try:
            got = fn(*case.args, **case.kwargs)
        except NotImplementedError:
            raise _not_done_yet(name, fn) from None
        except Exception as err:
            raise AssertionError(f"{where}: your function raised {type(err).__name__}: {err}") from err
        if got is None:
            raise AssertionError(f"{where}: your function returned None; did you forget `return`?")
        problem = compare(got, case.expected)
        if problem is None:
            continue
        hints = [d.hint for d in diagnoses if _safely(d.matches, got, case.expected, case)]
        first = f"{where}: {hints[0]}" if hints else f"{where}: {problem}"
        detail = f"\n  {problem}" if hints else ""
        raise AssertionError(f"{first}{detail}\n  inputs: {_describe(case.args)}")
    print(f"PASS {name}")


def _safely(predicate: Callable, *args) -> bool:
    try:
        return bool(predicate(*args))
    except Exception:
        return False


def as_tensor(value: Any) -> Tensor | None:
    """What a learner returned as a CPU tensor (lists, arrays and numbers too), or None if it is not one."""
    if isinstance(value, Tensor):
        return value.detach().cpu()
    try:
        return torch.as_tensor(value)
    except Exception:
        return None


def as_tensor_dict(got: Any, keys: Sequence[str], shape: tuple[int, ...], what: str, whole: bool = False) -> dict[str, Tensor] | str:
    """A learner's dict with exactly ``keys``, each a tensor of ``shape`` (of whole numbers with ``whole``), as
    float64 tensors (long with ``whole``); or what is wrong with its form (``what`` describes one value)."""
    if not isinstance(got, Mapping) or set(got) != set(keys):
        found = sorted(got, key=str) if isinstance(got, Mapping) else type(got).__name__
        return f"expected a dict with exactly the keys {list(keys)}, got {found}"
    out = {}
    for key in keys:
        value = as_tensor(got[key])
        if value is None or tuple(value.shape) != shape or (whole and not bool((value.double() == value.double().round()).all())):
            return f"'{key}': expected {what} {list(shape)}, got {None if value is None else tuple(value.shape)}"
        out[key] = value.long() if whole else value.double()
    return out


def as_ints(value: Any) -> list[int] | None:
    """A learner's list (or tensor) of whole numbers as ints; None when it is not one (1.5, "a", a scalar)."""
    try:
        values = value.tolist() if isinstance(value, Tensor) else list(value)
        if not all(float(v) == int(v) for v in values):
            return None
        return [int(v) for v in values]
    except Exception:
        return None


def as_float(value: Any) -> float | None:
    """What a learner returned as one Python float (a 0-d tensor, a number), or None if it is not one."""
    try:
        return float(value.item() if hasattr(value, "item") else value)
    except Exception:
        return None


def _describe(args: tuple) -> str:
    parts = []
    for a in args:
        if isinstance(a, Dataset):
            parts.append(f"Dataset(N={a.n}, L={a.seq_len}, V={a.vocab_size}, C={a.n_labels})")
        elif isinstance(a, Tensor):
            parts.append(f"tensor of shape {tuple(a.shape)}")
        else:
            parts.append(repr(a))
    return ", ".join(parts)


def all_close(a: Any, b: Any, atol: float = 1e-4) -> bool:
    """True when ``a`` and ``b`` are tensors of one shape that agree within ``atol`` (what diagnoses test)."""
    a_t, b_t = as_tensor(a), as_tensor(b)
    return a_t is not None and a_t.shape == b_t.shape and bool(torch.allclose(a_t.double(), b_t.double(), atol=atol))


# --- datasets the hidden cases use -------------------------------------------------------------


def reweighted(data: Dataset, seed: int) -> Dataset:
    """The same rows with random non-uniform weights: catches code that ignores ``data.weights``."""
    g = torch.Generator().manual_seed(seed)
    w = torch.rand(data.n, generator=g, dtype=torch.float64) + 0.2
    return Dataset(data.x, data.y, data.vocab_size, data.n_labels, (w / w.sum()).float())


def hard_labels(data: Dataset) -> Dataset:
    """The same rows with each label distribution replaced by its most likely label: what code that reads
    ``data.y`` as integers (or takes an argmax) sees; the diagnoses compare with it."""
    return Dataset(data.x, data.targets().argmax(-1), data.vocab_size, data.n_labels, data.weights)


HARD_LABELS_HINT = ("you used one label per row (data.y as integers, or an argmax): rows of a population carry label "
                    "DISTRIBUTIONS; use data.targets() [N, C], weighted by data.weights")
