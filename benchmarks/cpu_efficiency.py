"""How close the CPU path runs to this machine's own matmul peak, change by change, batched and under load.

    python benchmarks/cpu_efficiency.py [--steps 4000] [--json OUT.json]

What it prints, each as a table:

1. **peak**: fp32 matmul FLOP/s of this machine (2048 x 2048 products) with 1 and 2 threads;
2. **changes**: `ctxlab staircase`'s training (quick profile, the 9 models, ``--steps`` full-batch GD
   steps) in a fresh process per change and thread count: autograd's generic path (the reference loop),
   each change added to the one above: freed memory kept for reuse (``ctxlab.cpu.keep_freed_memory``),
   the written-out step (``ctxlab.mlp_step``) with its backward's scatter-add done by ``index_add_``
   every step, then the sparse scatter product it switches to when the same tokens come back (the
   course's default path), and that default with freed memory not kept. Per row: seconds per step;
   the FLOPs torch counts for the row's own step (FlopCounterMode: matmuls only, so a gather counts nothing); **work rate** = the
   reference step's counted FLOPs over the row's seconds per step, and its share of the same-thread
   peak (the written-out step does the same model's work with fewer multiplications, so its own
   counted rate would understate it); max |loss - reference loss| over the run, for the models at
   gamma >= 1 and, apart, for gamma = 0.5, whose runs at lr 1 sit at the edge of stability: the
   reference with a 1e-6 init jitter (``CTXLAB_INIT_JITTER``) shows how far a last-bit change alone
   moves them;
3. **gpt**: the GPT's quick-profile step, counted the same way, and with its forward pass through
   ``torch.compile`` (its compile time and the loss curve's largest change beside it);
4. **ensemble**: the 9 staircase models in one batched ensemble against the same 9 one after another;
5. **threads under load**: `ctxlab staircase --steps N --gammas 1.0 --seeds 3` as a fresh process with
   2 threads, 1 thread and 2 threads with OMP_WAIT_POLICY=PASSIVE, on an idle machine and with one core
   kept busy by a spinning process (Binder and Colab share their CPUs): the table behind
   ``ctxlab.cpu.course_threads``.

Run it on an otherwise idle machine; the numbers are this machine's, not a target.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import ctxlab  # noqa: F401  (before torch, as the course's command and notebooks: its OpenMP wait policy)
import torch
from torch.utils.flop_counter import FlopCounterMode

from ctxlab import mlp_step
from ctxlab.env import JITTER_VARIABLE
from ctxlab.experiments import HEADLINE_TASK, LM_PROFILES, STAIRCASE_PROFILES
from ctxlab.models import ensemble_grid, make_model
from ctxlab.tasks import hierarchy_task
from ctxlab.train import cross_entropy, train

GAMMAS, SEEDS = (0.5, 1.0, 1.5), (0, 1, 2)


def matmul_peak(threads: int, n: int = 2048, repeats: int = 10) -> float:
    """Best-of-``repeats`` fp32 FLOP/s of an n x n matmul."""
    torch.set_num_threads(threads)
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b  # warm-up
    best = min(_seconds(lambda: a @ b) for _ in range(repeats))
    return 2 * n**3 / best


def _seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def staircase_models(gammas=GAMMAS, seeds=SEEDS):
    sizes = STAIRCASE_PROFILES["quick"]
    task = hierarchy_task(block=HEADLINE_TASK["block"], n_values=HEADLINE_TASK["n_values"], mix=HEADLINE_TASK["mix"])
    g, s = ensemble_grid(gammas, seeds)
    return task, make_model("mlp", task, d=sizes["d"], hidden=sizes["hidden"], gamma=g, seed=s)


def step_flops(loss_fn) -> int:
    """Model FLOPs of one forward + backward, as torch counts them (matmuls and convolutions)."""
    counter = FlopCounterMode(display=False)
    with counter:
        loss_fn().sum().backward()
    return counter.get_total_flops()


CHANGES = {  # name: (written-out step, freed memory kept, 1e-6 init jitter, sparse scatter product)
    "autograd (reference)": (False, False, False, False),
    "+ freed memory kept": (False, True, False, False),
    "+ written-out, index_add_": (True, True, False, False),
    "+ sparse scatter (default)": (True, True, False, True),
    "default, memory not kept": (True, False, False, True),
    "reference, 1e-6 init jitter": (False, False, True, False),  # how far a last-bit change alone moves each curve
}
REFERENCE = "autograd (reference)"


def staircase_change(change: str, threads: int, steps: int) -> dict:
    """One change's training run in this process (a fresh one: the allocator setting cannot be undone)."""
    written_out, _, _, sparse = CHANGES[change]
    if not sparse:  # every step's backward scatters with index_add_, as for tokens seen once
        mlp_step.scatter_matrix = lambda *args: None
    task, model = staircase_models()
    model.written_out = written_out
    counted = step_flops(lambda: cross_entropy(model(task.population.x), task.population))
    model.written_out = False
    reference = step_flops(lambda: cross_entropy(model(task.population.x), task.population))
    model.written_out = written_out
    start = time.perf_counter()
    traj = train(model, task.population, steps, record_every=5, progress=False)
    seconds = time.perf_counter() - start
    assert torch.get_num_threads() == threads, "the course's thread choice overrode the benchmark's"
    return {"counted_flops": counted, "reference_flops": reference, "seconds_per_step": seconds / steps,
            "loss": traj.loss.tolist()}


