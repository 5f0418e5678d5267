"""The step registry: every step of attention described once, in exam order.

A ``StepDef`` says what a step is: its name, how it is computed (``op``) from which
earlier steps (``inputs``), its symbol, its formula and its prompt (prose, see
``prose``), its default marks.  ``plan`` turns the registry into the steps one
problem takes, in order, with each input named as it is actually computed: a step a
problem skips (the scaling, at scale 1; the mask, with no mask) hands its own input on.

Everything that walks the pipeline reads a plan: the engine (exact arithmetic), the
numpy cross-check (its own float arithmetic), the practice page's script (the
student's own values), the JSON and the templates.  Each finds a step's op in the op
registry (``ops``), which carries all of an op's faces; a new step of a registered op
is one ``register`` call, and a new op one ``ops.register_op`` call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache

from generator.maths import masks, ops
from generator.rendering.language import N_


@dataclass(frozen=True)
class StepDef:
    """How one step is computed: its name, its op, the steps it takes, and how it is printed, worded
    and marked."""

    name: str
    op: str  # the registered op that computes it (ops.OPS)
    inputs: tuple[str, ...] = ()
    symbol: str = ""  # in TeX: S, \tilde{S}; a head's steps add its number (S_1)
    text: str = ""  # the formula in plain words ("{0}" is the first input as computed)
    formula: str = ""  # prose: the step's formula as an answer key heads it
    prompt: str = ""  # prose: what a part asking for this step alone says
    marks: int = 1
    when: str = ""  # "" always; "scaled": unless the scale is 1; "masked": under any mask
                    # ("causal", as it was named when causal was the only mask, means the same)
    transpose: bool = False  # product: times the transpose of the second input (Q K^T)
    transpose_left: bool = False  # product: the transpose of the first input times the second
    optional: bool = False  # for want of an input, hand the first input on (X + P without P)
    factor: str = "scale"  # scaling: "scale" (the problem's, else 1/sqrt(d_k)), "one", "one-over-dk"
    by_columns: bool = False  # softmax: down each column (a mistake), not along each row
    rows_sum_to_one: bool = True  # blend: the weights' rows sum to 1 (exact forms may simplify)
    asks_shape: bool = False  # a part asking this step asks its shape too (its prompt says so)
    factor_text: str = ""  # scaling: the formula in plain words when a factor other than
                           # 1/sqrt(d_k) scales it (the spec's scale, a mistake's 1 or 1/d_k)
    why: str = ""  # a product: why it is the way round it is, said where a student turns it
    mixed_up: str = ""  # a product: the input a student most often takes instead of the second
    # A given matrix that, where a problem gives it, the steps ``feeds`` read in place of
    # ``stands_for`` (cross-attention: X_dec is X for Q, X_enc is X for K and V).
    stands_for: str = ""
    feeds: tuple[str, ...] = ()
    # A product: the input a student most often takes instead of the first (the plan sets it
    # where two given matrices stand for one: X_enc in place of Q's X_dec).
    mixed_up_first: str = ""
    # Its entries are whole numbers counted exactly (a parameter count, bytes): never rounded,
    # so marked with no tolerance at all (the answer is the whole number or it is wrong).
    counted: bool = False
    # Marked by its op's bound as it is, with no margin (as an ops.Op.sharp op's): a product's or
    # a sum's bound is exact, and a long chain (the block's) would otherwise compound the margin.
    sharp: bool = False

    @property
    def is_given(self) -> bool:
        """Whether the step is a given matrix, computed from nothing."""
        return self.op == "given"

    def worded(self) -> str:
        """The step's formula in plain words, its inputs named ("scores = Q K^T")."""
        return self.text.format(*self.inputs) if self.text else f"{self.name} ({self.op})"


def given_def(name: str, symbol: str = "") -> StepDef:
    """The StepDef of a given matrix ``name``, printed as ``symbol``."""
    return StepDef(name, "given", symbol=symbol, text=f"{name} (given)", formula=f"${symbol}$")


def _projection(name: str) -> StepDef:
    """Q, K or V: the embeddings (X, or where a problem routes it, X_dec or X_enc) times its
    weights; a symbol of more than one letter is set off from W by a thin space."""
    source = "{% set x = '" + name + "' | input_of %}{{ x | sym }}{{ '' if x == 'X' else ' ' }}"
    return StepDef(name, "product", ("X", f"W_{name}"), name, f"{name} = {{0}} W_{name}",
                   f"${name} = {source}W_{name}$", asks_shape=True)


