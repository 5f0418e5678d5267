"""Question type "counting": parameter, operation and memory counts of a Transformer encoder layer
of a stated configuration (d_model, heads, KV heads for grouped-query and multi-query attention,
the head width, d_ff, biases on or off, layers, tokens, bytes per value), every answer a whole
number worked exactly, each product written out:

- parameters: W_Q, W_K, W_V (d_model x KV heads·d_k each with shared KV heads), W_O, their biases;
  the feed-forward layer; the two LayerNorms (γ, and β with biases); a layer; the whole model;
- operations, for one head of one layer over n tokens: QKᵀ's multiplications (n·n·d_k) and
  additions (n·n·(d_k − 1)), the scaling and softmax, AV's multiplications and additions; the
  multiplications of the whole layer's projections (XW_Q, XW_K, XW_V, CW_O); and the FLOPs of the
  head's two products (a multiply-add counted as 2 FLOPs, as FLOP counters count);
- memory: the scores of one layer (n·n·h values) and the KV cache (the kv-cache type's op
  ``cache-size``: 2 · layers · KV heads · head width · tokens · bytes);
- traps, as choices: more heads at a fixed d_model leave the attention's count as it was; fewer KV
  heads shrink W_K, W_V and the cache alike; doubling n quadruples the scores but only doubles
  the projections.

A problem gives no matrices: its configuration is its own keys (``Param``), and ``parts`` says
which of the four it asks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import lru_cache
from itertools import product

import numpy as np
import sympy

from generator.kinds import Param, QuestionType, counting_ops, kv_cache_ops, register
from generator.kinds.counting_prose import AFTER, PROMPTS, STATEMENT, WHY, trap_choices
from generator.kinds.questions import Part, Question, answer_with_slips, lettered, shuffled_item, whole_number
from generator.maths import steps
from generator.maths.engine import Evaluator, Step, run
from generator.maths.exact import shown
from generator.maths.spec import SpecError
from generator.maths.steps import REGISTRY, StepDef, given_def
from generator.rendering.language import N_, ngettext
from generator.rendering.language import gettext as _

NAME = "counting"
PARTS = ("parameters", "operations", "memory", "traps")
LEAN = ("parameters", "memory", "traps")  # what a paper short of time asks (--minutes): no operations


@dataclass(frozen=True)
class Config:
    """The layer's configuration: d_model, heads, KV heads, head width, d_ff, biases, layers,
    tokens and bytes per value."""

    d: int
    h: int
    kv: int
    dk: int
    dff: int
    bias: bool
    layers: int
    n: int
    b: int

    @classmethod
    def of(cls, spec) -> "Config":
        """The spec's configuration, the KV heads as many as the heads and d_k = d_model/h unless
        stated."""
        return cls(spec.model_dim, spec.heads, spec.kv_heads or spec.heads,
                   spec.head_dim or spec.model_dim // spec.heads, spec.ffn_dim, spec.bias, spec.layers,
                   spec.tokens, spec.bytes_per_value)


# Each count's terms (label prose, factors), from the configuration.
def attention_terms(c: Config) -> list[tuple[str, tuple[int, ...]]]:
    """W_Q (d_model x h·d_k), W_K and W_V (d_model x KV heads·d_k), W_O (h·d_k x d_model), and
    with biases, b_Q, b_K, b_V (a value per output column) and b_O (d_model)."""
    weights = [("$W_Q$", (c.d, c.h, c.dk)), ("$W_K$", (c.d, c.kv, c.dk)), ("$W_V$", (c.d, c.kv, c.dk)),
               ("$W_O$", (c.h, c.dk, c.d))]
    biases = [("$b_Q$", (c.h, c.dk)), ("$b_K$", (c.kv, c.dk)), ("$b_V$", (c.kv, c.dk)), ("$b_O$", (c.d,))]
    return weights + (biases if c.bias else [])


def ffn_terms(c: Config):
    """The feed-forward layer: W_1 (d_model x d_ff), b_1, W_2 (d_ff x d_model), b_2."""
    weights = [("$W_1$", (c.d, c.dff)), ("$W_2$", (c.dff, c.d))]
    return weights if not c.bias else [weights[0], ("$b_1$", (c.dff,)), weights[1], ("$b_2$", (c.d,))]


def norm_terms(c: Config):
    """Two LayerNorms, each γ (d_model) and, with biases, β (d_model)."""
    kinds = (r"\gamma", r"\beta") if c.bias else (r"\gamma",)
    return [(f"${v}_{i}$", (c.d,)) for i in (1, 2) for v in kinds]


TERMS = {
    "count_attention": attention_terms, "count_ffn": ffn_terms, "count_norms": norm_terms,
    "count_qk_mult": lambda c: [("$QK^{\\top}$", (c.n, c.n, c.dk))],
    "count_qk_add": lambda c: [("$QK^{\\top}$", (c.n, c.n, c.dk - 1))],
    "count_softmax": lambda c: [(N_("scalings"), (c.n, c.n)), (N_("exponentials"), (c.n, c.n)),
                                (N_("additions"), (c.n, c.n - 1)), (N_("divisions"), (c.n, c.n))],
    "count_av_mult": lambda c: [("$AV$", (c.n, c.dk, c.n))],
    "count_av_add": lambda c: [("$AV$", (c.n, c.dk, c.n - 1))],
    "count_projections": lambda c: [("$XW_Q$", (c.n, c.d, c.h, c.dk)), ("$XW_K$", (c.n, c.d, c.kv, c.dk)),
                                    ("$XW_V$", (c.n, c.d, c.kv, c.dk)), ("$CW_O$", (c.n, c.h, c.dk, c.d))],
    "count_flops": lambda c: [("$QK^{\\top}$", (2, c.n, c.n, c.dk)), ("$AV$", (2, c.n, c.dk, c.n))],
    "count_scores_bytes": lambda c: [("", (c.n, c.n, c.h, c.b))],
}
WIDTH = 4  # the most factors of a term: each given table is this wide, padded with 1s
SUMS = {"count_layer": (N_("attention"), N_("feed-forward"), N_("LayerNorms"))}


def _count(name, symbol, text, formula, marks=1, inputs=None, op=counting_ops.COUNT) -> StepDef:
    return StepDef(name, op, inputs or (f"{name}_terms",), symbol, text, formula, marks=marks, counted=True)


def _steps() -> tuple[StepDef, ...]:
    return (
        _count("count_attention", r"P_{\mathrm{attn}}", "attention parameters",
               r"${{ 'count_attention' | sym }}$, the attention sublayer's parameters", 2),
        _count("count_ffn", r"P_{\mathrm{ffn}}", "feed-forward parameters",
               r"${{ 'count_ffn' | sym }}$, the feed-forward layer's parameters"),
        _count("count_norms", r"P_{\mathrm{LN}}", "LayerNorm parameters",
               r"${{ 'count_norms' | sym }}$, the two LayerNorms' parameters"),
        _count("count_layer", r"P_{\mathrm{layer}}", "parameters of one layer",
               r"${{ 'count_layer' | sym }} = P_{\mathrm{attn}} + P_{\mathrm{ffn}} + P_{\mathrm{LN}}$",
               inputs=("count_attention", "count_ffn", "count_norms")),
        _count("count_model", r"P_{\mathrm{model}}", "parameters of every layer",
               r"${{ 'count_model' | sym }} = L \cdot P_{\mathrm{layer}}$",
               inputs=("count_layer", "count_layers"), op=counting_ops.COUNT_TIMES),
        _count("count_qk_mult", r"M_{QK}", "multiplications of QK^T",
               r"${{ 'count_qk_mult' | sym }}$, the multiplications of $QK^{\top}$"),
        _count("count_qk_add", r"A_{QK}", "additions of QK^T",
               r"${{ 'count_qk_add' | sym }}$, the additions of $QK^{\top}$"),
        _count("count_softmax", r"N_{\mathrm{softmax}}", "operations of the scaling and softmax",
               r"${{ 'count_softmax' | sym }}$, the scaling's and the softmax's operations"),
        _count("count_av_mult", r"M_{AV}", "multiplications of AV",
               r"${{ 'count_av_mult' | sym }}$, the multiplications of $AV$"),
        _count("count_av_add", r"A_{AV}", "additions of AV",
               r"${{ 'count_av_add' | sym }}$, the additions of $AV$"),
        _count("count_projections", r"M_{\mathrm{proj}}", "multiplications of the layer's projections",
               r"${{ 'count_projections' | sym }}$, the multiplications of the layer's projections"),
        _count("count_flops", r"F", "FLOPs of QK^T and AV",
               r"${{ 'count_flops' | sym }}$, the FLOPs of $QK^{\top}$ and $AV$ (a multiply-add is 2)"),
        _count("count_scores_bytes", r"B_{\mathrm{scores}}", "bytes of one layer's scores",
               r"${{ 'count_scores_bytes' | sym }}$, the bytes of one layer's scores, all heads"),
        _count("count_kv_cache", r"B_{\mathrm{KV}}", "bytes of the KV cache",
               r"${{ 'count_kv_cache' | sym }}$, the bytes of the KV cache", 2, inputs=("count_kv_model",),
               op=kv_cache_ops.CACHE_SIZE),
    )


# Each step's marks, in quarters: a part's marks about one per minute and a half of its working
# (the guide's rule, as the full type's), the attention's count and the projections' the longest
# of theirs; the page, Moodle and Canvas divide a part's marks between its steps so.
Q = Fraction(1, 4)
STEP_MARKS = {"count_attention": 4 * Q, "count_ffn": 2 * Q, "count_norms": 2 * Q, "count_layer": 2 * Q,
              "count_model": 2 * Q, "count_qk_mult": Q, "count_qk_add": Q, "count_softmax": Q,
              "count_av_mult": Q, "count_av_add": Q, "count_projections": 2 * Q, "count_flops": Q,
              "count_scores_bytes": 4 * Q, "count_kv_cache": 4 * Q}
GROUPS = {"parameters": ("count_attention", "count_ffn", "count_norms", "count_layer", "count_model"),
          "operations": ("count_qk_mult", "count_qk_add", "count_softmax", "count_av_mult", "count_av_add",
                         "count_projections", "count_flops"),
          "memory": ("count_scores_bytes", "count_kv_cache")}


def register_steps() -> None:
    """This type's steps and the tables they read (given, never shown: the statement says the
    configuration in words), off the main pipeline; each count's terms named for its working."""
    for step in _steps():
        steps.register(step, pipeline=False)
    symbols = {f"{n}_terms": r"\mathrm{terms}" for n in TERMS} | {"count_layers": "L",
                                                                   "count_kv_model": r"\mathrm{model}"}
    for name, symbol in symbols.items():
        steps.register(replace(given_def(name, symbol), counted=True), pipeline=False)
    for name, terms in TERMS.items():
        counting_ops.LABELS[name] = lambda spec, terms=terms: terms(Config.of(spec))
    for name, labels in SUMS.items():
        counting_ops.LABELS[name] = lambda spec, labels=labels: [(label, None) for label in labels]
    counting_ops.SLIPS.update(count_attention=attention_slips, count_norms=norm_slips,
                              count_qk_add=additions_slips)