def run_change(change: str, threads: int, steps: int) -> dict:
    """:func:`staircase_change` in a fresh process with ``threads`` threads."""
    _, keep, jitter, _ = CHANGES[change]
    env = {**{k: v for k, v in os.environ.items() if k != JITTER_VARIABLE}, "CTXLAB_THREADS": str(threads),
           "CTXLAB_KEEP_FREED_MEMORY": "1" if keep else "0", **({JITTER_VARIABLE: "1"} if jitter else {})}
    with tempfile.TemporaryDirectory() as out:
        path = os.path.join(out, "row.json")
        subprocess.run([sys.executable, __file__, "--child", change, str(threads), str(steps), path], env=env, check=True)
        with open(path) as f:
            return json.load(f)


def change_table(steps: int, peak: dict) -> dict:
    """Every change at 1 and 2 threads, with its loss curves compared to the reference loop's on 1 thread."""
    rows = {(change, t): run_change(change, t, steps) for change in CHANGES for t in (1, 2)
            if t == 1 or not CHANGES[change][2]}
    reference = torch.tensor(rows[REFERENCE, 1]["loss"])
    gammas, _ = ensemble_grid(GAMMAS, SEEDS)
    small = torch.tensor([g >= 1 for g in gammas])
    print(f"{'change':<27}{'thr':>4}{'ms/step':>9}{'counted GFLOP/s':>17}{'work GFLOP/s':>14}{'% peak':>8}"
          f"{'max|dloss| g>=1':>17}{'g=0.5':>9}")
    table = {}
    for (change, t), row in rows.items():
        diff = (torch.tensor(row["loss"]) - reference).abs()
        work = row["reference_flops"] / row["seconds_per_step"]
        entry = {**{k: v for k, v in row.items() if k != "loss"}, "work_flops_per_second": work,
                 "share_of_peak": work / peak[t], "max_dloss_gamma_ge_1": float(diff[small].max()),
                 "max_dloss_gamma_05": float(diff[~small].max())}
        table[f"{change}, {t} thread(s)"] = entry
        print(f"{change:<27}{t:>4}{row['seconds_per_step'] * 1e3:>9.2f}{row['counted_flops'] / row['seconds_per_step'] / 1e9:>17.2f}"
              f"{work / 1e9:>14.2f}{100 * entry['share_of_peak']:>7.1f}%{entry['max_dloss_gamma_ge_1']:>17.1e}"
              f"{entry['max_dloss_gamma_05']:>9.1e}")
    return table


def gpt_achieved(threads: int, steps: int, compiled: bool = False) -> dict:
    """The GPT's quick-profile step on random character-sized tokens (the data do not change the FLOPs),
    timed after a first call. ``compiled``: its forward pass through ``torch.compile`` (inductor); the first
    call compiles it (its seconds reported apart: the first compiled row starts from an empty cache, the
    second reuses it), and the loss curve's largest change from the plain one is reported."""
    from ctxlab.lm import TinyGPT, train_lm

    cfg = LM_PROFILES["quick"]
    vocab = 65  # the shipped text's character vocabulary is about this size
    tokens = torch.randint(0, vocab, (200_000,), generator=torch.Generator().manual_seed(0))

    def trained(model, n, record_every=None):
        return train_lm(model, tokens, n, eval_tokens=tokens[:20_000], batch_size=cfg["batch_size"], lr=cfg["lr"],
                        record_every=record_every or n, progress=False).loss

    def fresh(compiled=False):
        torch.manual_seed(0)
        model = TinyGPT(vocab, cfg["context"], d=cfg["d"], n_layers=cfg["n_layers"], n_heads=cfg["n_heads"])
        if compiled:
            model.logits = torch.compile(model.logits)
        return model

    model = fresh(compiled)
    batch = tokens[: cfg["batch_size"] * (cfg["context"] + 1)].reshape(cfg["batch_size"], -1)
    flops = step_flops(lambda: torch.nn.functional.cross_entropy(
        model.logits(batch[:, :-1]).reshape(-1, vocab), batch[:, 1:].reshape(-1))) if not compiled else None
    row = {}
    if compiled:
        # into an inductor cache of its own, empty at the first compiled row: a user's first run compiles cold
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="ctxlab-inductor-"))
        row["compile_seconds"] = _seconds(lambda: trained(fresh(True), 2))
        curve = trained(model, steps, record_every=1)  # the model used for the timing below, from the same draw
        row["max_dloss"] = float((curve - trained(fresh(), steps, record_every=1)).abs().max())
    else:
        trained(model, 2)  # the first call's one-off costs (allocations, first kernels) are not a step's
    seconds = _seconds(lambda: trained(model, steps))
    return {**row, "flops_per_step": flops, "seconds_per_step": seconds / steps}


