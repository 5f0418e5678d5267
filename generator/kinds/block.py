"""Question type "block": tokens through one Transformer encoder block.  Self-attention (one head:
Q, K, V, the scores, scaled, softmax, the output O, and P = O W_O where W_O is given; a single
token attends to itself alone, its one weight 1, so O = V), the residual connection, LayerNorm per
token (mean, biased variance, σ, (x − μ)/σ, then γ and β; ε = 0, said in the statement), a ReLU
feed-forward layer (Z = N W_1 + b_1, H = ReLU(Z), F = H W_2 + b_2), the second residual, and the
arrangement ``norm``: post-LN (the original Transformer's, each sublayer's sum normalised,
LN(x + Sublayer(x))) or pre-LN (each sublayer reading its input normalised, x + Sublayer(LN(x))).
Then the permutation argument carried through the block (a choice).

A spec file gives X, W_Q, W_K, W_V (d_v = d_model, or W_O taking d_v back to d_model), gamma and
beta (1 × d_model, both LayerNorms'), W_1, b_1, W_2, b_2, and ``norm = "post"`` or ``"pre"``.
The steps equal PyTorch's ``nn.TransformerEncoderLayer`` (nhead 1, ReLU, no dropout, norm_first
for pre-LN, layer_norm_eps 0) with these weights (tests/test_block.py).
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import replace

import numpy as np
import sympy

from generator.kinds import GIVEN, Param, QuestionType, block_ops, register
from generator.kinds.questions import Part, Question, answer_with_slips, lettered, shuffled_item
from generator.kinds.sampling import PRESETS
from generator.maths import steps
from generator.maths.engine import run
from generator.maths.exact import shown
from generator.maths.spec import SpecError
from generator.maths.steps import REGISTRY, StepDef, given_def
from generator.rendering.language import N_

NAME = "block"
NORMS = ("post", "pre")
OWN_GIVEN = (("gamma", r"\gamma"), ("beta", r"\beta"), ("W_1", "W_1"), ("b_1", "b_1"),
             ("W_2", "W_2"), ("b_2", "b_2"))
MAX_FF = 8  # the feed-forward layer's width, d_ff: an exam's, not a model's
MAX_BLOCK_TOKENS = 4
EXACT_BOUNDS = ("product", "blend", "add")  # ops whose tolerance face is a true bound
# The sublayer's output as a formula writes it: P = O W_O, else O (V itself for one token).
SUBLAYER = (r"{% if 'W_O' in spec.matrices %}P{% elif spec.n_keys == 1 %}V{% else %}O{% endif %}")


def _own_steps() -> tuple[StepDef, ...]:
    """The block's steps (post-LN's wiring; ``block_plan`` rewires them for pre-LN)."""
    norm = block_ops.LAYER_NORM
    return (
        StepDef("attn_out", "product", ("output", "W_O"), "P", "attn_out = output W_O",
                r"$P = {{ 'attn_out' | input_of | sym }}\, W_O$", asks_shape=False),
        StepDef("res1", "add", ("X", "output"), "R_1", "res1 = X + sublayer",
                r"$R_1 = X + " + SUBLAYER + "$, the residual connection", marks=1),
        StepDef("ln1", norm, ("res1", "gamma", "beta"), "N_1", "ln1 = LayerNorm({0})",
                r"$N_1 = \operatorname{LN}({{ 'ln1' | input_of | sym }})$", marks=2),
        StepDef("ln2", norm, ("res1", "gamma", "beta"), "N_2", "ln2 = LayerNorm({0})",
                r"$N_2 = \operatorname{LN}({{ 'ln2' | input_of | sym }})$", marks=2),
        StepDef("ffn_in", block_ops.LINEAR, ("ln1", "W_1", "b_1"), "Z", "ffn_in = {0} W_1 + b_1",
                r"$Z = {{ 'ffn_in' | input_of | sym }}\, W_1 + b_1$", marks=1),
        StepDef("ffn_hidden", block_ops.RELU, ("ffn_in",), "H", "ffn_hidden = ReLU(ffn_in)",
                r"$H = \operatorname{ReLU}(Z) = \max(0, Z)$", marks=1),
        StepDef("ffn_out", block_ops.LINEAR, ("ffn_hidden", "W_2", "b_2"), "F",
                "ffn_out = ffn_hidden W_2 + b_2",
                r"$F = H W_2 + b_2$", marks=1),
        StepDef("res2", "add", ("ln1", "ffn_out"), "R_2", "res2 = ln1 + ffn_out", r"$R_2 = N_1 + F$",
                marks=1),
        StepDef("block", norm, ("res2", "gamma", "beta"), "Y", "block = LayerNorm(res2)",
                r"{% if spec.params.norm == 'pre' %}$Y = R_1 + F$, the block's output"
                r"{% else %}$Y = \operatorname{LN}(R_2)$, the block's output{% endif %}", marks=2),
    )


def register_steps() -> None:
    """The block's given matrices (keys of a spec file this type alone takes) and its steps, off the
    main pipeline."""
    for name, symbol in OWN_GIVEN:
        steps.register(replace(given_def(name, symbol), text=f"{name} (given)"), pipeline=False)
    for step in _own_steps():
        steps.register(step, pipeline=False)


def attention_plan(spec, source: str) -> list[StepDef]:
    """Self-attention on ``source`` (X, or N_1 before it under pre-LN): one token's is its value
    row (its one weight is 1), more tokens' every step; then W_O where given."""
    def reading(name, *inputs):
        return replace(REGISTRY[name], inputs=inputs)

    if spec.n_keys == 1:
        plan, last = [reading("V", source, "W_V")], "V"
    else:
        scaled = not spec.unscaled
        plan = [reading("Q", source, "W_Q"), reading("K", source, "W_K"), reading("V", source, "W_V"),
                REGISTRY["scores"], *([REGISTRY["scaled"]] if scaled else []),
                reading("weights", "scaled" if scaled else "scores"), REGISTRY["output"]]
        last = "output"
    if "W_O" in spec.matrices:
        plan.append(reading("attn_out", last, "W_O"))
        last = "attn_out"
    return plan


