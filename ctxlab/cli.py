"""The ``ctxlab`` command: headless experiments and the course tools.

    ctxlab staircase [--gammas ...] [--seeds N] [--steps N] [--lr X] [--optimizer gd|adam]
                     [--values C --block B --mix p1 .. pL] [--device D] [--out DIR] [--json PATH]
    ctxlab predict [--gammas ...] [--seeds N] [--lr X] [--width D] [--hidden H] [--values C --block B --mix p1 .. pL]
                   [--train [--steps N] [--device D]] [--out DIR] [--json PATH]
    ctxlab lm [--gammas ...] [--steps N] [--tokenizer char|bpe] [--optimizer sgd|adam] [--precision fp32|tf32|bf16]
              [--source shakespeare|pydoc | --text FILE] [--device D] [--out DIR] [--json PATH]
    torchrun --nproc-per-node 2 -m ctxlab.cli lm ...      (data-parallel)
    ctxlab probe CHECKPOINT ... [--text FILE] [--top N] [--bins B] [--context M] [--key NAME] [--out DIR] [--json PATH]
    ctxlab build [--check] [--force] [NAMES ...]
    ctxlab grade NOTEBOOK [--cell-timeout S] [--timeout S]
    ctxlab doctor
    ctxlab dashboard [--port N] [--open]
    ctxlab figures [--profile quick|full] [--device D] [--out DIR] [--only NAME ...]

Exit status: 0 done; 1 a model diverged (outputs written, the models named on stderr); 2 a bad
option, device or output path, found before any training (one line ``ctxlab CMD: error: ...``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ctxlab.cli_options import Parser, path_option, positive_float, positive_int


def _staircase(args: argparse.Namespace) -> int:
    """``ctxlab staircase``: train, print the table, save the figure (and the JSON).

    Bad outputs or devices fail before training; diverged models are reported (and the command
    fails) after the outputs are saved, so the other runs' numbers are kept."""
    from ctxlab.experiments import check_before_training, report_divergence, save_outputs, staircase
    from ctxlab.plots import staircase_figure

    figure_path = Path(args.out) / "staircase.png"
    check_before_training(args.device, figure_path, args.json)
    from ctxlab.experiments.prediction import task_options

    task_args = task_options(args)
    result = staircase(
        gammas=args.gammas,
        seeds=list(range(args.seeds)),
        steps=args.steps,
        lr=args.lr,
        optimizer=args.optimizer,
        device=args.device,
        profile=args.profile,
        progress=not args.no_progress,
        values=task_args["n_values"],
        block=task_args["block"],
        mix=task_args["mix"],
        on_divergence="record",
    )
    print(result.table())
    print(f"trained {len(result.gammas)} models in {result.seconds:.1f} s")
    save_outputs(staircase_figure(result), figure_path, result.to_json(), args.json)
    return report_divergence("staircase", result.trajectory, "--lr")


def _predict(args: argparse.Namespace) -> int:
    """``ctxlab predict``: the predicted ladder with onsets; with ``--train`` also the run, measured beside it."""
    from ctxlab.experiments.prediction import predict_command

    return predict_command(args)


def _attention(args: argparse.Namespace) -> int:
    """``ctxlab attention``: train both models, print the table, save the figure (and the JSON);
    bad options fail before training, a diverged model makes the command fail after saving (its
    message numbers the models of the batch: the first half learns attention, the second is uniform)."""
    from ctxlab.attention_exp import attention_experiment
    from ctxlab.experiments import check_before_training, report_divergence, save_outputs
    from ctxlab.plots import attention_figure

    figure_path = Path(args.out) / "attention.png"
    check_before_training(args.device, figure_path, args.json)
    result = attention_experiment(gammas=args.gammas, seeds=list(range(args.seeds)), steps=args.steps, lr=args.lr,
                                  device=args.device, profile=args.profile, progress=not args.no_progress,
                                  on_divergence="record")
    print(result.table())
    print(f"trained {2 * len(result.gammas)} models in {result.seconds:.1f} s")
    save_outputs(attention_figure(result), figure_path, result.to_json(), args.json)
    return report_divergence("attention", result.batch, "--lr")


