"""Small argument checks shared by the library's public functions.

Each raises a ``ValueError`` that names the argument and says what it must be, so a bad value
fails at the boundary instead of as a raw torch message (or a silent NaN) deep inside.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import torch
from torch import Tensor


def number(value, name: str, *, minimum: float | None = None, positive: bool = False) -> float:
    """A finite real number (not a bool), at least ``minimum`` or > 0 when ``positive``."""
    if isinstance(value, Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(float(value)):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if positive and not value > 0:
        raise ValueError(f"{name} must be positive, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value!r}")
    return float(value)


def integer(value, name: str, *, minimum: int | None = None) -> int:
    """A whole number (an int or an integer tensor/NumPy scalar; not a bool or a float) >= ``minimum``."""
    if isinstance(value, Tensor) and value.numel() == 1 and not value.is_floating_point():
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value!r}")
    return int(value)


def finite(values, name: str, *, nonnegative: bool = False, dtype=None) -> Tensor:
    """A tensor of finite numbers (non-negative ones when asked); an empty one is refused."""
    t = torch.as_tensor(values) if dtype is None else torch.as_tensor(values, dtype=dtype)
    if t.dtype == torch.bool or t.is_complex():
        raise ValueError(f"{name} must hold real numbers, got dtype {t.dtype}")
    if t.numel() == 0:
        raise ValueError(f"{name} is empty")
    if t.is_floating_point() and not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} holds NaN or infinite values")
    if nonnegative and bool((t < 0).any()):
        raise ValueError(f"{name} must be non-negative, found {float(t.min())}")
    return t


def token_ids(x, name: str) -> Tensor:
    """Integer token ids: a float tensor is refused rather than truncated."""
    t = torch.as_tensor(x)
    if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        raise ValueError(f"{name} must hold integer token ids, got dtype {t.dtype}")
    return t


def nonempty(items, name: str) -> list:
    """A non-empty list of the items (any iterable)."""
    out = list(items)
    if not out:
        raise ValueError(f"{name} is empty: give at least one")
    return out