def block_plan(spec) -> tuple[StepDef, ...]:
    """Every step in order, post-LN or pre-LN as the spec's ``norm`` says."""
    givens = ("X", "W_Q", "W_K", "W_V", *(["W_O"] if "W_O" in spec.matrices else []),
              *(name for name, _ in OWN_GIVEN))
    plan = [REGISTRY[name] for name in givens]
    own = {step.name: step for step in _own_steps()}
    pre = spec.params.get("norm", "post") == "pre"
    attention = attention_plan(spec, "ln1" if pre else "X")
    sublayer = attention[-1].name
    residual = replace(own["res1"], inputs=("X", sublayer))
    if pre:
        plan += [replace(own["ln1"], inputs=("X", "gamma", "beta")), *attention, residual, own["ln2"],
                 replace(own["ffn_in"], inputs=("ln2", "W_1", "b_1")), own["ffn_hidden"], own["ffn_out"],
                 replace(own["block"], op="add", inputs=("res1", "ffn_out"), text="block = res1 + ffn_out",
                         marks=1)]
    else:
        plan += [*attention, residual, own["ln1"], own["ffn_in"], own["ffn_hidden"], own["ffn_out"],
                 own["res2"], own["block"]]
    # the products' and sums' bounds are exact: their margin, compounded through the block's ten
    # steps, would let a late slip pass (issue 35)
    return tuple(replace(step, sharp=True) if step.op in EXACT_BOUNDS else step for step in plan)


def parts_of(spec) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Each part's task and its steps, in the order of the plan."""
    attention = tuple(step.name for step in attention_plan(spec, "X"))
    ffn_out = ("ffn_in", "ffn_hidden", "ffn_out")
    if spec.params.get("norm", "post") == "pre":
        return (("block-norm-in", ("ln1",)), ("block-attention", attention), ("block-residual", ("res1",)),
                ("block-norm", ("ln2",)), ("block-ffn", ffn_out), ("block-out", ("block",)))
    return (("block-attention", attention), ("block-residual", ("res1",)), ("block-norm", ("ln1",)),
            ("block-ffn", ffn_out), ("block-out", ("res2", "block")))


