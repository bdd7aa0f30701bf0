"""The website's live explorers: Vega-Lite charts (through Altair) over data precomputed with ctxlab.

A page has no kernel, so every view an explorer offers is computed here, once, and shipped inside
the page; Vega's own sliders and menus filter it in the browser. The staircase sweep is the
explorer's quick-profile sweep (a minute of training), kept in ``site/data/`` beside the settings
that made it and retrained when those settings change; signatures are exact counts, computed at
every build.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import altair as alt

DATA = Path(__file__).resolve().parent / "data"
# at most this many frames of the training run: enough to scrub, small enough to ship (~1 MB)
FRAMES = 51
SIGNATURE_FORM = "incremental"  # the form lesson 01 reads; the other forms would triple the page


def _round(x: float) -> float:
    return round(float(x), 4)


def staircase_data(refresh: bool = False) -> dict:
    """Loss, order shares and embedding PCA of the staircase explorer's quick sweep, as records."""
    from ctxlab.align import pca_2d
    from ctxlab.widgets.staircase_sweep import staircase_sweep, sweep_settings

    settings = sweep_settings("gd", profile="quick")
    key = json.loads(json.dumps(asdict(settings)))
    path = DATA / "staircase.json"
    if path.is_file() and not refresh:
        saved = json.loads(path.read_text())
        if saved["settings"] == key:
            return saved
        print(f"site: {path} was made with other settings; training the sweep again")
    sweep = staircase_sweep(settings)
    T = len(sweep.steps)
    stride = max(1, -(-(T - 1) // (FRAMES - 1)))
    frames = list(range(0, T, stride))
    loss, shares, points = [], [], []
    for g, gamma in enumerate(sweep.gammas):
        for s, seed in enumerate(sweep.seeds):
            E = sweep.embeddings[g, s]
            radius = float((E - E.mean(1, keepdim=True)).norm(dim=-1).max()) or 1.0
            for t in frames:
                step = int(sweep.steps[t])
                loss.append({"gamma": gamma, "seed": seed, "step": step, "loss": _round(sweep.loss[g, s, t])})
                for o in sweep.orders:
                    shares.append({"gamma": gamma, "seed": seed, "step": step, "order": o,
                                   "share": _round(sweep.alignment[g, s, o - 1, t])})
                coords = pca_2d(E[t]).numpy() / radius
                for v, (name, role) in enumerate(zip(sweep.token_names, sweep.roles)):
                    points.append({"gamma": gamma, "seed": seed, "step": step, "token": name, "role": role,
                                   "pc1": _round(coords[v, 0]), "pc2": _round(coords[v, 1])})
    data = {"settings": key, "gammas": list(sweep.gammas), "seeds": list(sweep.seeds), "orders": sweep.orders,
            "steps": [int(sweep.steps[t]) for t in frames], "levels": [_round(x) for x in sweep.levels],
            "chance": [_round(x) for x in sweep.chance], "loss": loss, "shares": shares, "points": points}
    DATA.mkdir(exist_ok=True)
    path.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    return data


def staircase_chart(data: dict) -> alt.VConcatChart:
    """γ, seed, context order and training step as Vega controls over the precomputed sweep."""
    from ctxlab.plots import ORDER_COLORS

    steps = data["steps"]
    gamma = alt.param(name="gamma", value=1.0 if 1.0 in data["gammas"] else data["gammas"][0],
                      bind=alt.binding_radio(options=data["gammas"], name="γ (init scale) "))
    seed = alt.param(name="seed", value=data["seeds"][0], bind=alt.binding_radio(options=data["seeds"], name="seed "))
    order = alt.param(name="order", value=0, bind=alt.binding_select(
        options=[0, *data["orders"]], labels=["all", *map(str, data["orders"])], name="context order "))
    step = alt.param(name="step", value=steps[len(steps) // 4], bind=alt.binding_range(
        min=steps[0], max=steps[-1], step=steps[1] - steps[0], name="training step "))
    run = (alt.datum.gamma == gamma) & (alt.datum.seed == seed)
    width, height = 300, 200
    x = alt.X("step:Q", title="step", scale=alt.Scale(domain=[steps[0], steps[-1]]))
    marker = alt.Chart(alt.Data(values=[{}])).mark_rule(color="crimson").encode(x=alt.X("s:Q")).transform_calculate(
        s=step.name)
    levels = alt.Chart(alt.Data(values=[{"level": x} for x in data["levels"]])).mark_rule(
        color="grey", strokeDash=[4, 3]).encode(y="level:Q")
    loss = alt.layer(
        alt.Chart(alt.Data(name="loss")).mark_line(color="black").encode(
            x=x, y=alt.Y("loss:Q", title="loss (nats)", scale=alt.Scale(zero=False))).transform_filter(run),
        levels, marker).properties(width=width, height=height, title="loss (dashed: entropy ladder)")
    colors = alt.Scale(domain=data["orders"], range=list(ORDER_COLORS[:len(data["orders"])]))
    shares = alt.layer(
        alt.Chart(alt.Data(name="shares")).mark_line().encode(
            x=x, y=alt.Y("share:Q", title="share of ‖E − E₀‖²", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("order:N", scale=colors, title="order")).transform_filter(run).transform_filter(
            (order == 0) | (alt.datum.order == order)),
        marker).properties(width=width, height=height, title="order-k directions")
    pca = alt.Chart(alt.Data(name="points")).mark_circle(size=45).encode(
        x=alt.X("pc1:Q", title="PC 1", scale=alt.Scale(domain=[-1.1, 1.1])),
        y=alt.Y("pc2:Q", title="PC 2", scale=alt.Scale(domain=[-1.1, 1.1])),
        color=alt.Color("role:N", title="token role"), tooltip=["token:N", "role:N"],
    ).transform_filter(run & (alt.datum.step == step)).properties(
        width=height, height=height, title="embedding PCA at the chosen step")
    return (alt.vconcat(alt.hconcat(loss, shares), pca).add_params(gamma, seed, order, step)
            .resolve_scale(color="independent").configure_view(stroke=None))


def signature_data() -> dict:
    """Lesson 01 explorer's task: every order's label signature (one form), cosine matrix and ladder."""
    from ctxlab.plots import cosine_similarity
    from ctxlab.tasks import make_task
    from ctxlab.widgets.signatures import SignatureSettings, signature_view

    base = SignatureSettings()
    task = make_task(base.task, **dict(base.task_args))
    rows, cosines, ladder = [], [], None
    for order in range(1, task.seq_len + 1):
        view = signature_view(SignatureSettings(base.task, base.task_args, order, "label", SIGNATURE_FORM))
        matrix = view.signature.matrix
        for v, name in enumerate(task.token_names):
            rows += [{"order": order, "token": name, "column": c, "value": _round(x)}
                     for c, x in enumerate(matrix[v].tolist()) if x != 0.0]
        cos = cosine_similarity(matrix).tolist()
        cosines += [{"order": order, "a": a, "b": b, "cos": _round(cos[i][j])}
                    for i, a in enumerate(task.token_names) for j, b in enumerate(task.token_names)]
        ladder = [{"order": s.order, "entropy": _round(s.entropy)} for s in view.ladder]
    return {"tokens": list(task.token_names), "orders": list(range(1, task.seq_len + 1)), "rows": rows,
            "cosines": cosines, "ladder": ladder, "task": dict(base.task_args), "form": SIGNATURE_FORM}


def signature_chart(data: dict) -> alt.VConcatChart:
    """Order and token as Vega controls: the token's signature row, the cosine matrix, the ladder."""
    order = alt.param(name="order", value=1, bind=alt.binding_radio(options=data["orders"], name="order k "))
    token = alt.param(name="token", value=data["tokens"][0],
                      bind=alt.binding_select(options=data["tokens"], name="token "))
    row = alt.Chart(alt.Data(name="rows")).mark_bar(width={"band": 1}).encode(
        x=alt.X("column:Q", title="column"), y=alt.Y("value:Q", title="signature value"),
        color=alt.value("#1b9e77"),
    ).transform_filter((alt.datum.order == order) & (alt.datum.token == token)).properties(
        width=300, height=200, title="the token's signature row (zero columns left out)")
    names = alt.Sort(data["tokens"])
    cos = alt.Chart(alt.Data(name="cosines")).mark_rect().encode(
        x=alt.X("b:N", sort=names, title=None), y=alt.Y("a:N", sort=names, title=None),
        color=alt.Color("cos:Q", scale=alt.Scale(scheme="redblue", domain=[-1, 1], reverse=True), title="cosine"),
        stroke=alt.condition(alt.datum.a == token, alt.value("black"), alt.value(None)),
        tooltip=["a:N", "b:N", "cos:Q"],
    ).transform_filter(alt.datum.order == order).properties(width=220, height=220, title="cosine similarity of rows")
    ladder = alt.layer(
        alt.Chart(alt.Data(name="ladder")).mark_line(interpolate="step-after", color="black").encode(
            x=alt.X("order:Q", title="order k"), y=alt.Y("entropy:Q", title="H(Y | best k tokens)")),
        alt.Chart(alt.Data(name="ladder")).mark_point(filled=True, size=70).encode(
            x="order:Q", y="entropy:Q",
            color=alt.condition(alt.datum.order == order, alt.value("crimson"), alt.value("grey"))),
    ).properties(width=200, height=200, title="entropy ladder (red: the chosen order)")
    return (alt.vconcat(alt.hconcat(row, cos), ladder).add_params(order, token)
            .resolve_scale(color="independent").configure_view(stroke=None))


PAGE = """# {title}

{intro}

```{{raw}} html
<div class="ctxlab-live" id="{name}"></div>
<script type="module">
vegaEmbed("#{name}", {spec}, {{"actions": false, "renderer": "svg"}}).catch(console.error);
</script>
```
"""


def write_pages(folder: Path, refresh: bool = False) -> list[str]:
    """Write the explorer pages (MyST) into ``folder``; returns their names."""
    folder.mkdir(parents=True, exist_ok=True)
    stairs, signatures = staircase_data(refresh), signature_data()
    pages = {
        "staircase": ("The staircase explorer, live",
                      "Lessons 00 and 03 train this explorer's sweep in a kernel. Here it runs in your browser from "
                      "the precomputed quick-profile sweep: choose γ, a seed and a context order, and drag the "
                      "training step. The loss drops in stairs; each order's share of the embedding's movement "
                      "rises in turn, faster at small γ.", staircase_chart(stairs),
                      {key: stairs[key] for key in ("loss", "shares", "points")}),
        "signatures": ("The signature explorer, live",
                       f"Lesson 01's signature explorer for its small hierarchy task ({SIGNATURE_FORM} label "
                       "signatures), computed exactly when the site was built: choose an order and a token.",
                       signature_chart(signatures), {key: signatures[key] for key in ("rows", "cosines", "ladder")}),
    }
    for name, (title, intro, chart, tables) in pages.items():
        # The charts name their tables and the tables join the spec here, as Vega-Lite's top-level
        # datasets: inline, altair deep-copied them at every layer (6 s). Not validated against the
        # schema either (jsonschema took 8 s); the browser test draws the staircase page from this spec.
        spec = chart.to_dict(validate=False)
        spec["datasets"] = {**spec.get("datasets", {}), **tables}
        text = json.dumps(spec, separators=(",", ":")).replace("</", "<\\/")
        (folder / f"{name}.md").write_text(PAGE.format(title=title, intro=intro, name=f"live-{name}", spec=text))
    return list(pages)