def ensemble_speedup(threads: int, steps: int) -> dict:
    task, model = staircase_models()
    batched = _seconds(lambda: train(model, task.population, steps, record_every=5, progress=False))
    start = time.perf_counter()
    for g, s in zip(*ensemble_grid(GAMMAS, SEEDS)):
        _, alone = staircase_models([g], [s])
        train(alone, task.population, steps, record_every=5, progress=False)
    one_by_one = time.perf_counter() - start
    return {"batched_seconds": batched, "one_by_one_seconds": one_by_one, "speedup": one_by_one / batched}


THREAD_SETTINGS = {
    "2 threads": {"OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "ACTIVE"},
    "1 thread": {"OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "ACTIVE"},
    "2 threads, PASSIVE": {"OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "PASSIVE"},
    "course default": {},  # ctxlab.cpu's choice (run last: the first fresh process pays for cold caches)
}


def command_seconds(env_overrides: dict, steps: int) -> float:
    with tempfile.TemporaryDirectory() as out:
        chosen = ("CTXLAB_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OMP_WAIT_POLICY")
        env = {**{k: v for k, v in os.environ.items() if k not in chosen}, **env_overrides}
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "ctxlab.cli", "staircase", "--steps", str(steps), "--gammas", "1.0",
                        "--seeds", "3", "--no-progress", "--out", out], env=env, check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - start


def threads_under_load(steps: int) -> dict:
    table = {}
    for load in ("idle", "one core busy"):
        spinner = None
        if load != "idle":
            spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            table[load] = {name: command_seconds(env, steps) for name, env in THREAD_SETTINGS.items()}
        finally:
            if spinner is not None:
                spinner.kill()
                spinner.wait()
    return table


def use_threads(threads: int) -> None:
    """This process's thread count, pinned so that the course's own choice (``ctxlab.cpu``) keeps it."""
    os.environ["CTXLAB_THREADS"] = str(threads)
    torch.set_num_threads(threads)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4000, help="training steps per timed run (default 4000)")
    parser.add_argument("--json", help="also write the numbers to this JSON file")
    parser.add_argument("--child", nargs=4, metavar=("CHANGE", "THREADS", "STEPS", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        change, threads, steps, out = args.child
        use_threads(int(threads))
        with open(out, "w") as f:
            json.dump(staircase_change(change, int(threads), int(steps)), f)
        return 0
    report: dict = {"torch": torch.__version__, "cpus": os.cpu_count()}
    report["peak"] = {t: matmul_peak(t) for t in (1, 2)}
    for t, flops in report["peak"].items():
        print(f"peak fp32 matmul, {t} thread(s): {flops / 1e9:7.1f} GFLOP/s")
    print(f"staircase training, {args.steps} steps, 9 models, each row a fresh process:")
    report["changes"] = change_table(args.steps, report["peak"])
    report["gpt"] = {}
    report["gpt_compiled"] = {}
    for t in (1, 2):
        use_threads(t)
        for key, compiled in (("gpt", False), ("gpt_compiled", True)):
            row = report[key][t] = gpt_achieved(t, max(20, args.steps // 40), compiled)
            row["flops_per_step"] = row["flops_per_step"] or report["gpt"][t]["flops_per_step"]  # the same model's work
            row["flops_per_second"] = row["flops_per_step"] / row["seconds_per_step"]
            note = f" (compiling {row['compile_seconds']:.0f} s, max|dloss| {row['max_dloss']:.1e})" if compiled else ""
            print(f"{key.replace('_', ', '):<13} {t} thread(s): {row['flops_per_step'] / 1e6:6.1f} MFLOP/step, "
                  f"{row['seconds_per_step'] * 1e3:5.1f} ms/step, {row['flops_per_second'] / 1e9:6.2f} GFLOP/s = "
                  f"{100 * row['flops_per_second'] / report['peak'][t]:4.1f} % of peak{note}")
    report["ensemble"] = {}
    for t in (1, 2):
        use_threads(t)
        e = report["ensemble"][t] = ensemble_speedup(t, max(100, args.steps // 10))
        print(f"9 staircase models, {t} thread(s): batched {e['batched_seconds']:.1f} s, one after another "
              f"{e['one_by_one_seconds']:.1f} s: {e['speedup']:.1f}x")
    report["threads"] = threads_under_load(max(100, args.steps // 4))
    print(f"`ctxlab staircase --steps {max(100, args.steps // 4)} --gammas 1.0 --seeds 3`, seconds:")
    print(f"{'':>15}" + "".join(f"{name:>22}" for name in THREAD_SETTINGS))
    for load, row in report["threads"].items():
        print(f"{load:>15}" + "".join(f"{row[name]:>22.1f}" for name in THREAD_SETTINGS))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
