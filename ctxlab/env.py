"""Where the code runs: device choice, seeding, scale profile, and a ``doctor()`` report."""

from __future__ import annotations

import os
import platform
import sys

PROFILES = ("quick", "full")
PROFILE_VARIABLE = "CTXLAB_PROFILE"
JITTER_VARIABLE = "CTXLAB_INIT_JITTER"
JITTER_SIZE = 1e-6


def in_colab() -> bool:
    """True inside Google Colab (its kernel imports ``google.colab``)."""
    return "google.colab" in sys.modules


def in_binder() -> bool:
    """True on mybinder.org, which sets ``BINDER_SERVICE_HOST`` in every pod."""
    return "BINDER_SERVICE_HOST" in os.environ or "BINDER_LAUNCH_HOST" in os.environ


def in_ci() -> bool:
    """True under continuous integration, where progress bars stay silent."""
    return os.environ.get("CI", "").lower() not in ("", "0", "false")


def device(name: str | None = None):
    """Return a ``torch.device``: the one named, else cuda > mps > cpu.

    Raises ``ValueError`` for a name torch does not know and ``RuntimeError`` when the named
    accelerator is not available here, so a typo fails at once instead of deep in training.
    """
    import torch

    if name is None or name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if isinstance(name, torch.device):
        name = str(name)
    kind = name.split(":")[0]
    if kind not in ("cpu", "cuda", "mps"):
        raise ValueError(f"unknown device {name!r}: use 'cpu', 'cuda', 'cuda:N', 'mps' or 'auto'")
    if kind == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"device {name!r} asked for, but torch sees no CUDA GPU here; use 'cpu' or 'auto'")
    if kind == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise RuntimeError("device 'mps' asked for, but this machine has no Apple GPU; use 'cpu' or 'auto'")
    return torch.device(name)


def profile() -> str:
    """The scale profile: ``quick`` on a CPU and in CI, ``full`` on a GPU.

    ``CTXLAB_PROFILE=quick|full`` overrides the guess.
    """
    chosen = os.environ.get(PROFILE_VARIABLE)
    if chosen:
        if chosen not in PROFILES:
            raise ValueError(f"{PROFILE_VARIABLE}={chosen!r}: expected one of {PROFILES}")
        return chosen
    if in_ci():
        return "quick"
    return "full" if device().type == "cuda" else "quick"


def init_jitter(weights):
    """``weights`` times (1 + 1e-6 z), z ~ N(0, 1), when the opt-in init jitter is on; else ``weights``.

    ``CTXLAB_INIT_JITTER=SEED`` turns it on: what another CPU's last-bit differences do to a chaotic
    run, on any CPU. ``benchmarks/portability.py`` and ``make test`` run the lessons with it to find
    checked outputs that one run's arithmetic could flip; off by default. z is seeded by SEED and
    the weights themselves, so the same init drawn twice is jittered twice alike ("same seed, same
    numbers" still holds within a jittered run) and the weights' own generator is not touched.
    """
    chosen = os.environ.get(JITTER_VARIABLE, "").strip()
    if not chosen:
        return weights
    try:
        seed = int(chosen)
    except ValueError:
        raise ValueError(f"{JITTER_VARIABLE}={chosen!r}: expected an integer seed, or unset it") from None
    import hashlib

    import torch

    digest = hashlib.blake2b(weights.detach().cpu().numpy().tobytes(), digest_size=8, key=str(seed).encode())
    stream = torch.Generator().manual_seed(int.from_bytes(digest.digest(), "little") >> 1)
    z = torch.randn(weights.shape, generator=stream, dtype=weights.dtype).to(weights.device)
    return weights * (1 + JITTER_SIZE * z)


def progress_enabled(progress: bool | None = None) -> bool:
    """Whether to draw progress bars: on unless asked off, and always off under CI."""
    if in_ci():
        return False
    return True if progress is None else bool(progress)


def doctor(file=None) -> dict:
    """Print (and return) where the course runs: versions, device, profile, host and CPU threads (settled
    here as training would settle them: :func:`ctxlab.cpu.settle_threads`)."""
    import numpy as np
    import torch

    import ctxlab
    from ctxlab.cpu import settle_threads

    host = "colab" if in_colab() else "binder" if in_binder() else "ci" if in_ci() else "local"
    report = {
        "ctxlab": ctxlab.__version__,
        "python": platform.python_version(),
        "torch": torch.__version__.split("+")[0],
        "numpy": np.__version__,
        "device": device().type,
        "profile": profile(),
        "host": host,
        "threads": settle_threads(),
    }
    print("ctxlab doctor: " + ", ".join(f"{k}={v}" for k, v in report.items()), file=file)
    return report