def block_question(spec) -> Question:
    """The block, part by part, then the permutation argument (a choice)."""
    plan = block_plan(spec)
    solution = run(plan, spec)
    marks = {step.name: step.marks for step in plan}
    parts = [Part(task, sum(marks[n] for n in names), tuple(solution.step(n) for n in names),
                  step_marks=tuple(marks[n] for n in names), notes=False)
             for task, names in parts_of(spec)]
    parts.append(Part("block-permute", 1, item=shuffled_item("permute", PERMUTATION, spec.id)))
    given = tuple(solution.step(step.name) for step in plan if step.is_given)
    return Question(NAME, spec, solution, given, lettered(parts))


# The permutation argument carried through the block: with no positional information each step
# treats every token alike, so permuting the tokens permutes the outputs' rows.
PERMUTATION = (
    (N_("The rows of $Y$ are permuted the same way and keep their values: attention is "
     "permutation-equivariant without positional information, and the residuals, LayerNorm and the "
     "feed-forward layer each work on every token's row alone."), ""),
    (N_("$Y$ does not change at all: the block mixes the tokens, so each row of $Y$ is the same "
     "whatever the order."), N_("the rows move with their tokens: row $i$ of $Y$ belongs to the token "
     "in position $i$, so swapping two tokens swaps two rows of $Y$")),
    (N_("The values of $Y$ change: the attention weights depend on where each token stands."),
     N_("nothing in the block knows a position (there is no positional encoding), so every token's "
     "output is the same wherever it stands")),
    (N_("Only the attention output's rows move; LayerNorm then mixes the rows, so $Y$ changes."),
     N_("LayerNorm normalises each row on its own (its mean and variance are the row's), as the "
     "feed-forward layer works each row alone")),
)


def read_norm(value, spec, where: str) -> str:
    """Post-LN or pre-LN."""
    if value not in NORMS:
        raise SpecError(f'{where}: norm must be "post" (LN(x + Sublayer(x))) or "pre" '
                        f'(x + Sublayer(LN(x))), got {shown(value)}')
    return value


def _check(spec) -> str | None:
    """X and the weights, no mask, the residual's widths, and the feed-forward layer's shapes."""
    if not spec.from_embeddings or spec.cross:
        return "type block starts from one sequence's embeddings X and W_Q, W_K, W_V"
    if spec.mask != "none":
        return f"type block is an encoder block with no mask; leave out the mask ({spec.mask})"
    if spec.n_keys > MAX_BLOCK_TOKENS:
        return f"X has {spec.n_keys} rows (tokens); type block takes at most {MAX_BLOCK_TOKENS}"
    m, d = spec.matrices, spec.d_model
    out = len(m["W_O"][0]) if "W_O" in m else spec.d_v
    if "W_O" in m and len(m["W_O"]) != spec.d_v:
        return f"W_O must be {spec.d_v} × {d} (d_v = {spec.d_v} rows); it has {len(m['W_O'])} rows"
    if out != d:
        what = "W_O" if "W_O" in m else "W_V"
        return (f"{what} must have {d} columns (d_model = {d}): the residual adds the attention output "
                f"to X; it has {out}")
    equal = next((i for i, row in enumerate(m["X"]) if len(set(row)) == 1), None)
    if spec.params.get("norm") == "pre" and equal is not None:  # said here, where the file is named
        return (f"X row {equal + 1} has every entry equal: the first LayerNorm, N_1 = LN(X), divides by "
                f"its σ = 0 (ε = 0)")
    d_ff = len(m["W_1"][0])
    shapes = {"gamma": (1, d), "beta": (1, d), "W_1": (d, d_ff), "b_1": (1, d_ff), "W_2": (d_ff, d),
              "b_2": (1, d)}
    for name, (rows, columns) in shapes.items():
        if (len(m[name]), len(m[name][0])) != (rows, columns):
            return (f"{name} must be {rows} × {columns} (d_model = {d}, d_ff = {d_ff}); it is "
                    f"{len(m[name])} × {len(m[name][0])}")
    if d_ff > MAX_FF:
        return f"W_1 has {d_ff} columns (d_ff); at most {MAX_FF}"
    return None


