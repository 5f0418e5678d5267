"""Question type "kv-cache": decoding with a KV cache.  A decoder has kept the keys and values of
t earlier tokens (K_cache, V_cache); the new token's q = xW_Q, k = xW_K and v = xW_V are
computed, k and v appended to the cache, and the new token's row of attention worked from q
alone: s = qKᵀ, scaled, a = softmax, o = aV.  Then the lesson: o is the last row of full
causal attention over all t + 1 tokens (no earlier token sees the new one, so their rows stay
as they were, and only K and V are ever needed again, not Q); and the cache's size for a
stated model, 2 × layers × KV heads × head width × tokens × bytes per value.

A spec file gives the new token's embedding as ``X`` (one row), the weights, and the cache as
``K_cache`` and ``V_cache`` or as the earlier tokens' embeddings ``X_past`` (then the key shows
the full pass's last row beside o); the size part's model as its own keys (``layers``,
``kv_heads``, ``head_dim``, ``context``, ``bytes_per_value``, ``unit``).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import sympy

from generator.kinds import GIVEN, Param, QuestionType, kv_cache_ops, register
from generator.kinds.questions import (
    TIE,
    Part,
    Question,
    answer_with_slips,
    lettered,
    shuffled_item,
    whole_number,
)
from generator.maths import steps
from generator.maths.crosscheck import attention_steps
from generator.maths.engine import Evaluator, Step, given_step, run, solve
from generator.maths.exact import shown
from generator.maths.spec import MAX_TOKENS, ProblemSpec, SpecError
from generator.maths.steps import REGISTRY, StepDef, given_def
from generator.rendering.language import N_

NAME = "kv-cache"
CACHE = ("K_cache", "V_cache")
# Bytes in one unit of the size asked: bytes, the binary units and the decimal ones.
UNITS = {"bytes": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "KB": 10**3, "MB": 10**6, "GB": 10**9}
# Real-looking models (layers, KV heads, head width, context in tokens, bytes per value):
# grouped-query 8B and 70B, multi-head 7B and 13B, a long-context 7B, small fp32 ones, an fp8 one.
MODELS = ((32, 8, 128, 4096, 2), (32, 32, 128, 4096, 2), (80, 8, 128, 8192, 2), (40, 40, 128, 4096, 2),
          (28, 4, 128, 32768, 2), (16, 8, 64, 2048, 2), (24, 16, 64, 2048, 4), (32, 8, 128, 8192, 1),
          (12, 12, 64, 1024, 4))
DEFAULT_MODEL = MODELS[0]


def _steps() -> tuple[StepDef, ...]:
    def projection(name, weight, symbol):
        return StepDef(name, "product", ("x_new", weight), symbol, f"{symbol} = x {weight}",
                       f"${symbol} = x{weight}$")

    def appended(name, cache, new, symbol):
        return StepDef(name, kv_cache_ops.APPEND, (cache, new), symbol,
                       f"{symbol} = [{cache}; {symbol.lower()}]",
                       rf"${symbol} = [{REGISTRY[cache].symbol};\, {symbol.lower()}]$, the cache with the "
                       "new token's row appended")

    return (
        given_def("x_new", "x"), given_def("kv_model", r"\mathrm{model}"),
        projection("q_new", "W_Q", "q"), projection("k_new", "W_K", "k"),
        projection("v_new", "W_V", "v"),
        appended("K_all", "K_cache", "k_new", "K"), appended("V_all", "V_cache", "v_new", "V"),
        StepDef("s_new", "product", ("q_new", "K_all"), "s", "s = q K^T", r"$s = qK^{\top}$",
                transpose=True, mixed_up="K_cache",
                why=N_("entry j is the new query dotted with key j, the new token's own key last")),
        StepDef("s_scaled", "scaling", ("s_new",), r"\tilde{s}", "s~ = s / sqrt(d_k)",
                r"{% if spec.scale is none %}$\tilde{s} = s / \sqrt{d_k}${% else %}$\tilde{s} = "
                r"{{ spec.scale | tex }}\, s${% endif %}", when="scaled",
                factor_text="s~ = scale * s"),
        StepDef("a_new", "softmax", ("s_scaled",), "a", "a = softmax(s~)",
                r"$a = \operatorname{softmax}({{ 'a_new' | input_of | sym }})$", marks=2),
        StepDef("o_new", "blend", ("a_new", "V_all"), "o", "o = a V", "$o = aV$", marks=2,
                why=N_("o blends the rows of V with the new token's weights"), mixed_up="V_cache"),
        StepDef("cache_size", kv_cache_ops.CACHE_SIZE, ("kv_model",), r"\mathrm{size}",
                "size = 2 x layers x kv_heads x head_dim x tokens x bytes / unit",
                r"$\mathrm{size}$ of the KV cache, in {% if spec.unit == 'bytes' %}bytes{% else %}"
                r"{{ spec.unit }}{% endif %}", marks=2),
    )


def register_steps() -> None:
    """The cache's given matrices (keys of a spec file, which this type alone takes: ``may_take``;
    its ``check`` says which it needs) and this type's own steps, off the main pipeline."""
    for name, symbol in (("K_cache", r"K_{\text{cache}}"), ("V_cache", r"V_{\text{cache}}"),
                         ("X_past", r"X_{\text{past}}")):
        steps.register(replace(given_def(name, symbol), text=f"{name} (given)"), pipeline=False)
    for step in _steps():
        steps.register(step, pipeline=False)