def _lm(args: argparse.Namespace) -> int:
    """``ctxlab lm``: train the GPT (data-parallel under torchrun), save the figure and the JSON."""
    import torch

    from ctxlab.corpus import SOURCES
    from ctxlab.experiments import (NGRAM_ORDERS, check_before_training, language_model, lm_settings,
                                    report_divergence, save_outputs)
    from ctxlab.plots import lm_figure

    settings = dict(steps=args.steps, d=args.width, n_layers=args.layers, n_heads=args.heads, context=args.context,
                    tokenizer=args.tokenizer, vocab_size=args.vocab_size, batch_size=args.batch_size, lr=args.lr,
                    optimizer=args.optimizer, precision=args.precision)
    cfg = lm_settings(args.profile, settings)
    if args.text is not None:
        from ctxlab.corpus import read_text_file

        read_text_file(args.text)  # a missing, empty, binary or non-UTF-8 file fails here, before any work
        args.source = str(Path(args.text))
    elif args.source not in SOURCES:
        raise ValueError(f"unknown --source {args.source!r}; choose one of {SOURCES} (or give --text FILE)")
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if cfg["batch_size"] % world:
        raise ValueError(f"--batch-size {cfg['batch_size']} must be divisible by the number of processes ({world})")
    figure_path = Path(args.out) / "lm.png"
    check_before_training(args.device, figure_path, args.json)
    if world > 1:
        import torch.distributed as dist

        backend = "nccl" if args.device.startswith("cuda") else "gloo"
        dist.init_process_group(backend)
        if backend == "nccl":
            args.device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
    try:
        result = language_model(
            gammas=args.gammas, seeds=list(range(args.seeds)), source=args.source, profile=args.profile,
            device=args.device, progress=not args.no_progress and int(os.environ.get("RANK", "0")) == 0,
            on_divergence="record", **settings,
        )
    finally:
        if world > 1:
            torch.distributed.destroy_process_group()
    if int(os.environ.get("RANK", "0")) != 0:
        return 0
    minima = result.kl_minimum_steps()
    print(f"{'gamma':>5} {'seed':>4} " + " ".join(f"{'KL min ' + n:>16}" for n in NGRAM_ORDERS) + f" {'held-out loss':>14}")
    for k, (g, s) in enumerate(zip(result.trajectory.gammas, result.trajectory.seeds)):
        cells = " ".join(f"{'step ' + str(minima[n][k]):>16}" for n in NGRAM_ORDERS)
        print(f"{g:>5g} {s:>4d} {cells} {float(result.trajectory.loss[k, -1]):>14.4f}")
    print("held-out n-gram entropies: " + ", ".join(f"{n} {h:.3f}" for n, h in result.entropies.items()))
    print(f"{result.tokens_per_second:,.0f} tokens/s over {result.seconds:.1f} s")
    numbers = result.to_json()
    numbers["diverged_at_step"] = [None if step < 0 else step for step in result.trajectory.diverged_at.tolist()]
    save_outputs(lm_figure(result), figure_path, numbers, args.json)
    if args.checkpoints:
        from ctxlab.experiments.gpt import write_checkpoints

        written = write_checkpoints(result, args.checkpoints)
        print(f"checkpoints: {len(written)} folders under {args.checkpoints} (read them with: ctxlab probe "
              f"{args.checkpoints}/step* {'--text ' + args.text if args.text else ''})".replace(" )", ")"))
    return report_divergence("lm", result.trajectory, "--lr")


def _probe(args: argparse.Namespace) -> int:
    """``ctxlab probe``: each checkpoint's input embedding against the text's order-1 and order-2 signatures."""
    from ctxlab.corpus import load_text, read_text_file
    from ctxlab.experiments.outputs import check_before_training, save_outputs
    from ctxlab.plots import probe_figure
    from ctxlab.probe import probe

    corpus = read_text_file(args.text) if args.text else load_text("shakespeare")
    folders = [_checkpoint_folder(c) for c in args.checkpoints]
    figure_path = Path(args.out) / "probe.png"
    check_before_training("cpu", figure_path, args.json)
    result = probe(folders, corpus.text, corpus.name, top=args.top, context=args.context, bins=args.bins,
                   key=args.key, n_shuffles=args.shuffles, progress=not args.no_progress, by_line=not args.stream,
                   relative_to_first=args.relative_to_first)
    print(result.table())
    save_outputs(probe_figure(result), figure_path, result.to_json(), args.json)
    return 0