def _table(terms) -> list[list[int]]:
    return [list(factors) + [1] * (WIDTH - len(factors)) for _, factors in terms]


def attention_slips(spec):
    """Biases left out; W_K and W_V counted with every head where the KV heads are fewer; every
    head's projections d_model × d_model (with more than one head)."""
    c = Config.of(spec)
    found = [(_table(attention_terms(c)[:4]), _("the biases are missing: b_Q, b_K, b_V and b_O are "
                                                "parameters too"))] if c.bias else []
    if c.kv != c.h:
        found.append((_table(attention_terms(replace(c, kv=c.h))),
                      ngettext("W_K and W_V have %(kv)s key/value head, not %(h)s",
                               "W_K and W_V have %(kv)s key/value heads, not %(h)s", c.kv)
                      % {"kv": c.kv, "h": c.h}))
    if c.h > 1:  # one head is d_model wide: d_model × d_model is then right
        found.append((_table([("", (c.h, c.d, c.d))] * 4),
                      _("each head's projection is d_model × d_k, not d_model × d_model: "
                        "the heads split d_model")))
    return found


def additions_slips(spec):
    """d_k additions to a score, where its d_k products take d_k - 1."""
    c = Config.of(spec)
    return [(_table([("", (c.n, c.n, c.dk))]),
             _("a score adds its d_k products with d_k − 1 additions, not d_k"))]