PARTS = (("kv-qkv", ("q_new", "k_new", "v_new")), ("kv-append", ("K_all", "V_all")),
         ("kv-scores", ("s_new", "s_scaled")), ("kv-weights", ("a_new",)), ("kv-output", ("o_new",)))


def kv_question(spec) -> Question:
    """The new token's q, k and v; K and V with them appended; its row of scores, weights and
    output; the lesson (a choice); the cache's size for the stated model."""
    num = Evaluator()
    known = {"x_new": Step("x_new", "x (given)", "given", num.matrix(spec.matrices["X"])),
             **cache_steps(spec, num), "kv_model": model_step(spec, num)}
    solution = run(kv_plan(spec), spec, known, num)
    present = set(solution.step_names)
    # the notes of a full question read a one-row step as token 1's: these parts say their own
    parts = [Part(task, sum(REGISTRY[n].marks for n in names if n in present),
                  tuple(solution.step(n) for n in names if n in present),
                  step_marks=tuple(REGISTRY[n].marks for n in names if n in present), notes=False)
             for task, names in PARTS]
    weights = solution.step("a_new").entries[0]
    top = max(range(len(weights)), key=lambda j: weights[j].value)
    parts[3] = replace(parts[3], answer=(top, weights[top]))
    extra = {"full": full_pass(spec)} if "X_past" in spec.matrices else {}
    if extra:  # the key shows the full pass's last row beside o
        parts[-1] = replace(parts[-1], answer=extra["full"].step("output").entries[-1])
    parts += [Part("kv-lesson", 1, item=shuffled_item("lesson", LESSON, spec.id)),
              Part("kv-size", 2, (solution.step("cache_size"),), step_marks=(2,))]
    given = tuple(solution.step(n) for n in ("x_new", "W_Q", "W_K", "W_V", *CACHE))
    return Question(NAME, spec, solution, given, lettered(parts), extra=extra)


def kv_plan(spec) -> tuple[StepDef, ...]:
    """The steps in order; without scaling (scale 1) the softmax reads s itself."""
    names = ("x_new", "W_Q", "W_K", "W_V", *CACHE, "kv_model", "q_new", "k_new", "v_new", "K_all",
             "V_all", "s_new", "s_scaled", "a_new", "o_new", "cache_size")
    plan = [REGISTRY[name] for name in names if not (spec.unscaled and name == "s_scaled")]
    return tuple(replace(step, inputs=("s_new",)) if spec.unscaled and step.name == "a_new" else step
                 for step in plan)


def cache_steps(spec, num) -> dict[str, Step]:
    """K_cache and V_cache as the spec gives them, or from X_past: X_past W_K and X_past W_V."""
    if "X_past" not in spec.matrices:
        return {}
    past = spec.matrices["X_past"]
    return {name: given_step(name, _product(past, spec.matrices[weight]), num)
            for name, weight in zip(CACHE, ("W_K", "W_V"))}


def _product(left, right):
    return tuple(tuple(sympy.Add(*(a * b for a, b in zip(row, column))) for column in zip(*right))
                 for row in left)


def model_step(spec, num) -> Step:
    """The size part's model as one given row: layers, KV heads, head width, tokens, bytes per
    value, and the bytes in one unit of the answer."""
    row = (spec.layers, spec.kv_heads, spec.head_dim, spec.context, spec.bytes_per_value,
           UNITS[spec.unit])
    return Step("kv_model", "model (given)", "given", (tuple(num(sympy.Integer(n)) for n in row),))