STATEMENT = (
    r"{% set n = spec.n_keys %}{% set pre = spec.params.norm == 'pre' %}"
    r"{{ n }} {% if n == 1 %}token{% else %}tokens{% endif %} (the {% if n == 1 %}row{% else %}rows"
    r"{% endif %} of $X$, $d_{\text{model}} = {{ spec.d_model }}$) {% if n == 1 %}passes{% else %}pass"
    r"{% endif %} through one Transformer encoder block with a single "
    r"attention head and no positional encoding, arranged "
    r"{% if pre %}pre-LN: each sublayer reads its input normalised and adds its output back, "
    r"$R_1 = X + \operatorname{Attn}(\operatorname{LN}(X))$ and $Y = R_1 + "
    r"\operatorname{FFN}(\operatorname{LN}(R_1))$"
    r"{% else %}post-LN, as in the original Transformer: each sublayer's output is added to its input "
    r"and the sum normalised, $N_1 = \operatorname{LN}(X + \operatorname{Attn}(X))$ and $Y = "
    r"\operatorname{LN}(N_1 + \operatorname{FFN}(N_1))${% endif %}. "
    r"Attention is $\operatorname{softmax}(QK^{\top}/\sqrt{d_k})\,V$"
    r"{% if 'W_O' in spec.matrices %}, then projected by $W_O${% endif %}"
    r"{% if n == 1 %} (with one token its one weight is 1, so its output is its value row, whatever "
    r"$W_Q$ and $W_K$){% endif %}; "
    r"$\operatorname{FFN}(N) = \operatorname{ReLU}(N W_1 + b_1)\, W_2 + b_2$. "
    r"$\operatorname{LN}$ normalises each row on its own: $\mu$ its mean, $\sigma^2$ the mean of its "
    r"squared deviations (divided by $d_{\text{model}}$), $\hat{x} = (x - \mu)/\sigma$ (here "
    r"$\varepsilon{} = 0$), then $\gamma \odot \hat{x} + \beta$; both LayerNorms share the given "
    r"scale $\gamma$ (gamma) and shift $\beta$ (beta).",
    GIVEN,
    r"Work the block through, showing every intermediate result.")
