"""The plan of the positions question (``positions``): its steps (registered off the main pipeline),
the given rows it builds from a spec's keys (the positions, the frequencies, RoPE's angles, ALiBi's
slope), the steps a problem takes in order, and its exact solution.  The question, its keys and
prose are ``positions``'s; its draws ``positions_draw``'s; its ops ``positions_ops``'s.
"""

from __future__ import annotations

import re
from dataclasses import replace

import sympy

from generator.kinds import positions_ops
from generator.maths import steps
from generator.maths.engine import Evaluator, Step, run
from generator.maths.exact import parse_exact, shown
from generator.maths.steps import REGISTRY, StepDef, given_def
from generator.rendering.language import N_

NAME = "positions"
ENCODINGS = ("sinusoidal", "rope", "alibi")
BASE = 10000  # the papers' base: w_i = 10000^(-2i/d)
SHIFT = 2  # RoPE's offset part: how far both tokens move on, unless the spec says
SLOPE = sympy.Rational(1, 2)  # ALiBi's slope of head 1 of 8
OFFSET_PAIR = (1, 0)  # the offset part's query token (2) and key token (1), from 0


def _steps() -> tuple[StepDef, ...]:
    def rotated(name, of, symbol):
        return StepDef(name, positions_ops.ROPE, (of, "pos", "angles"), symbol,
                       f"{name} = {of} turned by RoPE",
                       rf"${symbol} = \operatorname{{RoPE}}({of})$: each pair of row $m$ turned by "
                       r"$m\,\theta_i$",
                       marks=2)

    def far(name, of, position, symbol):
        return StepDef(name, positions_ops.ROPE, (of, position, "angles"), symbol,
                       f"{name} = {of} turned at its new position",
                       rf"${symbol}$: ${REGISTRY[of].symbol}$ turned at position "
                       rf"${REGISTRY[position].symbol}$")

    return (
        StepDef("PE", positions_ops.SINUSOID, ("pos", "freq"), r"\mathrm{PE}",
                "PE = sin, cos of positions x frequencies",
                r"$\mathrm{PE}(p, 2i) = \sin(p\,\omega_i)$, $\mathrm{PE}(p, 2i+1) = \cos(p\,\omega_i)$",
                marks=2),
        StepDef("X_pe", "add", ("X", "PE"), r"\tilde{X}", "X~ = X + PE", r"$\tilde{X} = X + \mathrm{PE}$"),
        rotated("Q_rot", "Q", r"\tilde{Q}"), rotated("K_rot", "K", r"\tilde{K}"),
        StepDef("rope_scores", "product", ("Q_rot", "K_rot"), "S", "scores = Q~ K~^T",
                r"$S = \tilde{Q}\tilde{K}^{\top}$", marks=2, transpose=True,
                why=N_("entry (i, j) is turned query i dotted with turned key j")),
        StepDef("bias", positions_ops.ALIBI_BIAS, ("pos", "alibi_m"), "B", "B = -m |i - j|",
                r"$B_{ij} = -m\,|p_i - p_j|$"),
        StepDef("biased", "add", ("scaled", "bias"), r"\bar{S}", "S- = S~ + B",
                r"$\bar{S} = {{ 'biased' | input_of | sym }} + B$"),
        far("q_far", "q_sel", "pos_q", r"\tilde{q}"), far("k_far", "k_sel", "pos_k", r"\tilde{k}"),
        StepDef("s_far", "product", ("q_far", "k_far"), "s", "s = q~ k~^T",
                r"$s = \tilde{q}\,\tilde{k}^{\top}$",
                transpose=True),
    )


def register_steps() -> None:
    """The given rows this type builds from its keys, and its own steps, off the main pipeline."""
    for name, symbol in (("pos", "p"), ("freq", r"\omega"), ("angles", r"\theta"), ("alibi_m", "m"),
                         ("q_sel", "q"), ("k_sel", "k"), ("pos_q", "m'"), ("pos_k", "n'")):
        steps.register(given_def(name, symbol), pipeline=False)
    for step in _steps():
        steps.register(step, pipeline=False)


# -- the plan ------------------------------------------------------------------------------------

def positions_of(spec) -> tuple[int, ...]:
    """Each token's position: the spec's, else 0, 1, ..., n - 1."""
    return tuple(spec.params.get("positions") or range(spec.n_queries))