def _checkpoint_folder(name: str) -> Path:
    """A checkpoint folder, or ``minilm``: the folder inside the installed MiniLM package (lesson 10)."""
    if name == "minilm" and not Path(name).exists():
        from ctxlab.pretrained import model_dir

        return model_dir()
    return Path(name)


def _build(args: argparse.Namespace) -> int:
    from ctxlab.course import build

    return build(check=args.check, names=args.names, force=args.force)


def _grade(args: argparse.Namespace) -> int:
    from ctxlab.course import grade

    for flag, value in (("--cell-timeout", args.cell_timeout), ("--timeout", args.timeout)):
        if not value > 0:  # also refuses nan
            raise ValueError(f"{flag} must be a positive number of seconds, got {value}")
    return grade(args.notebook, cell_timeout=args.cell_timeout, timeout=args.timeout)  # NotGradable: exit 2 in main


def _doctor(args: argparse.Namespace) -> int:
    from ctxlab.env import doctor

    doctor()
    return 0


def _dashboard(args: argparse.Namespace) -> int:
    from ctxlab.widgets.dashboard import serve_dashboard

    return serve_dashboard(port=args.port, open_browser=args.open)


def _figures(args: argparse.Namespace) -> int:
    from ctxlab.env import device
    from ctxlab.figures import render_figures, select

    select(args.only)  # an unknown name fails before anything trains
    render_figures(args.out, profile=args.profile, device=device(args.device), only=args.only)
    return 0


def _add_grid_options(p: argparse.ArgumentParser, gammas: list[float], seeds: int) -> None:
    """The (γ × seed) grid and the run length every training command takes."""
    p.add_argument("--gammas", type=positive_float, nargs="+", default=gammas, help="init-scale exponents")
    p.add_argument("--seeds", type=positive_int, default=seeds, help="seeds per gamma")
    p.add_argument("--steps", type=positive_int, default=None, help="training steps (default: from the profile)")


def _add_run_options(p: argparse.ArgumentParser, numbers: str = "the numbers") -> None:
    """The options every training command shares: where it runs, at what scale, where its outputs go."""
    p.add_argument("--device", default="auto", help="cpu, cuda, cuda:N, mps or auto")
    p.add_argument("--out", type=path_option, default="figs", help="folder for the figure")
    p.add_argument("--json", type=path_option, default=None, help=f"write {numbers} to this JSON file")
    p.add_argument("--profile", choices=["quick", "full"], default=None, help="override CTXLAB_PROFILE")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _add_staircase(sub) -> None:
    s = sub.add_parser("staircase", help="train Emb-MLP on a hierarchy task over a gamma grid; rungs, figure, JSON")
    _add_grid_options(s, gammas=[0.5, 1.0, 1.5], seeds=3)
    s.add_argument("--lr", type=positive_float, default=None,
                   help="learning rate (default: gd 1, or 0.5 from four orders on; adam 0.001)")
    _add_task_options(s)
    s.add_argument("--optimizer", choices=["gd", "adam"], default="gd",
                   help="gd: full-batch gradient descent (default); adam: a contrast")
    _add_run_options(s)
    s.set_defaults(func=_staircase)


def _add_task_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--values", type=positive_int, default=None,
                   help="attribute values C: labels live in Z_C (default 2: one rung per order)")
    p.add_argument("--block", type=positive_int, default=None, help="tokens per position, a multiple of C (default 8)")
    p.add_argument("--mix", type=float, nargs="+", default=None,
                   help="probability of each order's rule: L weights give L positions and L + 1 levels "
                        "(default 0.4 0.3 0.3)")