def full_pass(spec):
    """Full causal attention over all t + 1 tokens, X = [X_past; x]: its last row is o."""
    everything = {"X": spec.matrices["X_past"] + spec.matrices["X"],
                  **{name: spec.matrices[name] for name in ("W_Q", "W_K", "W_V")}}
    return solve(ProblemSpec(f"{spec.id}-full", everything, mask="causal", scale=spec.scale))


# The lesson: why o is the full pass's last row, and why the cache holds K and V, not Q.
LESSON = (
    (N_("It is the last row of $O$; the earlier rows of $O$ are as they were before the new token "
     "came, since under the causal mask no earlier token attends to a later one. So only $K$ and "
     "$V$ are kept: each new row needs every key and value, but only its own query."), ""),
    (N_("It differs from the last row of $O$: a new token changes every row's softmax, so the whole "
     "of $O$ must be worked again."),
     N_("under the causal mask no earlier query sees the new key, so the earlier rows do not change")),
    (N_("It is the last row of $O$ only because $Q$ is cached too: the new row needs the earlier "
     "tokens' queries."), N_("the new row needs only the new token's own query $q$; an earlier query "
     "is never used again, which is why $Q$ is not cached")),
    (N_("It is the mean of the rows of $O$."),
     N_("$o$ is one row of $O$, the new token's own, not an average")),
)


# The size part's keys: each a whole number (bytes per value 1 to 8), and the unit asked.
def read_unit(value, spec, where: str) -> str:
    """The unit the size is asked in."""
    if not isinstance(value, str) or value not in UNITS:
        raise SpecError(f"{where}: unit must be one of {', '.join(UNITS)}, got {shown(value)}")
    return value


MODEL_KEYS = ("layers", "kv_heads", "head_dim", "context", "bytes_per_value")
PARAMS = (*(Param(key, whole_number(key, most), default=default) for key, most, default in zip(
    MODEL_KEYS, (1000, 1024, 4096, 10**7, 8), DEFAULT_MODEL)), Param("unit", read_unit, default="MiB"))


def _check(spec) -> str | None:
    """The new token one row; the cache as K_cache and V_cache or as X_past, of the widths the
    weights give, for 1 to MAX_TOKENS - 1 earlier tokens."""
    if not spec.from_embeddings:
        return "type kv-cache starts from the new token's embedding X (one row) and W_Q, W_K, W_V"
    if spec.mask not in ("none", "causal"):  # decoding is causal: the key works it so
        return f"type kv-cache takes the causal mask it implies (or none written), not {spec.mask}"
    x = spec.matrices["X"]
    if len(x) != 1:
        return f"X is the new token's embedding x, one row (1 × {len(x[0])}); it has {len(x)} rows"
    given = [name for name in (*CACHE, "X_past") if name in spec.matrices]
    if given not in (list(CACHE), ["X_past"]):
        return ("give the cache as K_cache and V_cache, or the earlier tokens' embeddings as "
                f"X_past, not {' and '.join(given) or 'neither'}")
    widths = {"K_cache": (spec.d_k, "d_k", "W_K"), "V_cache": (spec.d_v, "d_v", "W_V"),
              "X_past": (spec.d_model, "d_model", "X")}
    for name in given:
        width, what, source = widths[name]
        rows = spec.matrices[name]
        if len(rows[0]) != width:
            return (f"{name} must be t × {width} ({what} = {width}, the columns of {source}); "
                    f"its row 1 has {len(rows[0])} entries")
        if len(rows) > MAX_TOKENS - 1:
            return f"{name} has {len(rows)} rows (earlier tokens); at most {MAX_TOKENS - 1}"
    if given == list(CACHE) and len(spec.matrices["V_cache"]) != len(spec.matrices["K_cache"]):
        rows = len(spec.matrices["K_cache"]), len(spec.matrices["V_cache"])
        return (f"V_cache must be {rows[0]} × {spec.d_v}, a row per cached token as K_cache has; "
                f"it has {rows[1]} rows")
    return None


# Drawn: t + 1 real tokens under a causal mask (worthy as a whole), the last one the new token.
SIZES = {"easy": dict(tokens=(3, 3), d_model=3, d_k=2, d_v=2, embeddings="one-hot", weights="integer"),
         "medium": dict(tokens=(4, 4), d_model=3, d_k=4, d_v=2, embeddings="integer", weights="integer"),
         "hard": dict(tokens=(4, 4), d_model=2, d_k=2, d_v=2, embeddings="decimal", weights="integer")}