REGISTRY: dict[str, StepDef] = {}
PIPELINE: list[str] = []  # the names of the main pipeline, in exam order


def register(step: StepDef, before: str | None = None, takes_place_of: str | None = None,
             pipeline: bool = True) -> None:
    """Describe a step (or describe it anew).  ``before`` puts a new step into the
    pipeline ahead of that one; ``takes_place_of`` makes every later step that read that
    name read this step instead (a positional encoding added to X, say).  Its op must be
    registered (``ops.register_op``)."""
    if step.op not in ops.registered():
        raise ValueError(f"step {step.name}: op must be a registered one: {', '.join(ops.OPS)}")
    _enter(step, before, takes_place_of, pipeline)


def _enter(step: StepDef, before: str | None = None, takes_place_of: str | None = None,
           pipeline: bool = True) -> None:
    if takes_place_of:  # it stands in for that input only where it can be computed
        step = replace(step, optional=True)
    REGISTRY[step.name] = step
    plan.cache_clear()
    if not pipeline or step.name in PIPELINE:
        return
    position = PIPELINE.index(before) if before else len(PIPELINE)
    PIPELINE.insert(position, step.name)
    if takes_place_of:
        for name in PIPELINE[position + 1:]:
            later = REGISTRY[name]
            REGISTRY[name] = replace(later, inputs=tuple(step.name if i == takes_place_of else i
                                                         for i in later.inputs))


def unregister(name: str, restores: str | None = None) -> None:
    """Take a step out again (a test's toy step); later steps read ``restores`` again."""
    REGISTRY.pop(name, None)
    plan.cache_clear()
    if name in PIPELINE:
        PIPELINE.remove(name)
    if restores:
        for other, step in REGISTRY.items():
            REGISTRY[other] = replace(step, inputs=tuple(restores if i == name else i
                                                         for i in step.inputs))


# Each common mistake: the step it changes and how (a student's worked solution carries
# it, and every later step follows from the wrong value).
MISTAKEN = {
    "no-scaling": {"scaled": dict(factor="one")},
    "dk-not-sqrt": {"scaled": dict(factor="one-over-dk")},
    "k-not-transposed": {"scores": dict(transpose=False, text="scores = Q K")},
    "column-softmax": {"weights": dict(by_columns=True, text="weights = softmax(column-wise)"),
                       "output": dict(rows_sum_to_one=False)},
    "v-times-weights": {"output": dict(op="product", inputs=("V", "weights"),
                                       text="output = V weights")},
    "weights-times-k": {"output": dict(inputs=("weights", "K"))},
}
# The step each mistake goes wrong at.
MISTAKES = {name: next(iter(changes)) for name, changes in MISTAKEN.items()}


@lru_cache(maxsize=256)  # a run asks for the same few plans thousands of times; cleared by register
def plan(given: tuple[str, ...], causal: bool = False, scaled: bool = True,
         mistake: str | None = None, through: str | None = None,
         masked: bool = False) -> tuple[StepDef, ...]:
    """The steps a problem takes from its given matrices, in order, up to ``through``.

    A given matrix is taken as given (Q, K and V given: no projections).  A step the problem
    skips by its condition (no mask, scale 1) hands its input on to the steps that read it;
    a step lacking an input is not taken, nor is any step that needs it (no dO: no gradients;
    no X: no dW_Q), unless it is ``optional`` (then it too hands its first input on)."""
    changes = MISTAKEN.get(mistake, {}) if mistake else {}
    routes = _routes(given)
    masked = masked or causal  # a step of the mask is one step under any mask
    active = {"": True, "scaled": scaled or "scaled" in changes, "masked": masked, "causal": masked}
    steps = [REGISTRY[name] if REGISTRY[name].is_given else given_def(name, REGISTRY[name].symbol)
             for name in given]
    stands_for: dict[str, str] = {}
    have = set(given)
    for name in PIPELINE:
        if name in have:
            continue
        step = _routed(replace(REGISTRY[name], **changes.get(name, {})), routes.get(name, {}))
        resolved = tuple(_resolve(i, stands_for) for i in step.inputs)
        skipped = not active[step.when] or (step.optional and not have.issuperset(resolved))
        if skipped:
            stands_for[name] = resolved[0] if resolved else name
            continue
        if step.is_given or not have.issuperset(resolved):
            continue
        steps.append(replace(step, inputs=resolved))
        have.add(name)
        if name == through:
            break
    return tuple(steps)