def _add_predict(sub) -> None:
    p = sub.add_parser("predict", help="predict from the data and the init, without training, every level the "
                       "staircase rests on and when; --train also trains and sets the measured beside it")
    _add_grid_options(p, gammas=[1.0, 1.25, 1.5], seeds=3)
    p.add_argument("--lr", type=positive_float, default=None,
                   help="gradient-descent learning rate (default 1, or 0.5 from four orders on)")
    _add_task_options(p)
    p.add_argument("--width", type=positive_int, default=32, help="embedding width d (default 32)")
    p.add_argument("--hidden", type=positive_int, default=None, help="hidden units (default 4 x width)")
    p.add_argument("--train", action="store_true", help="also train the models and print measured beside predicted")
    _add_run_options(p)
    p.set_defaults(func=_predict)


def _add_attention(sub) -> None:
    a = sub.add_parser("attention", help="train one attention layer on a task that needs it, next to the same "
                       "model with attention frozen uniform; rungs, figure, JSON")
    _add_grid_options(a, gammas=[1.0], seeds=3)
    a.add_argument("--lr", type=positive_float, default=None, help="gradient-descent learning rate (default 0.08)")
    _add_run_options(a)
    a.set_defaults(func=_attention)


def _add_lm(sub) -> None:
    m = sub.add_parser("lm", help="train a small GPT on real text; KL to n-gram models, alignment; figure + JSON "
                       "(data-parallel under torchrun)")
    _add_grid_options(m, gammas=[1.0], seeds=1)
    text = m.add_mutually_exclusive_group()
    text.add_argument("--source", default="shakespeare", help="shakespeare or pydoc (both ship offline)")
    text.add_argument("--text", type=path_option, default=None, metavar="FILE",
                      help="train on your own UTF-8 text file instead (the BPE tokenizer is cached by its hash)")
    m.add_argument("--tokenizer", choices=["char", "bpe"], default=None, help="default: char (quick), bpe (full)")
    m.add_argument("--vocab-size", type=positive_int, default=None, help="BPE vocabulary size (>= 260)")
    m.add_argument("--context", type=positive_int, default=None, help="context length in tokens")
    m.add_argument("--width", type=positive_int, default=None, help="model width d (divisible by --heads)")
    m.add_argument("--layers", type=positive_int, default=None, help="transformer blocks")
    m.add_argument("--heads", type=positive_int, default=None, help="attention heads")
    m.add_argument("--batch-size", type=positive_int, default=None, help="global batch (split over torchrun processes)")
    m.add_argument("--lr", type=positive_float, default=None, help="learning rate (default: from the profile)")
    m.add_argument("--optimizer", choices=["sgd", "adam"], default=None,
                   help="adam (the profiles' default) or sgd (plain minibatch steps; give a larger --lr)")
    m.add_argument("--precision", choices=["fp32", "tf32", "bf16"], default=None,
                   help="fp32 (default), tf32 matmuls, or bf16 autocast with fp32 weights (GPU experiments)")
    m.add_argument("--checkpoints", type=path_option, default=None, metavar="DIR",
                   help="also write every recorded embedding snapshot as DIR/stepN/ (safetensors + tokenizer.json), "
                        "for ctxlab probe")
    _add_run_options(m, numbers="the curves")
    m.set_defaults(func=_lm)


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="ctxlab", description="The Context Staircase course: experiments and course tools.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)

    for add in (_add_staircase, _add_predict, _add_attention, _add_lm):
        add(sub)

    r = sub.add_parser("probe", help="compare the input embedding of local checkpoint folders (safetensors + "
                       "tokenizer.json) with a text's order-1 and order-2 signatures; table, figure, JSON")
    r.add_argument("checkpoints", nargs="+", metavar="CHECKPOINT",
                   help="folders in the Hugging Face layout (several of one run: drawn against the step in their "
                        "names); 'minilm' is lesson 10's installed model")
    r.add_argument("--text", type=path_option, default=None, metavar="FILE",
                   help="a UTF-8 text file (default: the shipped Shakespeare)")
    r.add_argument("--top", type=positive_int, default=400, help="most frequent tokens kept; the rest share a bucket (default 400)")
    r.add_argument("--bins", type=positive_int, default=4, help="frequency bins of equal size (default 4)")
    r.add_argument("--context", type=positive_int, default=63,
                   help="previous and next tokens kept for the order-2 signature (default 63)")
    r.add_argument("--key", default=None, help="the embedding tensor's name, when it cannot be found by name or shape")
    r.add_argument("--shuffles", type=positive_int, default=50, help="row shuffles for the chance level (default 50)")
    r.add_argument("--stream", action="store_true",
                   help="encode the text as one running stream, line breaks included (default: line by line)")
    r.add_argument("--relative-to-first", action="store_true",
                   help="measure each table's change from the first checkpoint's (E - E0 when the first is step 0)")
    r.add_argument("--out", type=path_option, default="figs", help="folder for probe.png (default figs)")
    r.add_argument("--json", type=path_option, default=None, help="write every number to this JSON file")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    r.set_defaults(func=_probe)

    b = sub.add_parser("build", help="build lesson, exercise and solution notebooks from their sources")
    b.add_argument("--check", action="store_true", help="fail if a committed notebook differs from its source")
    b.add_argument("--force", action="store_true", help="re-execute lessons even when their source is unchanged")
    b.add_argument("names", nargs="*", help="only these sources (e.g. 01_signatures)")
    b.set_defaults(func=_build)

    from ctxlab.course.grading import CELL_TIMEOUT_S, TIMEOUT_S

    g = sub.add_parser(
        "grade",
        help="run an exercise notebook with the course's own check cells on a fresh kernel and print a score table",
        description="Exit code 0: every check passed; 1: a check failed, a cell raised or the run was stopped; "
        "2: not an exercise set of the course (e.g. a lesson).",
    )
    g.add_argument("notebook", help="an exercise notebook, e.g. exercises/01_signatures.ipynb")
    g.add_argument("--cell-timeout", type=float, default=CELL_TIMEOUT_S, metavar="S",
                   help=f"stop the run when one cell takes longer than S seconds (default {CELL_TIMEOUT_S})")
    g.add_argument("--timeout", type=float, default=TIMEOUT_S, metavar="S",
                   help=f"stop the run after S seconds in all (default {TIMEOUT_S})")
    g.set_defaults(func=_grade)

    d = sub.add_parser("doctor", help="print versions, device and profile")
    d.set_defaults(func=_doctor)

    w = sub.add_parser("dashboard", help="serve the staircase explorer as a web page with Voila on 127.0.0.1")
    w.add_argument("--port", type=int, default=8866, help="port on 127.0.0.1 (default 8866)")
    w.add_argument("--open", action="store_true", help="open it in a web browser")
    w.set_defaults(func=_dashboard)

    f = sub.add_parser("figures", help="regenerate every lesson's headline figure headless: NAME.png, NAME.json "
                       "(its numbers) and an index.html gallery")
    f.add_argument("--profile", choices=["quick", "full"], default="quick", help="scale of the runs (default quick)")
    f.add_argument("--device", default="auto", help="cpu, cuda, cuda:N, mps or auto")
    f.add_argument("--out", type=path_option, default="figs", help="folder for the figures and the gallery (default figs)")
    f.add_argument("--only", nargs="+", metavar="NAME", default=None,
                   help="only these figures or lessons (e.g. 03_staircase 08_knobs)")
    f.set_defaults(func=_figures)
    return p


def main(argv: list[str] | None = None) -> int:
    top = parser()
    args, unknown = top.parse_known_args(argv)
    if unknown:  # name the subcommand, as its own errors do
        top.exit(2, f"ctxlab {args.command}: error: unrecognized arguments: {' '.join(unknown)} "
                    f"(see ctxlab {args.command} --help)\n")
    try:
        return int(args.func(args) or 0)
    except (ValueError, RuntimeError, OSError, ImportError) as err:  # ImportError: an extra is missing
        message = " ".join(str(err).split())  # one line, whatever the library wrote
        print(f"ctxlab {args.command}: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"ctxlab {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