def draw_options(options):
    """The difficulty's sizes, where the teacher's options keep the preset's (a form's one token
    too: the drawn spec's X is the new token alone), under a causal mask."""
    from generator.kinds.sampling import PRESETS  # the sampler reads this registry: not at import

    preset = PRESETS[options.difficulty]
    sizes = {key: value for key, value in SIZES[options.difficulty].items()
             if getattr(options, key) == getattr(preset, key) or (key == "tokens" and options.tokens[1] < 2)}
    return replace(options, mask="causal", **sizes)


def draw_params(rng, candidate, decimals: int) -> dict | None:
    """The candidate's last token the new one, the others the cache's (X_past), and a model."""
    def exact(matrix):
        return tuple(tuple(sympy.Rational(int(round(v * 100)), 100) for v in row) for row in matrix)

    if len(candidate.x) < 2:  # --tokens 1-3, say: a cached token and the new one at least
        return None
    full = attention_steps(candidate.given, "causal", candidate.scale)
    weights = sorted(full["weights"][-1])
    if weights[-1] - weights[-2] < TIE or not slips_show(candidate, full, decimals):
        return None  # "its largest weight goes to token j": one j
    layers, kv_heads, head_dim, context, width = MODELS[int(rng.integers(len(MODELS)))]
    size = 2 * layers * kv_heads * head_dim * context * width
    units = [u for u in ("MiB", "GiB") if (size * 100) % UNITS[u] == 0 and size >= UNITS[u] // 4]
    return {"matrices": {"X": exact(candidate.x[-1:]), "X_past": exact(candidate.x[:-1])},
            **dict(zip(MODEL_KEYS, (layers, kv_heads, head_dim, context, width))),
            "unit": units[int(rng.integers(len(units)))]}


def slips_show(candidate, full: dict, decimals: int) -> bool:
    """Whether each typical slip (the new key not appended, a cached key taken for the query, the
    previous token's row) gives an o well apart from the key: beyond what rounding every step
    to the printed decimals can move it."""
    def row(query, keys, values):
        scaled = query @ keys.T * (1 / np.sqrt(keys.shape[1]) if candidate.scale is None else candidate.scale)
        weights = np.exp(scaled - scaled.max())
        return weights / weights.sum() @ values

    keys, values, right = full["K"], full["V"], full["output"][-1]
    slipped = (row(full["Q"][-1], keys[:-1], values[:-1]), row(keys[-2], keys, values), full["output"][-2])
    apart = 15 * 10.0**-decimals * max(1.0, np.abs(values).max())  # rounding moves o with V's size
    return all(np.abs(other - right).max() > apart for other in slipped)


STATEMENT = (
    r"{% set t = question.given[-1].shape[0] %}A decoder writes a text one token at a time. It has "
    r"read {{ t }} tokens and kept their keys and values, the rows of $K_{\text{cache}}$ "
    r"(${{ t }} \times d_k$) and $V_{\text{cache}}$ (${{ t }} \times d_v$): its KV cache. Token "
    r"{{ t + 1 }} arrives with the embedding $x$ ($d_{\text{model}} = {{ spec.d_model }}$), projected "
    r"by $W_Q$, $W_K$ and $W_V$; here $d_k = {{ spec.d_k }}$ and $d_v = {{ spec.d_v }}$, and a causal "
    r"mask applies (each token attends to itself and the tokens before it).",
    GIVEN,
    r"Work out the new token's attention output from the cache, "
    r"{% if spec.unscaled %}$o = \operatorname{softmax}(qK^{\top})\,V$ (the scores are not scaled)"
    r"{% elif spec.scale is none %}$o = \operatorname{softmax}(qK^{\top}/\sqrt{d_k})\,V$"
    r"{% else %}$o = \operatorname{softmax}({{ spec.scale | tex }}\, qK^{\top})\,V${% endif %}, "
    r"showing every intermediate result.")
PROMPTS = {
    "kv-qkv": "Compute the new token's query $q = xW_Q$, key $k = xW_K$ and value $v = xW_V$.",
    "kv-append": r"Append the new token's key and value to the cache, as its last rows: "
                 r"$K = [K_{\text{cache}};\, k]$ and $V = [V_{\text{cache}};\, v]$.",
    "kv-scores": r"Compute the new token's scores against every key, its own included, $s = qK^{\top}$"
                 r"{% if not spec.unscaled %}, and scale them: {% if spec.scale is none %}$\tilde{s} = "
                 r"s/\sqrt{d_k}${% else %}$\tilde{s} = {{ spec.scale | tex }}\, s${% endif %}{% endif %}.",
    "kv-weights": "Apply softmax to get the new token's attention weights $a$; show the exponentials, "
                  "their sum and the quotients.",
    "kv-output": "Compute the new token's output $o = aV$.",
    "kv-lesson": r"Full causal attention over all {{ question.given[-1].shape[0] + 1 }} tokens (their "
                 r"$Q$, $K$ and $V$ from scratch) gives the output $O$, one row a token. What is true "
                 r"of $o$, and so of what a decoder keeps?",
    "kv-size": r"A model has {{ spec.layers }} layers, each with {{ spec.kv_heads }} key/value "
               r"{% if spec.kv_heads == 1 %}head{% else %}heads{% endif %} of width {{ spec.head_dim }}, "
               r"and stores {{ spec.bytes_per_value }} {% if spec.bytes_per_value == 1 %}byte{% else %}bytes"
               r"{% endif %} per value"
               r"{% if spec.bytes_per_value == 2 %} (fp16){% elif spec.bytes_per_value == 1 %} (fp8)"
               r"{% elif spec.bytes_per_value == 4 %} (fp32){% endif %}. How large is its KV cache "
               r"for a context of {{ spec.context }} tokens, in {% if spec.unit == 'bytes' %}bytes"
               r"{% else %}{{ spec.unit }} (1 {{ spec.unit }} = ${{ {'KiB': '2^{10}', 'MiB': "
               r"'2^{20}', 'GiB': '2^{30}', 'KB': '10^{3}', 'MB': '10^{6}', 'GB': '10^{9}'}[spec.unit] }}$ "
               r"bytes){% endif %}?",
}
AFTER = {
    "kv-qkv": ("The new token is one row, so $q$, $k$ and $v$ are one row each: a decoder projects only "
               "the new token, never the earlier ones again."),
    "kv-append": ("Only $k$ and $v$ join the cache: every later token's row reads every key and value, "
                  "its own query alone, so $q$ is used once, now, and never kept."),
    "kv-weights": (
        r"{% set new = question.given[-1].shape[0] + 1 %}The new token, token {{ new }}, gives its "
        r"largest weight, ${{ part.answer[1] | num }}$, to token {{ part.answer[0] + 1 }}"
        r"{% if part.answer[0] + 1 == new %} (itself){% endif %}; its weights add up to 1 over all "
        r"{{ new }} tokens, its own included."),
    "kv-output": (
        r"{% set t = question.given[-1].shape[0] %}"
        r"{% if part.answer %}Check: full causal attention over all {{ t + 1 }} tokens, $X = "
        r"[X_{\text{past}};\, x]$ (the earlier tokens' embeddings, whose keys and values the cache "
        r"holds, are the rows {% for row in spec.matrices['X_past'] %}$({% for x in row %}{{ x | tex }}"
        r"{{ ', ' if not loop.last }}{% endfor %})${% if not loop.last %}, {% endif %}{% endfor %}), "
        r"gives the last row of $O$ as "
        r"$({% for n in part.answer %}{{ n | num }}{{ ', ' if not loop.last }}"
        r"{% endfor %})$, which is $o$.{% else %}This $o$ is the last row of full causal attention "
        r"over all {{ t + 1 }} tokens as long as the cache holds $X_{\text{past}} W_K$ and "
        r"$X_{\text{past}} W_V$, the earlier tokens' embeddings $X_{\text{past}}$ under these same "
        r"weights: the last row reads only the new query and every key and value.{% endif %}"),
    "kv-size": (r"The factor 2 is for $K$ and $V$: every layer keeps both, for each KV head and "
                r"each token."),
}


register(QuestionType(
    NAME, kv_question, "Decoding with a KV cache", STATEMENT, prompts=PROMPTS,
    keys={"kv-lesson": answer_with_slips()}, after=AFTER, choice="{{ choice }}",
    params=PARAMS, check=_check, may_take=(*CACHE, "X_past"), draw_options=draw_options,
    draw_params=draw_params,
    not_drawable=lambda options: ("the cache's size multiplies numbers into the hundreds of millions, "
                                  "a calculator's work" if options.no_calculator else None),
    in_default_mix=False, shrinks=("d_v", "d_k")))


kv_cache_ops.register()
register_steps()