def _routes(given: tuple[str, ...]) -> dict[str, dict[str, tuple[str, str]]]:
    """What the steps read in place of a matrix some given ones stand for: {step: {input: (the
    given it reads, the other given that stands for the same input, or "")}}.  With X_dec and
    X_enc given, Q reads X_dec (X_enc being the one it is mixed up with), K and V read X_enc."""
    standing = [name for name in given if name in REGISTRY and REGISTRY[name].stands_for]
    routes: dict[str, dict[str, tuple[str, str]]] = {}
    for name in standing:
        stands_for = REGISTRY[name].stands_for
        other = next((o for o in standing if o != name and REGISTRY[o].stands_for == stands_for), "")
        for later in REGISTRY[name].feeds:
            routes.setdefault(later, {})[stands_for] = (name, other)
    return routes


def _routed(step: StepDef, reads: dict[str, tuple[str, str]]) -> StepDef:
    """The step reading what the problem's given matrices stand for (``_routes``)."""
    if not reads:
        return step
    source, other = reads.get(step.inputs[0], ("", "")) if step.inputs else ("", "")
    return replace(step, inputs=tuple(reads[i][0] if i in reads else i for i in step.inputs),
                   mixed_up_first=other or step.mixed_up_first,
                   why=step.why or (REGISTRY[source].why if source else ""))


def _resolve(name: str, stands_for: dict[str, str]) -> str:
    while name in stands_for and stands_for[name] != name:
        name = stands_for[name]
    return name


def plan_for(spec, mistake: str | None = None) -> tuple[StepDef, ...]:
    """The plan of a problem spec: its given matrices, its mask and scale, a mistake."""
    given = tuple(name for name in spec.matrices if name in PIPELINE)
    return plan(given, masked=spec.masked, scaled=not spec.unscaled, mistake=mistake)