def frequencies(spec) -> tuple[sympy.Expr, ...]:
    """The sinusoid's w_i = base^(-2i/d), one a pair of columns."""
    d, base = spec.d_model, sympy.Integer(spec.params.get("base") or BASE)
    return tuple(base ** sympy.Rational(-2 * i, d) for i in range(d // 2))


def thetas(spec) -> tuple[sympy.Expr, ...]:
    """RoPE's theta_i: the spec's, else base^(-2i/d_k) (the paper's)."""
    if spec.params.get("theta"):
        return tuple(spec.params["theta"])
    d, base = spec.d_k, sympy.Integer(spec.params.get("base") or BASE)
    return tuple(base ** sympy.Rational(-2 * i, d) for i in range(d // 2))


def slope_of(spec) -> sympy.Expr:
    """ALiBi's slope for this head: the spec's, else 1/2."""
    return spec.params.get("slope") or SLOPE


def attention_tail(spec, scores: str) -> list[StepDef]:
    """scaled, [biased], [masked], weights, output after the named scores, each reading the one
    before (the scaling skipped at scale 1)."""
    chain, last = [], scores
    wanted = [("scaled", not spec.unscaled), ("biased", spec.encoding == "alibi"), ("masked", spec.masked)]
    for name, taken in wanted:
        if taken:
            step = REGISTRY[name]
            inputs = (last, "bias") if name == "biased" else (last,)
            chain.append(replace(step, inputs=inputs))
            last = name
    chain.append(replace(REGISTRY["weights"], inputs=(last,)))
    chain.append(replace(REGISTRY["output"], inputs=("weights", "V")))
    return chain


def plan_of(spec) -> tuple[StepDef, ...]:
    """The steps in order: the positional givens, the projections (or Q, K, V given), the encoding's
    own steps and attention; RoPE's offset part last."""
    encoding = spec.encoding
    given = {"sinusoidal": ("pos", "freq"), "rope": ("pos", "angles"), "alibi": ("pos", "alibi_m")}[encoding]
    plan = [REGISTRY[name] for name in given]
    if spec.from_embeddings:
        source = "X"
        plan += [REGISTRY[name] for name in ("X", "W_Q", "W_K", "W_V")]
        if encoding == "sinusoidal":
            plan += [REGISTRY["PE"], REGISTRY["X_pe"]]
            source = "X_pe"
        plan += [replace(REGISTRY[n], inputs=(source, f"W_{n}")) for n in "QKV"]
    else:
        plan += [given_def(name, name) for name in "QKV"]
    scores = "scores"
    if encoding == "rope":
        plan += [REGISTRY["Q_rot"], REGISTRY["K_rot"], REGISTRY["rope_scores"]]
        scores = "rope_scores"
    else:
        plan.append(REGISTRY["scores"])
    if encoding == "alibi":
        plan.append(REGISTRY["bias"])
    plan += attention_tail(spec, scores)
    if encoding == "rope":
        plan += [REGISTRY[n] for n in ("q_sel", "k_sel", "pos_q", "pos_k", "q_far", "k_far", "s_far")]
    return tuple(plan)


def known_steps(spec, num: Evaluator) -> dict[str, Step]:
    """The given rows the spec's keys make: the positions (a column), the frequencies, the angles
    or the slope (a row)."""
    def step(name, rows):
        return Step(name, f"{name} (given)", "given", num.matrix(rows))

    known = {"pos": step("pos", tuple((sympy.Integer(p),) for p in positions_of(spec)))}
    if spec.encoding == "sinusoidal":
        known["freq"] = step("freq", (frequencies(spec),))
    if spec.encoding == "rope":
        known["angles"] = step("angles", (thetas(spec),))
    if spec.encoding == "alibi":
        known["alibi_m"] = step("alibi_m", ((slope_of(spec),),))
    return known


def offset_steps(spec, first, num: Evaluator) -> dict[str, Step]:
    """RoPE's offset part: token 2's query and token 1's key, each moved on by the shift."""
    query, key = OFFSET_PAIR
    shift = spec.params.get("shift") or SHIFT
    positions = positions_of(spec)

    def step(name, rows):
        return Step(name, f"{name} (given)", "given", num.matrix(rows))

    return {"q_sel": step("q_sel", (first.step("Q").exact[query],)),
            "k_sel": step("k_sel", (first.step("K").exact[key],)),
            "pos_q": step("pos_q", ((sympy.Integer(positions[query] + shift),),)),
            "pos_k": step("pos_k", ((sympy.Integer(positions[key] + shift),),))}


def solve_positions(spec):
    """The spec solved exactly along its plan (RoPE's offset rows read off the first run's Q and K)."""
    num = Evaluator()
    known = known_steps(spec, num)
    plan = plan_of(spec)
    if spec.encoding != "rope":
        return run(plan, spec, known, num)
    first = run(plan[:-7], spec, known, num)
    return run(plan, spec, {**known, **offset_steps(spec, first, num)}, num)


PI_ANGLE = re.compile(r"\s*(\d+)?\s*\*?\s*pi\s*(?:/\s*(\d+))?\s*")


def read_angle(value) -> sympy.Expr:
    """An angle in radians: a number, an exact string ("1/10"), or a multiple of pi ("pi/6", "2pi/3")."""
    if isinstance(value, str) and "pi" in value:
        match = PI_ANGLE.fullmatch(value)
        if not match:
            raise ValueError(f"{shown(value)} is not an angle: a number, or a multiple of pi such as "
                             f"pi/6 or 2pi/3")
        times, over = (int(g) if g else 1 for g in match.groups())
        if not 1 <= times <= 100 or not 1 <= over <= 1000:
            raise ValueError(f"{shown(value)}: write k·pi/n with k up to 100 and n up to 1000")
        return sympy.pi * sympy.Rational(times, over)
    try:
        return parse_exact(value)
    except ValueError:
        raise ValueError(f"{shown(value)} is not an angle: a number, or a multiple of pi such as pi/6 "
                         f"or 2pi/3") from None
