"""ctxlab: a hands-on course on the Context Staircase.

Token embeddings trained from small initialization first align with the simplest data
statistic (a token's label distribution) and then, stair by stair, with statistics that
involve more and more context tokens. This package holds everything the lessons need:
tasks, probability signatures, small-init models, batched training, alignment metrics,
gradient-flow theory, plots, widgets and exercise checks.

Submodules are imported on demand (``import ctxlab.tasks``), so ``import ctxlab`` is cheap.
"""

import os

__version__ = "0.1.0"

# Idle OpenMP threads sleep instead of spinning. On a shared CPU (Binder, Colab, CI) a spinning
# thread takes the core another process needs (benchmarks/cpu_efficiency.py times the staircase
# command with spinning and with passive threads, idle and with one core busy).
# It only takes effect when ctxlab is imported before torch (the command line, every notebook's
# setup cell); set OMP_WAIT_POLICY yourself to choose otherwise.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