PROMPTS = {
    "block-norm-in": r"Normalise the input: $N_1 = \operatorname{LN}(X)$, row by row; show each row's "
                     r"$\mu$, $\sigma^2$ and $\sigma$.",
    "block-attention": (
        r"{% set src = 'N_1' if spec.params.norm == 'pre' else 'X' %}"
        r"{% if spec.n_keys == 1 %}Compute the attention sublayer's output: the value row $V = {{ src }}"
        r"W_V${% else %}Compute the attention sublayer: $Q = {{ src }}W_Q$, $K = {{ src }}W_K$, "
        r"$V = {{ src }}W_V$, the scores $S = QK^{\top}${% if not spec.unscaled %}, scaled{% endif %}, "
        r"the weights $A$ (softmax) and the output $O = AV${% endif %}"
        r"{% if 'W_O' in spec.matrices %}, then $P = {{ 'V' if spec.n_keys == 1 else 'O' }}\, W_O$"
        r"{% endif %}."),
    "block-residual": r"Add the residual connection: $R_1 = X + " + SUBLAYER + "$.",
    "block-norm": (r"{% set me = 'N_2' if spec.params.norm == 'pre' else 'N_1' %}"
                   r"Apply LayerNorm: ${{ me }} = \operatorname{LN}(R_1)$, row by row; show each row's "
                   r"$\mu$, $\sigma^2$ and $\sigma$."),
    "block-ffn": (r"{% set n = 'N_2' if spec.params.norm == 'pre' else 'N_1' %}"
                  r"Compute the feed-forward layer: $Z = {{ n }} W_1 + b_1$, $H = \operatorname{ReLU}(Z)$ "
                  r"and $F = H W_2 + b_2$."),
    "block-out": (r"{% if spec.params.norm == 'pre' %}Add the second residual connection: the block's "
                  r"output $Y = R_1 + F$.{% else %}Add the second residual connection, $R_2 = N_1 + F$, "
                  r"and normalise: the block's output $Y = \operatorname{LN}(R_2)$.{% endif %}"),
    "block-permute": r"Suppose a sequence of tokens is put through this block in another order (its rows "
                     r"of $X$ permuted). What happens to $Y$?",
}
AFTER = {
    "block-norm-in": (r"Before $\gamma$ and $\beta$ every row of $\hat{x}$ has mean 0 and variance 1: "
                      r"LayerNorm rescales each token's row on its own, whatever the other tokens hold."),
    "block-norm": (r"Before $\gamma$ and $\beta$ every row of $\hat{x}$ has mean 0 and variance 1: "
                   r"LayerNorm rescales each token's row on its own, whatever the other tokens hold."),
    "block-ffn": (r"{% set ns = namespace(below=0, all=0) %}{% for row in part.steps[0].entries %}"
                  r"{% for z in row %}{% set ns.all = ns.all + 1 %}{% if z.value < 0 %}"
                  r"{% set ns.below = ns.below + 1 %}{% endif %}{% endfor %}{% endfor %}"
                  r"ReLU set {{ ns.below }} of the {{ ns.all }} entries of $Z$ to 0, those below 0, and "
                  r"kept the rest; $F = HW_2 + b_2$ takes no ReLU"
                  r"{% set f = namespace(below=false) %}{% for row in part.steps[-1].entries %}"
                  r"{% for x in row %}{% if x.value < 0 %}{% set f.below = true %}{% endif %}{% endfor %}"
                  r"{% endfor %}{% if f.below %}: a negative entry of $F$ stays negative{% endif %}."),
    "block-out": (r"{% if spec.params.norm == 'pre' %}Under pre-LN the output is not normalised: the "
                  r"residual path $X \to R_1 \to Y$ adds the sublayers' outputs and is never rescaled, "
                  r"which is why deep pre-LN stacks train more stably (and end with a final LayerNorm)."
                  r"{% else %}Under post-LN every token leaves the block normalised: each row of $Y$ is "
                  r"$\gamma \odot \hat{x} + \beta$ for an $\hat{x}$ of mean 0 and variance 1.{% endif %}"),
}


# Drawn: one token, d_model = 4, numbers whose every σ is rational (readable roots), entries
# halves and quarters at most; easy post-LN with γ = 1, β = 0; medium post- or pre-LN with γ and β;
# hard with W_O as well, and a wider feed-forward layer.
SIZES = {"easy": dict(d_ff=2, affine=False, w_o=False), "medium": dict(d_ff=2, affine=True, w_o=False),
         "hard": dict(d_ff=3, affine=True, w_o=True)}
D_MODEL = 4
LAST_SIGMA = 2.0  # post-LN: the least σ of R_2, the last LayerNorm's input (worthiness)


LEVELS = ("easy", "medium", "hard")


def draw_options(options):
    """A cheap candidate (the block draws its own numbers, ``draw_params``), no mask; the
    candidate's width says the difficulty to ``draw_params`` (2, 3, 4: easy, medium, hard), which
    is handed the candidate alone."""
    return replace(options, tokens=(2, 2), d_model=2 + LEVELS.index(options.difficulty), d_k=4, d_v=2,
                   mask="none", embeddings="integer", weights="integer")


def _exact(matrix) -> tuple:
    return tuple(tuple(sympy.nsimplify(x) if not isinstance(x, sympy.Basic) else x for x in row)
                 for row in matrix)


def readable_root(row) -> bool:
    """Whether a row's variance is nonzero and a rational square whose root has a numerator of 2s
    and 5s and a small denominator (σ, and so every (x − μ)/σ, is a short decimal: 2, 1/2, 5/4)."""
    values = [sympy.nsimplify(x) for x in row]
    mean = sum(values) / len(values)
    variance = sum((x - mean) ** 2 for x in values) / len(values)
    root = sympy.sqrt(variance)
    return variance != 0 and root.is_Rational and root.q <= 4 and root.p in (1, 2, 4, 5, 8, 10)


