"""The written-out Emb-MLP and Emb-Attention steps compute autograd's numbers, and the course's CPU habits defer to the user."""

import os
import subprocess
import sys

import pytest
import torch

from ctxlab import attention_step, cpu, mlp_step
from ctxlab.attention_exp import POINTER_TASK, attention_model
from ctxlab.models import EmbAttention, EmbMLP
from ctxlab.tasks import hierarchy_task, pointer_task
from ctxlab.train import cross_entropy, train


def _pair(dtype=torch.float32, **kwargs):
    """Two copies of one ensemble: one through the written-out step, one through autograd's path."""
    models = [EmbMLP(12, 3, 4, d=8, hidden=16, gamma=[0.5, 1.0, 1.5], seed=[0, 1, 2], **kwargs).to(dtype) for _ in range(2)]
    models[1].written_out = False
    return models


@pytest.mark.parametrize("per_model_tokens", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_written_out_step_gives_autograds_logits_and_gradients(per_model_tokens, dtype):
    generator = torch.Generator().manual_seed(0)
    shape = (3, 40, 3) if per_model_tokens else (40, 3)
    x = torch.randint(0, 12, shape, generator=generator)
    y = torch.randn(3, 40, 4, generator=generator, dtype=dtype)
    fast, generic = _pair(dtype)
    tol = 1e-6 if dtype == torch.float32 else 1e-12
    for _ in range(2):  # the second call meets the same tokens: the backward's sparse scatter product
        grads = []
        for model in (fast, generic):
            model.zero_grad(set_to_none=True)
            logits = model(x)
            (logits * y).sum().backward()
            grads.append((logits.detach(), [p.grad for p in model.parameters()]))
        torch.testing.assert_close(grads[0][0], grads[1][0], rtol=tol, atol=tol)
        for g_fast, g_generic in zip(grads[0][1], grads[1][1]):
            torch.testing.assert_close(g_fast, g_generic, rtol=10 * tol, atol=tol * float(g_generic.abs().max()))


def test_the_scatter_matrix_is_built_for_repeated_tokens_and_dropped_when_they_change():
    x = torch.randint(0, 12, (40, 3), generator=torch.Generator().manual_seed(1))
    assert mlp_step.last_tokens(x, 3, 12, torch.float32)[1] is None
    rows, scatter = mlp_step.last_tokens(x, 3, 12, torch.float32)
    assert scatter is not None and scatter.shape == (3 * 3 * 12, 3 * 40)
    dense = torch.zeros(3 * 3 * 12, 3 * 40)
    dense[rows.T.reshape(-1), torch.arange(3 * 40).repeat(3)] = 1
    torch.testing.assert_close(scatter.to_dense(), dense, rtol=0, atol=0)
    x[0, 0] = (x[0, 0] + 1) % 12  # an in-place write: the old matrix would scatter into the wrong rows
    rows, scatter = mlp_step.last_tokens(x, 3, 12, torch.float32)
    assert scatter is None and torch.equal(rows, mlp_step.stacked_rows(x, 3, 12))
    assert mlp_step.last_tokens(x.clone(), 3, 12, torch.float32)[1] is None


def test_minibatches_of_fresh_tokens_train_as_the_generic_loop_does():
    task = hierarchy_task(block=4, n_values=2)
    generator = torch.Generator().manual_seed(2)
    batches = [torch.randint(0, task.population.x.shape[0], (64,), generator=generator) for _ in range(20)]
    fast, generic = (EmbMLP(task.vocab_size, task.seq_len, task.n_labels, d=8, hidden=16, gamma=1.0, seed=0) for _ in range(2))
    generic.written_out = False
    for model in (fast, generic):
        optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
        for batch in batches:
            optimizer.zero_grad()
            logits = model(task.population.x[batch])
            (torch.log_softmax(logits, -1) * -task.population.y[batch]).sum(-1).mean().backward()
            optimizer.step()
    for p_fast, p_generic in zip(fast.parameters(), generic.parameters()):
        torch.testing.assert_close(p_fast, p_generic, rtol=1e-5, atol=1e-6)


def test_written_out_step_is_used_only_where_it_computes_the_model():
    table = torch.zeros(1, 4, 2)
    assert mlp_step.fits(table, "gelu", layernorm=False)
    assert not mlp_step.fits(table, "relu", layernorm=False)
    assert not mlp_step.fits(table, "gelu", layernorm=True)
    assert not mlp_step.fits(table.to("meta"), "gelu", layernorm=False)


def test_a_short_staircase_run_has_the_generic_loops_loss_curve():
    task = hierarchy_task(block=4, n_values=2)
    curves = []
    for written_out in (True, False):
        model = EmbMLP(task.vocab_size, task.seq_len, task.n_labels, d=16, hidden=32, gamma=[1.0, 1.5], seed=[0, 1])
        model.written_out = written_out
        curves.append(train(model, task.population, 300, record_every=10, progress=False).loss)
    assert float((curves[0] - curves[1]).abs().max()) < 1e-5


def test_the_embedding_alone_can_be_trained_through_the_written_out_step():
    task = hierarchy_task(block=4, n_values=2)
    model = EmbMLP(task.vocab_size, task.seq_len, task.n_labels, d=8, hidden=16)
    model.w1.requires_grad_(False)
    cross_entropy(model(task.population.x), task.population).sum().backward()
    assert model.w1.grad is None and model.embedding.grad is not None and float(model.embedding.grad.abs().sum()) > 0


def _attention_pair(dtype, **kwargs):
    """Two copies of one attention ensemble (one model with attention frozen at 1/L): written out, generic."""
    models = [EmbAttention(9, 5, 3, d=8, d_head=6, hidden=16, gamma=[0.5, 1.0, 0.7], seed=[0, 1, 2],
                           uniform_attention=[False, True, False], **kwargs).to(dtype) for _ in range(2)]
    models[1].written_out = False
    return models


@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("readout", ["mean", "last"])
@pytest.mark.parametrize("per_model_tokens", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_written_out_attention_gives_autograds_logits_and_gradients(residual, readout, per_model_tokens, dtype):
    generator = torch.Generator().manual_seed(1)
    x = torch.randint(0, 9, (3, 30, 5) if per_model_tokens else (30, 5), generator=generator)
    y = torch.randn(3, 30, 3, generator=generator, dtype=dtype)
    results = []
    for model in _attention_pair(dtype, residual=residual, readout=readout):
        logits = model(x)
        (logits * y).sum().backward()
        results.append((logits.detach(), {name: p.grad for name, p in model.named_parameters()}))
    tol = 1e-6 if dtype == torch.float32 else 1e-12
    torch.testing.assert_close(results[0][0], results[1][0], rtol=tol, atol=tol)
    for name, generic in results[1][1].items():
        torch.testing.assert_close(results[0][1][name], generic, rtol=10 * tol, atol=tol * float(generic.abs().max()),
                                   msg=lambda m, name=name: f"{name}: {m}")
    assert float(results[0][1]["w_q"][1].abs().max()) == 0.0  # frozen attention: no gradient to W_Q


def test_written_out_attention_is_used_only_where_it_computes_the_model():
    table = torch.zeros(1, 4, 2)
    assert attention_step.fits(table, "gelu", layernorm=False, mlp=True)
    assert not attention_step.fits(table, "tanh", layernorm=False, mlp=True)
    assert not attention_step.fits(table, "gelu", layernorm=True, mlp=True)
    assert not attention_step.fits(table, "gelu", layernorm=False, mlp=False)
    assert not attention_step.fits(table.to("meta"), "gelu", layernorm=False, mlp=True)


def test_lesson_07s_run_has_the_generic_loops_loss_curve():
    task = pointer_task(**POINTER_TASK)
    curves = []
    for written_out in (True, False):
        model = attention_model(task, gamma=[1.0, 1.0], seed=[0, 0], uniform=[False, True])
        model.written_out = written_out
        curves.append(train(model, task.population, 400, lr=0.08, record_every=10, progress=False).loss)
    assert float((curves[0] - curves[1]).abs().max()) < 1e-5


def test_the_attention_embedding_alone_can_be_trained_through_the_written_out_step():
    task = pointer_task(**POINTER_TASK)
    model = attention_model(task, gamma=1.0, seed=0)
    for name, p in model.named_parameters():
        p.requires_grad_(name == "embedding")
    cross_entropy(model(task.population.x), task.population).sum().backward()
    assert model.w_q.grad is None and float(model.embedding.grad.abs().sum()) > 0


def test_one_thread_on_small_machines_and_never_more_than_the_usable_cpus():
    assert cpu.course_threads(1, 1) == 1 and cpu.course_threads(2, 2) == 1
    assert cpu.course_threads(8, 8) == 8 and cpu.course_threads(4, 16) == 4
    assert 1 <= cpu.usable_cpus() <= (os.cpu_count() or 1) and cpu.physical_cores() >= 1


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5"])
def test_a_bad_ctxlab_threads_is_refused_with_its_name(monkeypatch, value):
    monkeypatch.setenv(cpu.THREADS_VARIABLE, value)
    with pytest.raises(ValueError, match=cpu.THREADS_VARIABLE):
        cpu.chosen_threads()


SETTLE = "import torch; from ctxlab import cpu; {before}; print(cpu.settle_threads(), torch.get_num_threads())"


@pytest.mark.parametrize("env, before, expected", [
    ({}, "pass", lambda default: cpu.course_threads(cpu.usable_cpus(), default)),
    ({"CTXLAB_THREADS": "3"}, "pass", lambda default: 3),
    ({"OMP_NUM_THREADS": "3"}, "pass", lambda default: None),  # None: whatever torch itself made of it
    ({}, "torch.set_num_threads(5)", lambda default: 5),
])
def test_the_users_choice_of_threads_wins(env, before, expected):
    clean = {k: v for k, v in os.environ.items() if k not in (cpu.THREADS_VARIABLE, *cpu.USER_THREAD_VARIABLES)}
    out = subprocess.run([sys.executable, "-c", SETTLE.format(before=before)], env=clean | env, check=True,
                         capture_output=True, text=True).stdout.split()
    want = expected(cpu.physical_cores())
    if want is None:
        want = subprocess.run([sys.executable, "-c", "import torch; print(torch.get_num_threads())"], env=clean | env,
                              check=True, capture_output=True, text=True).stdout.strip()
    assert out == [str(want), str(want)]


def test_a_later_set_num_threads_is_kept():
    code = ("import torch; from ctxlab import cpu; cpu.settle_threads(); torch.set_num_threads(4); "
            "print(cpu.settle_threads(), torch.get_num_threads())")
    clean = {k: v for k, v in os.environ.items() if k not in (cpu.THREADS_VARIABLE, *cpu.USER_THREAD_VARIABLES)}
    out = subprocess.run([sys.executable, "-c", code], env=clean, check=True, capture_output=True, text=True).stdout
    assert out.split() == ["4", "4"]