def norm_slips(spec):
    """One LayerNorm, or γ alone where biases give β too."""
    c = Config.of(spec)
    found = [(_table(norm_terms(c)[: len(norm_terms(c)) // 2]),
              _("a layer has two LayerNorms, one after each sublayer"))]
    if c.bias:
        found.append((_table([("", (c.d,)), ("", (c.d,))]), _("each LayerNorm has β besides γ")))
    return found


def counting_question(spec) -> Question:
    """The parts the spec asks, each a few counts; the traps as choices."""
    c = Config.of(spec)
    num = Evaluator()
    asked = [name for part in spec.parts if part in GROUPS for name in GROUPS[part]]
    known = {f"{n}_terms": _given(f"{n}_terms", _table(TERMS[n](c)), num) for n in asked if n in TERMS}
    known["count_layers"] = _given("count_layers", [[c.layers]], num)
    known["count_kv_model"] = _given("count_kv_model", [[c.layers, c.kv, c.dk, c.n, c.b, 1]], num)
    plan = tuple(REGISTRY[name] for name in known) + tuple(REGISTRY[name] for name in asked)
    solution = run(plan, spec, known, num)
    parts = [Part(f"count-{group}", part_marks(group), tuple(solution.step(n) for n in GROUPS[group]),
                  step_marks=tuple(STEP_MARKS[n] for n in GROUPS[group]), notes=False,
                  answer=facts(group, c, solution))
             for group in spec.parts if group in GROUPS]
    if "traps" in spec.parts:
        parts += [Part(topic, 1, item=shuffled_item(topic, reasons, spec.id))
                  for topic, reasons in traps(c).items()]
    return Question(NAME, spec, solution, (), lettered(parts))


def part_marks(group: str) -> int:
    """A part's marks: its steps' added (a whole number)."""
    marks = sum(STEP_MARKS[n] for n in GROUPS[group])
    assert marks.denominator == 1, group
    return int(marks)


def _given(name: str, rows, num) -> Step:
    entries = tuple(tuple(num(sympy.Integer(x)) for x in row) for row in rows)
    return Step(name, f"{name} (given)", "given", entries)


def answers(c: Config) -> dict[str, int]:
    """Every count the question can ask of configuration ``c``, worked apart from the engine (each
    term's factors multiplied, the terms added): what versions of a problem must not share."""
    found = {name: sum(math.prod(factors) for _, factors in terms(c)) for name, terms in TERMS.items()}
    found["count_layer"] = found["count_attention"] + found["count_ffn"] + found["count_norms"]
    found["count_model"] = c.layers * found["count_layer"]
    found["count_kv_cache"] = 2 * c.layers * c.kv * c.dk * c.n * c.b
    return found


def attention_kind(c: Config) -> str:
    """Multi-head (a key/value head per head), multi-query (one for all) or grouped-query."""
    return "multi-head" if c.kv == c.h else "multi-query" if c.kv == 1 else "grouped-query"


def shape(c: Config) -> tuple:
    """What every version of a problem keeps (``QuestionType.shared``): the biases, the attention's
    kind, the bytes per value, the traps asked, and which counts are long products (the seconds)."""
    found = answers(c)
    short = tuple(all(math.prod(f) <= counting_ops.SHORT for _, f in terms(c)) for terms in TERMS.values())
    long_model = found["count_model"] > counting_ops.SHORT
    return c.bias, attention_kind(c), c.b, tuple(traps(c)), short, long_model


def facts(group: str, c: Config, solution) -> tuple:
    """What the key's notes say of a part, read off the part's own counts."""
    def value(name: str) -> int:
        return int(solution.step(name).entries[0][0].exact)

    if group == "parameters":
        layer = value("count_layer")
        return round(100 * value("count_ffn") / layer), round(100 * value("count_attention") / layer)
    if group == "operations":
        return value("count_qk_mult"), value("count_qk_add")
    return 2 * c.n, 4 * value("count_scores_bytes"), 2 * value("count_kv_cache")


def heads_asked(c: Config) -> bool:
    """Whether the heads trap is asked: about the stated layer's d_model split into heads of
    d_model/h (so not where a stated head width makes h·d_k another width), and only where twice
    the heads split d_model too."""
    return c.h * c.dk == c.d and c.d % (2 * c.h) == 0


def traps(c: Config) -> dict[str, tuple[tuple[str, str], ...]]:
    """The choices, each (text, the slip behind it), the right one first."""
    return trap_choices(c, heads_asked(c))


# The configuration's keys: whole numbers in their ranges, biases on or off, the parts asked.
def read_bias(value, spec, where: str) -> bool:
    """Whether every linear map has a bias (and each LayerNorm a β)."""
    if not isinstance(value, bool):
        raise SpecError(f"{where}: bias must be true or false, got {shown(value)}")
    return value


def read_parts(value, spec, where: str) -> tuple[str, ...]:
    """The parts asked, in the order written: some of parameters, operations, memory, traps."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or any(p not in PARTS for p in value) \
            or len(set(value)) != len(value):
        raise SpecError(f"{where}: parts must be a list of some of {', '.join(PARTS)}, each once, "
                        f"got {shown(value)}")
    return tuple(value)


KEYS = (("model_dim", 65536, 512), ("heads", 1024, 8), ("kv_heads", 1024, None), ("head_dim", 65536, None),
        ("ffn_dim", 10**6, 2048), ("layers", 1000, 6), ("tokens", 10**6, 128), ("bytes_per_value", 8, 2))
PARAMS = (*(Param(key, whole_number(key, most), default=default) for key, most, default in KEYS),
          Param("bias", read_bias, default=True), Param("parts", read_parts, write=list, default=list(PARTS)))


def _check(spec) -> str | None:
    """No matrices; the heads split d_model where the head width is not stated; the KV heads
    share the heads out evenly."""
    if spec.matrices:
        return f"type counting gives a configuration, not matrices: {next(iter(spec.matrices))} has no place"
    if spec.head_dim is None and spec.model_dim % spec.heads:
        return (f"heads must divide model_dim (d_k = d_model/h) unless head_dim is given: "
                f"{spec.model_dim} / {spec.heads}")
    kv = spec.kv_heads or spec.heads
    if kv > spec.heads or spec.heads % kv:
        return (f"kv_heads must divide heads (each shared key/value head serves as many heads): "
                f"{kv} and {spec.heads}")
    return None


# Drawn configurations (d_model, heads, d_ff): small for easy (counted on paper), real-looking for
# hard; many of each, so that another version of a problem finds one of its shape that changes
# every count.
def _configs(widths, heads, least_dk: int) -> tuple[tuple[int, int, int], ...]:
    return tuple((d, h, m * d) for d in widths for h in heads if d % h == 0 and d // h >= least_dk
                 for m in (2, 4))


CONFIGS = {"easy": _configs((4, 6, 8), (1, 2, 3, 4), 2),
           "medium": _configs((16, 24, 32, 48, 56, 64, 80), (2, 4, 8), 4),
           "hard": ((512, 8, 2048), (768, 12, 3072), (256, 4, 1024), (1024, 16, 4096), (512, 8, 1024),
                    (384, 6, 1536), (640, 10, 2560), (256, 8, 512))}
TOKENS = {"easy": (3, 4), "medium": (8, 10, 12, 16, 20, 24, 32), "hard": (64, 96, 128, 192, 256, 512)}
LAYERS = {"easy": (2, 3), "medium": (2, 3, 4, 6), "hard": (6, 8, 12, 16, 24)}


def draw_params(rng, candidate, decimals: int, version: int | None = None, **first) -> dict | None:
    """A configuration of the candidate's difficulty (its matrices are not asked); shared
    key/value heads now and then (never at easy), biases on or off; only one whose shape another
    version can keep.  A problem's versions drawn in the first version's form (``first``: its
    configuration, ``SHARED``): the first keeps it, each other one of the configurations of its
    shape (``shape``) that share the fewest counts with it (none at medium and hard; small layers
    share one now and then), each version its own."""
    difficulty = candidate.difficulty or "medium"
    if first:
        was = _config(first)
        if version == 1:
            return _params(was)
        others = siblings(was, difficulty)
        return _params(others[((version or 2) - 2) % len(others)]) if others else None
    params = _drawn(rng, difficulty)
    return params if siblings(_config(params), difficulty) else None


SHARED = ("model_dim", "heads", "kv_heads", "ffn_dim", "bias", "layers", "tokens", "bytes_per_value",
          "version")  # the first version's configuration, and which version this is


def _config(params) -> Config:
    """A drawn configuration (d_k = d_model/h)."""
    d, h = params["model_dim"], params["heads"]
    return Config(d, h, params["kv_heads"] or h, d // h, params["ffn_dim"], params["bias"], params["layers"],
                  params["tokens"], params["bytes_per_value"])


def _params(c: Config) -> dict:
    return {"model_dim": c.d, "heads": c.h, "kv_heads": c.kv, "ffn_dim": c.dff, "bias": c.bias,
            "layers": c.layers, "tokens": c.n, "bytes_per_value": c.b, "parts": PARTS}


def _kv_choices(h: int, difficulty: str) -> list[int]:
    """A key/value head per head, or one for all, or one per pair (never at easy)."""
    return [h] if difficulty == "easy" else [g for g in (h, h, 1, h // 2) if g and h % g == 0]


def _drawn(rng, difficulty: str) -> dict:
    """A configuration of the difficulty."""
    def pick(options):
        return options[int(rng.integers(len(options)))]

    d, h, dff = pick(CONFIGS[difficulty])
    kv = pick(_kv_choices(h, difficulty))
    return {"model_dim": d, "heads": h, "kv_heads": kv, "ffn_dim": dff, "bias": bool(rng.integers(2)),
            "layers": pick(LAYERS[difficulty]), "tokens": pick(TOKENS[difficulty]),
            "bytes_per_value": pick((2, 4) if difficulty != "hard" else (2, 2, 4)), "parts": PARTS}


@lru_cache(maxsize=None)
def _by_shape(difficulty: str) -> dict[tuple, tuple[Config, ...]]:
    """Every configuration the difficulty draws, by its shape."""
    found: dict[tuple, list[Config]] = {}
    for (d, h, dff), layers, n in product(CONFIGS[difficulty], LAYERS[difficulty], TOKENS[difficulty]):
        for kv, bias, b in product(sorted(set(_kv_choices(h, difficulty))), (False, True), (2, 4)):
            c = Config(d, h, kv, d // h, dff, bias, layers, n, b)
            found.setdefault(shape(c), []).append(c)
    return {key: tuple(configs) for key, configs in found.items()}


@lru_cache(maxsize=4096)
def siblings(c: Config, difficulty: str) -> tuple[Config, ...]:
    """The configurations of ``c``'s shape that share the fewest counts with it, and at most half,
    in an order of their own (drawn from ``c``'s numbers: not the smallest first)."""
    taken = set(answers(c).values())
    common = {o: len(taken & set(answers(o).values())) for o in _by_shape(difficulty).get(shape(c), ())}
    fewest = min(common.values(), default=len(taken))
    found = [o for o, k in common.items() if k == fewest] if 2 * fewest <= len(taken) else []
    order = np.random.default_rng([c.d, c.h, c.kv, c.dff, c.layers, c.n, c.b, c.bias]).permutation(len(found))
    return tuple(found[i] for i in order)


register(QuestionType(
    NAME, counting_question, "Counting parameters, operations and bytes", STATEMENT, prompts=PROMPTS,
    keys={task: answer_with_slips(why) for task, why in WHY.items()}, after=AFTER,
    choice="{{ choice }}", params=PARAMS, check=_check, matrices_given=False, draw_params=draw_params,
    not_drawable=lambda options: ("counts of a real-sized layer multiply numbers into the millions, a "
                                  "calculator's work: ask --difficulty easy" if options.no_calculator
                                  and options.difficulty != "easy" else None),
    in_default_mix=False, shrinks=("focus",), shared=SHARED,
    focus=lambda rng, candidate, params, decimals: {"parts": LEAN}))


counting_ops.register()
register_steps()