def _layer_norm(row, gamma, beta):
    values = [sympy.nsimplify(x) for x in row]
    mean = sum(values) / len(values)
    sigma = sympy.sqrt(sum((x - mean) ** 2 for x in values) / len(values))
    return [g * (x - mean) / sigma + b for x, g, b in zip(values, gamma, beta)]


def _small(rng, size, p=(0.25, 0.35, 0.4)):
    return rng.choice([-1, 0, 1], p=p, size=size).astype(int)


@functools.cache
def nice_rows() -> tuple[tuple[int, ...], ...]:
    """Every row of d_model whole numbers from -3 to 4 that LayerNorm turns into short decimals,
    worked out on the first draw.  Most hold two values (their x̂ is ±1, whatever they are); the
    others are (-3, 0, 1, 4) shifted and reordered, σ = 5/2 and x̂ = ±1.4 and ±0.2 (with d_model = 4
    no other row of small whole numbers has a rational σ: hence d_model 4, not 3)."""
    return tuple(row for row in itertools.product(range(-3, 5), repeat=D_MODEL) if readable_root(row))


def _varied(row) -> bool:
    return len(set(row)) > 2


def _sigma(row) -> float:
    return float(np.std(np.asarray(row, dtype=float)))


def _nice(rng, least_sigma: float = 0.0) -> list[int]:
    """A nice row, one of the varied ones (more than two values) half the time, its σ at least
    ``least_sigma``."""
    rows = [row for row in nice_rows()
            if _varied(row) == bool(rng.integers(2)) and _sigma(row) >= least_sigma]
    return list(rows[int(rng.integers(len(rows)))])


def _short(values) -> bool:
    """Whether every value is a decimal of at most two places, and small."""
    return all((sympy.nsimplify(v) * 100).is_Integer and abs(v) <= 20 for v in values)


def _steered(rng, source, w_v, w_o, residual_of):
    """The sublayer's last weight matrix with one row changed, so that the residual is one of ``nice_rows``:
    the row k where the vector it multiplies is ±1 moves entry j of the sublayer by its change."""
    last = (w_o if w_o is not None else w_v).copy()
    before = sympy.Matrix([source]) * (sympy.Matrix(w_v) if w_o is not None else sympy.eye(D_MODEL))
    pivots = [k for k, v in enumerate(before) if v in (1, -1)]
    if not pivots:
        return None
    k = pivots[int(rng.integers(len(pivots)))]
    residual = residual_of(last)
    target = min(nice_rows(), key=lambda row: (sum(abs(t - r) for t, r in zip(row, residual))
                                               - 2 * _varied(row), rng.random()))
    last[k] = [int(w + (t - r) * before[k]) for w, t, r in zip(last[k], target, residual)]
    return last if all(abs(w) <= 2 for w in last[k]) else None


def draw_params(rng, candidate, decimals: int, norm: str | None = None) -> dict | None:
    """One token's numbers, drawn until both LayerNorms have readable roots and ReLU bites; medium
    and hard post-LN or pre-LN alike, every version of a problem as its first (``norm`` given)."""
    difficulty = LEVELS[candidate.x.shape[1] - 2]
    sizes = SIZES[difficulty]
    if norm is None:
        norm = "post" if difficulty == "easy" else NORMS[int(rng.integers(2))]
    for _ in range(400):
        drawn = _draw_once(rng, sizes, norm)
        if drawn is not None:
            return {"norm": norm, "matrices": {name: _exact(m) for name, m in drawn.items()}}
    return None


def _residual_shows(residual, skipped, normed, gamma, beta) -> bool:
    """Whether LayerNorm of the sublayer's output alone (the residual ``skipped`` forgotten) is well
    apart from the key's: it is not where that output is the residual scaled (X + V = 2X)."""
    sublayer = [r - x for r, x in zip(residual, skipped)]
    if len(set(sublayer)) == 1:
        return True  # no LayerNorm of it at all
    alone = _layer_norm(sublayer, gamma, beta)
    return max(abs(a - b) for a, b in zip(alone, normed)) > sympy.Rational(1, 4)