def shapes(steps: tuple[StepDef, ...], given: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
    """Each step's shape (rows, columns) from its inputs' by its op's rule; a ValueError names
    the first step whose inputs do not fit together."""
    found = dict(given)
    for step in steps:
        if step.name not in found:
            found[step.name] = _shape(step, [found[name] for name in step.inputs])
    return found


def _shape(step: StepDef, inputs: list[tuple[int, int]]) -> tuple[int, int]:
    return ops.op(step.op).shape(step, inputs)


# The shape faces of the built-in ops (``builtin_ops``); scaling, masking and softmax keep
# their input's shape (``ops.keeps_shape``).
def product_shape(step: StepDef, inputs: list[tuple[int, int]]) -> tuple[int, int]:
    """The product's shape face: (rows of the left, columns of the right), each side transposed as
    the step says; a ValueError when the inner sizes differ."""
    first = inputs[0][::-1] if step.transpose_left else inputs[0]
    right = inputs[1][::-1] if step.transpose else inputs[1]
    if first[1] != right[0]:
        raise ValueError(f"{step.worded()}: {step.inputs[0]} has {first[1]} columns but "
                         f"{step.inputs[1]} has {right[0]} "
                         f"{'columns' if step.transpose else 'rows'}")
    return first[0], right[1]


def same_shapes(step: StepDef, inputs: list[tuple[int, int]]) -> tuple[int, int]:
    """Inputs of one shape, which the result keeps (an elementwise op: add)."""
    first = inputs[0]
    for name, shape in zip(step.inputs[1:], inputs[1:]):
        if shape != first:
            raise ValueError(f"{step.worded()}: {step.inputs[0]} is {first[0]}x{first[1]} but "
                             f"{name} is {shape[0]}x{shape[1]}")
    return first


def jacobian_shape(step: StepDef, inputs: list[tuple[int, int]]) -> tuple[int, int]:
    """The softmax Jacobian's shape face: n x n for a row of n weights."""
    return inputs[0][1], inputs[0][1]


def concat_shape(step: StepDef, inputs: list[tuple[int, int]]) -> tuple[int, int]:
    """The heads' concatenation's shape face: the parts' rows, their columns added; a ValueError
    when their rows differ."""
    if len({rows for rows, _ in inputs}) > 1:
        raise ValueError(f"{step.worded()}: the parts have different numbers of rows")
    return inputs[0][0], sum(columns for _, columns in inputs)


def symbol(name: str, head: int | None = None) -> str:
    """S, or S_1 for head 1's scores; an unknown name as upright text.  A shared key/value
    head's K and V (kv1.K, grouped-query attention) are K_1 whichever query head reads them."""
    shared = re.fullmatch(r"kv(\d+)\.(\w+)", name)
    if shared:
        return symbol(shared[2], int(shared[1]))
    step = REGISTRY.get(name)
    base = step.symbol if step and step.symbol else rf"\mathrm{{{name}}}"
    return base if head is None else f"{base}_{{{head}}}"


# The built-in steps: attention's pipeline, and the heads' concatenation and projection.  They
# are entered without asking the op registry: its built-in ops are assembled from modules that
# import this one (a test checks that every step's op is registered).
for _step in (
    given_def("X", "X"),
    # cross-attention: the queries from a decoder's tokens, the keys and values from an encoder's
    replace(given_def("X_dec", r"X_{\mathrm{dec}}"), stands_for="X", feeds=("Q",),
            text="X_dec (given): the decoder's tokens, whose queries attend",
            why=N_("the queries come from the decoder's tokens")),
    replace(given_def("X_enc", r"X_{\mathrm{enc}}"), stands_for="X", feeds=("K", "V"),
            text="X_enc (given): the encoder's tokens, which give the keys and values",
            why=N_("the keys and values come from the encoder's tokens")),
    given_def("W_Q", "W_Q"), given_def("W_K", "W_K"), given_def("W_V", "W_V"),
    _projection("Q"), _projection("K"), _projection("V"),
    StepDef("scores", "product", ("Q", "K"), "S", "scores = Q K^T",
            r"${{ 'scores' | sym }} = {{ 'Q' | sym }} {{ 'K' | sym }}^{\top}$",
            r"Compute the raw attention scores $S = QK^{\top}$: entry $(i, j)$ is query $i$ "
            r"dotted with key $j$.", marks=2, transpose=True,
            why=N_("entry (i, j) is query i dotted with key j")),
    StepDef("scaled", "scaling", ("scores",), r"\tilde{S}", "scaled = scores / sqrt(d_k)",
            r"{% if spec.scale is none %}${{ 'scaled' | sym }} = {{ 'scores' | sym }} / \sqrt{d_k}$"
            r"{% else %}${{ 'scaled' | sym }} = {{ spec.scale | tex }}\, {{ 'scores' | sym }}$"
            r"{% endif %}",
            r"{% if spec.scale is none %}Scale the scores: $\tilde{S} = S / \sqrt{d_k}$."
            r"{% else %}Scale the scores: $\tilde{S} = {{ spec.scale | tex }}\, S$.{% endif %}",
            when="scaled", factor_text="scaled = scale * scores"),
    StepDef("masked", "masking", ("scaled",), r"\hat{S}", "masked = {0}, -inf where key j > query i",
            r"$\hat{S} = {{ 'masked' | input_of | sym }} + M$, the " + masks.NAME_PROSE + " added",
            r"Apply the " + masks.NAME_PROSE + r": write the masked scores $\hat{S} = "
            r"{{ 'masked' | input_of | sym }} + M$, with $-\infty$ wherever {% if spec.mask == "
            r"'causal' %}key $j$ comes after query $i${% elif spec.mask == 'padding' %}key $j$ is "
            r"padding{% else %}the mask hides key $j$ from query $i${% endif %}.", when="masked"),
    StepDef("weights", "softmax", ("masked",), "A", "weights = softmax(row-wise)",
            r"${{ 'weights' | sym }} = \operatorname{softmax}({{ 'weights' | input_of | sym }})$, row by row",
            "Apply softmax to each row to get the attention weights $A$; show each row's "
            "exponentials, their sum and the quotients.", marks=3),
    StepDef("output", "blend", ("weights", "V"), "O", "output = weights V",
            r"${{ 'output' | sym }} = {{ 'weights' | sym }} {{ 'V' | sym }}$",
            "Compute the output $O = AV$: each row is a blend of the value rows. What is its "
            "shape?", marks=2, asks_shape=True,
            why=N_("row i blends the rows of the values with query i's weights"), mixed_up="K"),
):
    _enter(_step)

for _step in (
    replace(given_def("W_O", "W_O"), text="the output projection"),
    StepDef("concat", "concat", ("head1.output", "head2.output"), "C",
            "concat = [output_1, output_2]",
            "$C = [{% for i in range(1, spec.params.get('heads', 2) + 1) %}O_{{ i }}"
            "{{ ', ' if not loop.last else '' }}{% endfor %}]$",
            "Concatenate the heads' outputs: $C = [O_1, O_2]$."),
    StepDef("projected", "product", ("concat", "W_O"), "Y", "projected = concat W_O",
            r"$Y = C\, W_O$", r"Project the concatenation: $Y = C\, W_O$. What is its shape?",
            marks=2, asks_shape=True),
):
    _enter(_step, pipeline=False)

# The backward pass, taken where the upstream gradient dO = dL/dO is given (a loss such as
# L = sum(O * G) gives dO = G); the weights and X only where X is given.
for _step in (
    given_def("dO", r"\mathrm{d}O"),
    StepDef("dV", "product", ("weights", "dO"), r"\mathrm{d}V", "dV = weights^T dO",
            r"$\mathrm{d}V = A^{\top}\, \mathrm{d}O$",
            r"Compute $\mathrm{d}V = A^{\top}\, \mathrm{d}O$: row $j$ of $\mathrm{d}V$ collects "
            r"every query's upstream gradient, weighted by how much that query attends to key $j$.",
            marks=2, transpose_left=True,
            why=N_("row j gathers every query's gradient, weighted by how much it attends to key j")),
    StepDef("dweights", "product", ("dO", "V"), r"\mathrm{d}A", "dweights = dO V^T",
            r"$\mathrm{d}A = \mathrm{d}O\, V^{\top}$",
            r"Compute the gradient of the weights, $\mathrm{d}A = \mathrm{d}O\, V^{\top}$.",
            marks=2, transpose=True, why=N_("entry (i, j) is query i's gradient dotted with value j")),
    StepDef("dscaled", "softmax-backward", ("weights", "dweights"), r"\mathrm{d}\tilde{S}",
            "dscaled = weights * (dweights - rowsum(weights * dweights))",
            r"$\mathrm{d}\tilde{S}_{ij} = A_{ij}\,(\mathrm{d}A_{ij} - \sum_k A_{ik}\, \mathrm{d}A_{ik})$",
            r"Push the gradient back through softmax, row by row: $\mathrm{d}\tilde{S}_{ij} = "
            r"A_{ij}\,(\mathrm{d}A_{ij} - \sum_k A_{ik}\, \mathrm{d}A_{ik})${% if spec.masked %}"
            r" (a masked entry has $A_{ij} = 0$, so its gradient is 0){% endif %}.", marks=3),
    StepDef("dscores", "scaling", ("dscaled",), r"\mathrm{d}S", "dscores = dscaled / sqrt(d_k)",
            r"{% if spec.scale is none %}$\mathrm{d}S = \mathrm{d}\tilde{S} / \sqrt{d_k}$"
            r"{% else %}$\mathrm{d}S = {{ spec.scale | tex }}\, \mathrm{d}\tilde{S}${% endif %}",
            r"Carry the gradient back through the scaling: {% if spec.scale is none %}"
            r"$\mathrm{d}S = \mathrm{d}\tilde{S} / \sqrt{d_k}${% else %}$\mathrm{d}S = "
            r"{{ spec.scale | tex }}\, \mathrm{d}\tilde{S}${% endif %}.", when="scaled"),
    StepDef("dQ", "product", ("dscores", "K"), r"\mathrm{d}Q", "dQ = dscores K",
            r"$\mathrm{d}Q = \mathrm{d}S\, K$", r"Compute $\mathrm{d}Q = \mathrm{d}S\, K$.", marks=2,
            why=N_("query i's row of the gradient weighs the keys"), mixed_up="Q"),
    StepDef("dK", "product", ("dscores", "Q"), r"\mathrm{d}K", "dK = dscores^T Q",
            r"$\mathrm{d}K = \mathrm{d}S^{\top} Q$", r"Compute $\mathrm{d}K = \mathrm{d}S^{\top} Q$.",
            marks=2, transpose_left=True, why=N_("key j's column of the gradient weighs the queries"),
            mixed_up="K"),
    *(StepDef(f"dW_{n}", "product", ("X", f"d{n}"), rf"\mathrm{{d}}W_{n}", f"dW_{n} = X^T d{n}",
              rf"$\mathrm{{d}}W_{n} = X^{{\top}} \mathrm{{d}}{n}$",
              rf"Compute $\mathrm{{d}}W_{n} = X^{{\top}} \mathrm{{d}}{n}$.", transpose_left=True)
      for n in "QKV"),
    *(StepDef(f"dX_{n}", "product", (f"d{n}", f"W_{n}"), rf"\mathrm{{d}}X^{{({n})}}",
              f"dX_{n} = d{n} W_{n}^T", rf"$\mathrm{{d}}X^{{({n})}} = \mathrm{{d}}{n}\, W_{n}^{{\top}}$",
              rf"Compute $\mathrm{{d}}X^{{({n})}} = \mathrm{{d}}{n}\, W_{n}^{{\top}}$.", transpose=True)
      for n in "QKV"),
    StepDef("dX", "add", ("dX_Q", "dX_K", "dX_V"), r"\mathrm{d}X", "dX = dX_Q + dX_K + dX_V",
            r"$\mathrm{d}X = \mathrm{d}X^{(Q)} + \mathrm{d}X^{(K)} + \mathrm{d}X^{(V)}$",
            r"Add up what reaches $X$ through each projection: $\mathrm{d}X = "
            r"\mathrm{d}X^{(Q)} + \mathrm{d}X^{(K)} + \mathrm{d}X^{(V)}$."),
):
    _enter(_step)

# One row of the backward pass on its own (a backward question that asks dV and one row of dS):
# the row's gradient of the weights, through softmax, and through the scaling.
for _step in (
    given_def("weights_row", "a"), given_def("dO_row", r"\mathrm{d}o"),
    StepDef("dweights_row", "product", ("dO_row", "V"), r"\mathrm{d}a", "da = do V^T",
            r"$\mathrm{d}a = \mathrm{d}o\, V^{\top}$, row {{ spec.row + 1 }} of $\mathrm{d}A$",
            marks=1, transpose=True),
    StepDef("dscaled_row", "softmax-backward", ("weights_row", "dweights_row"),
            r"\mathrm{d}\tilde{s}", "ds~ = a * (da - a . da)",
            r"$\mathrm{d}\tilde{s}_j = a_j\,(\mathrm{d}a_j - \sum_k a_k\, \mathrm{d}a_k)$, row "
            r"{{ spec.row + 1 }} of $\mathrm{d}\tilde{S}$", marks=2),
    StepDef("dscores_row", "scaling", ("dscaled_row",), r"\mathrm{d}s", "ds = ds~ / sqrt(d_k)",
            r"{% if spec.scale is none %}$\mathrm{d}s = \mathrm{d}\tilde{s} / \sqrt{d_k}$"
            r"{% else %}$\mathrm{d}s = {{ spec.scale | tex }}\, \mathrm{d}\tilde{s}${% endif %}, row "
            r"{{ spec.row + 1 }} of $\mathrm{d}S$", when="scaled"),
):
    _enter(_step, pipeline=False)

# One row of softmax on its own: its Jacobian J = diag(a) - a^T a, applied to a gradient g.
for _step in (
    given_def("arow", "a"), given_def("grow", "g"),
    StepDef("jacobian", "jacobian", ("arow",), "J", "J = diag(a) - a^T a",
            r"$J = \operatorname{diag}(a) - a^{\top} a$",
            r"Write the Jacobian of softmax at this row, $J_{ij} = \partial a_i / \partial s_j = "
            r"a_i\,(\delta_{ij} - a_j)$: $a_i(1 - a_i)$ on the diagonal, $-a_i a_j$ off it.", marks=2),
    StepDef("jvp", "product", ("grow", "jacobian"), r"gJ", "jvp = g J",
            r"$g J$", r"Apply it to the gradient: $g J$ (J is symmetric, so this is $(J g^{\top})^{\top}$).",
            marks=2),
):
    _enter(_step, pipeline=False)