def _draw_once(rng, sizes, norm) -> dict | None:
    d, d_ff = D_MODEL, sizes["d_ff"]
    x = _nice(rng) if norm == "pre" else [int(v) for v in rng.integers(-2, 4, size=d)]
    gamma = [1] * d if not sizes["affine"] else [int(v) for v in rng.choice([1, 1, 2, -1], size=d)]
    beta = [0] * d if not sizes["affine"] else [int(v) for v in rng.choice([0, 0, 1, -1], size=d)]
    w_v, w_o = _small(rng, (d, d)), (_small(rng, (d, d)) if sizes["w_o"] else None)
    source = _layer_norm(x, gamma, beta) if norm == "pre" else x

    def residual_of(last):
        inner = sympy.Matrix([source]) * (sympy.Matrix(w_v) if w_o is not None else sympy.eye(d))
        return [a + b for a, b in zip(x, inner * sympy.Matrix(last))]

    last = _steered(rng, source, w_v, w_o, residual_of)
    if last is None:
        return None
    w_v, w_o = (w_v, last) if w_o is not None else (last, None)
    if any(v == 0 for v in sympy.Matrix([source]) * sympy.Matrix(w_v)):
        return None  # a 0 in V's one row is a column of the working that is 0
    residual = residual_of(last)
    if not readable_root(residual):
        return None
    normed = _layer_norm(residual, gamma, beta)
    if not _residual_shows(residual, x, normed, gamma, beta):
        return None
    w_1, b_1 = _small(rng, (d, d_ff)), _small(rng, (1, d_ff))
    z = sympy.Matrix([normed]) * sympy.Matrix(w_1) + sympy.Matrix(b_1)
    if not (any(v < 0 for v in z) and any(v > 0 for v in z)):
        return None  # ReLU must bite and leave something
    w_2 = _small(rng, (d_ff, d), p=(0.3, 0.2, 0.5))
    f_no_bias = sympy.Matrix([[max(v, 0) for v in z]]) * sympy.Matrix(w_2)
    if norm == "post":  # b_2 chosen so that R_2 = N_1 + F is one of ``nice_rows``
        # σ of R_2 at least 2: the last LayerNorm over n − 1 (x̂ off by 13%) then lands past what
        # rounding reaches, which grows as 1/σ
        target = _nice(rng, LAST_SIGMA)
        b_2 = [t - a - f for t, a, f in zip(target, normed, f_no_bias)]
        last_norm = _layer_norm(target, gamma, beta)
        if any(abs(b) > 3 for b in b_2) or not _residual_shows(target, normed, last_norm, gamma, beta):
            return None
    else:
        b_2 = [int(v) for v in _small(rng, d)]
    if not _short([*source, *normed, *z, *f_no_bias, *b_2]):
        return None
    matrices = {"X": [x], "W_Q": _small(rng, (d, 2)), "W_K": _small(rng, (d, 2)), "W_V": w_v,
                "gamma": [gamma], "beta": [beta], "W_1": w_1, "b_1": b_1, "W_2": w_2, "b_2": [b_2]}
    if w_o is not None:
        matrices["W_O"] = w_o
    return {name: [[sympy.nsimplify(v) for v in row] for row in np.asarray(m, dtype=object).tolist()]
            for name, m in matrices.items()}


def _not_drawable(options) -> str | None:
    """--tokens asks for what the draw cannot give (one token, its numbers steered so that every
    root is readable): said, not ignored."""
    if options.tokens != PRESETS[options.difficulty].tokens:
        low, high = options.tokens
        asked = f"{low}" if low == high else f"{low}-{high}"
        return (f"a drawn block has one token (--tokens {asked} cannot apply); a spec file may give "
                f"up to {MAX_BLOCK_TOKENS}")
    return None


CHOICE = "{{ choice }}"

register(QuestionType(
    NAME, block_question, "One Transformer block, step by step",
    STATEMENT, prompts=PROMPTS, keys={"block-permute": answer_with_slips()}, after=AFTER, choice=CHOICE,
    params=(Param("norm", read_norm, default="post"),), check=_check,
    matrices=tuple(name for name, _ in OWN_GIVEN), may_take=("W_O",), draw_options=draw_options,
    draw_params=draw_params, not_drawable=_not_drawable, shared=("norm",), in_default_mix=False,
    shrinks=()))

block_ops.register()
register_steps()
