"""How far an answer may be from the key: one tolerance rule for every format that marks.

A student who works by hand rounds: each matrix to the shown decimals, each
exponential, the divisor sqrt(d_k).  An answer is right when it is within what that
rounding can move it.  For every entry of every step the student works, this module
bounds that movement by carrying half a unit of the last shown place through the
step's op (first-order, from the op's partial derivatives at the key's values, plus
the product of two errors where an op multiplies them):

- ``chain``: the student rounded every earlier step too and worked on from those
  values (Moodle, whose gaps know nothing of each other; the practice page where
  an earlier value is not the student's own);
- ``local``: the inputs are the student's own, as on the practice page when the earlier
  grids are theirs: each may be what they typed or what they worked before rounding it to
  type it, so half a unit of each input's shown place is carried through the op (one level,
  as the chain does), plus this step's own rounding.  A matrix of the spec is exact.

Each bound then gets a margin (``MARGIN``) for what the first order leaves out, except a sharp
op's (``ops.Op.sharp``: its face is a true bound already), so that the margin does not compound
through a long chain of such steps (a block's LayerNorm, feed-forward layer and ReLU).  A
real mistake moves an answer by far more than rounding does, and the tests hold both
sides: a rounding student is never marked wrong, real mistakes still are.

The practice page marks an entry right when it is the key's within ``chain`` (as Moodle
and Canvas do) or follows from the student's own values within ``local``; and where a
grid is wrong, it says which common slip (``slips``) gives what the student wrote.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from generator.maths import masks, ops
from generator.rendering.language import gettext as _

MARGIN = 1.25  # over the first-order bound: the second order and float noise
FLOOR = 1e-9  # an exact key still allows float noise


@dataclass(frozen=True)
class Tolerance:
    """How far one step's entries may be from the key: ``chain`` when the student worked on from
    rounded earlier steps, ``local`` from their own inputs."""

    chain: np.ndarray
    local: np.ndarray


def half_unit(decimals: int) -> float:
    """Half a unit of the last shown place: the most rounding to ``decimals`` moves a number."""
    return 0.5 * 10.0**-decimals


class Tolerances:
    """The tolerances of every step a question's student works (its ``worked`` solutions).

    A step the statement shows (the forward pass before a backward one, the other head's
    output) is read off the page, rounded as shown: its chain starts there, as a given's does."""

    def __init__(self, question, decimals: int):
        self.u = half_unit(decimals)
        self._by_step: dict[int, Tolerance] = {}
        by_name: dict[str, Tolerance] = {}
        shown = {id(step) for _, _, step in question.shown}
        for prefix, solution in question.worked:
            values = {step.name: step.numeric for step in solution.steps}
            chain: dict[str, np.ndarray] = {}
            for step_def, step in zip(solution.plan, solution.steps):
                name = prefix + step.name if "." not in step.name else step.name
                if step_def.is_given or id(step) in shown:
                    known = by_name.get(name) if step_def.is_given else None
                    chain[step.name] = known.chain if known else _given_error(
                        step.name, values[step.name], question.spec, self.u)
                    read = _bounded(chain[step.name])
                    tolerance = Tolerance(read, read)
                elif step_def.counted:  # a count: whole numbers, written in full, never rounded
                    chain[step.name] = np.zeros_like(values[step.name])
                    tolerance = Tolerance(chain[step.name], chain[step.name])
                else:
                    inputs = [values[i] for i in step_def.inputs]
                    spec = solution.spec
                    typed = [_typed_error(i, x, question.spec, self.u)
                             for i, x in zip(step_def.inputs, inputs)]
                    own = propagate(step_def, inputs, typed, self.u, spec)
                    carried = propagate(step_def, inputs, [chain[i] for i in step_def.inputs], self.u, spec)
                    sharp = ops.op(step_def.op).sharp or step_def.sharp
                    chain[step.name] = _sharp(carried + self.u) if sharp else _bounded(carried + self.u)
                    tolerance = Tolerance(chain[step.name], _bounded(own + self.u))
                by_name[name] = tolerance
                self._by_step.setdefault(id(step), tolerance)

    def of(self, step) -> Tolerance:
        """A worked step's tolerances; any other matrix a part asks for (the weights after a
        swap) is read off a shown, rounded one: half a unit, and the margin."""
        if id(step) in self._by_step:
            return self._by_step[id(step)]
        flat = _bounded(np.full(step.numeric.shape, self.u))
        return Tolerance(flat, flat)


def _typed_error(name: str, value: np.ndarray, spec, u: float) -> np.ndarray:
    """How far a student's own input can be from what they typed (``local``): half a unit, as
    they typed it rounded but may have worked on from more places; a matrix of the spec is exact."""
    return np.zeros_like(value) if name in spec.matrices else np.full(value.shape, u)


def _given_error(name: str, value: np.ndarray, spec, u: float) -> np.ndarray:
    """A matrix of the problem's spec is exact; any other given (a row of scores, a head's Q,
    which its own solution takes as given) was read from a shown, rounded matrix, unless it has
    no more places than are shown."""
    if name in spec.matrices:
        return np.zeros_like(value)
    return np.where(_shown_exactly(value, u), 0.0, u)


def _shown_exactly(value, u: float):
    """Whether a value has no more decimals than are shown (half a unit ``u``)."""
    return np.abs(np.round(value / (2 * u)) * 2 * u - value) < 1e-12


def propagate(step, inputs: list[np.ndarray], errors: list[np.ndarray], u: float, spec) -> np.ndarray:
    """How far the step's result can move when each input moves by up to its error, and the
    student rounds what the step itself writes down (exponentials, sqrt(d_k))."""
    return ops.op(step.op).tolerance(step, inputs, errors, u, spec)


# Each op's tolerance face (see ops, builtin_ops): (step_def, input arrays, their errors, u,
# spec) -> how far each entry of the result can move.
def product_tolerance(step, inputs, errors, u, spec):
    """The product's tolerance face: each factor's error times the other's size, plus the two
    errors' product."""
    (a, b), (ea, eb) = inputs, errors
    if step.transpose_left:
        a, ea = a.T, ea.T
    if step.transpose:
        b, eb = b.T, eb.T
    return ea @ np.abs(b) + np.abs(a) @ eb + ea @ eb


def scaling_tolerance(step, inputs, errors, u, spec):
    """The scaling's tolerance face: the error times the factor, plus the rounding of sqrt(d_k) or
    the scale as the student writes it."""
    (x,), (e,) = inputs, errors
    if step.factor == "one":
        return e
    if step.factor == "one-over-dk":
        return e / spec.d_k
    if spec.scale is None:  # x / sqrt(d_k), with sqrt(d_k) written to the shown places, or x
        divisor = np.sqrt(spec.d_k)  # times 1/sqrt(d_k) written so (the larger reach, by d_k)
        by_root = 0.0 if _shown_exactly(divisor, u) else u / divisor**2
        by_inverse = 0.0 if _shown_exactly(1 / divisor, u) else u
        return e / divisor + np.abs(x) * max(by_root, by_inverse)
    factor = float(spec.scale)
    written = 0.0 if _shown_exactly(factor, u) else u
    return abs(factor) * e + np.abs(x) * written


def masking_tolerance(step, inputs, errors, u, spec):
    """The mask's tolerance face: nothing where the mask writes -inf, the input's error
    elsewhere."""
    hidden = ~np.array(spec.visible, dtype=bool).reshape(errors[0].shape)
    return np.where(np.isinf(inputs[0]) | hidden, 0.0, errors[0])


def softmax_tolerance(step, inputs, errors, u, spec):
    """d w_j / d z_k = w_j (delta_jk - w_k); each exponential written to the shown places
    moves w_j by (delta_jk - w_j) / sum of the exponentials."""
    z, e = inputs[0], errors[0]
    if step.by_columns:
        return _softmax_rows(z.T, e.T, u).T
    return _softmax_rows(z, e, u)


def _softmax_rows(z: np.ndarray, e: np.ndarray, u: float) -> np.ndarray:
    bounds = np.zeros_like(z)
    for i, (row, row_error) in enumerate(zip(z, e)):
        seen = np.isfinite(row)
        exponentials = np.where(seen, np.exp(np.where(seen, row, 0.0)), 0.0)
        total = exponentials.sum()
        w = exponentials / total
        jacobian = np.abs(np.diag(w) - np.outer(w, w))
        from_inputs = jacobian @ np.where(seen, row_error, 0.0)
        written = np.abs(np.eye(len(row)) - w[:, None]) @ (seen * u) / total
        bounds[i] = np.where(seen, from_inputs + written, 0.0)
    return bounds


def add_tolerance(step, inputs, errors, u, spec):
    """The sum's tolerance face: the terms' errors added."""
    return sum(errors[1:], errors[0])


def softmax_backward_tolerance(step, inputs, errors, u, spec):
    """r_ij = a_ij (g_ij - s_i), s_i = sum_k a_ik g_ik: each input's error times its partial
    derivative's size, and the row's dot product s_i as the student writes it."""
    (a, g), (ea, eg) = inputs, errors
    s = (a * g).sum(axis=1, keepdims=True)
    es = (np.abs(g) * ea + np.abs(a) * eg).sum(axis=1, keepdims=True) + u
    return np.abs(g - s) * ea + np.abs(a) * (eg + es)


def concat_tolerance(step, inputs, errors, u, spec):
    """The heads' concatenation's tolerance face: the parts' errors side by side."""
    return np.hstack(errors)


def jacobian_tolerance(step, inputs, errors, u, spec):
    """J_ij = a_i (delta_ij - a_j): both factors' errors, and their product."""
    a, e = inputs[0][0], errors[0][0]
    delta = np.eye(len(a))
    return (e[:, None] * np.abs(delta - a[None, :]) + np.abs(a)[:, None] * e[None, :]
            + e[:, None] * e[None, :])


def _bounded(error: np.ndarray) -> np.ndarray:
    return np.maximum(error * MARGIN, FLOOR)


def _sharp(error: np.ndarray) -> np.ndarray:
    """A sharp op's chain (see ops.Op.sharp): its bound as it is, and float noise."""
    return np.maximum(error, FLOOR) + FLOOR


# The common slips of each step the student works, for the practice page: a change to how its
# step graph computes the step (its op, inputs or flags), and what the page says when a
# student's grid is what that change gives.  ``sym`` prints a step's name as the paper does
# (A, or A₁ in head 1); ``before`` gives the StepDef that computes a name, or None; ``whole``
# is the spec of the whole question where the step is one head's (whose d_k is the head's).
def slips(step, sym, spec, before, whole=None) -> list[tuple[dict, str]]:
    """The common slips of ``step`` (a StepDef of a plan), each (change, what the page says):
    its op's slips face (see ops, builtin_ops)."""
    return ops.op(step.op).slips(step, sym, spec, before, whole)


def product_slips(step, sym, spec, before, whole=None) -> list[tuple[dict, str]]:
    """A product turned: a transpose left off or added on either side, the factors in the
    other order, or the wrong matrix taken (the step's ``mixed_up`` input, or its
    ``mixed_up_first``: X_dec for X_enc); said with why
    the product is the way round it is (the step's ``why``)."""
    def text(inputs=step.inputs, left=step.transpose_left, right=step.transpose):
        return f"{sym(inputs[0])}{'ᵀ' if left else ''} {sym(inputs[1])}{'ᵀ' if right else ''}"
    right = text() if sym(step.name) == text().replace(" ", "") else f"{sym(step.name)} = {text()}"
    right += f": {_(step.why)}" if step.why else ""
    turned = [{"transpose_left": not step.transpose_left}, {"transpose": not step.transpose},
              {"inputs": list(step.inputs[::-1])}]
    if step.mixed_up:
        turned.append({"inputs": [step.inputs[0], step.mixed_up]})
    if step.mixed_up_first:  # cross-attention: the other sequence's tokens projected
        turned.append({"inputs": [step.mixed_up_first, step.inputs[1]]})

    def said(c):
        return text(c.get("inputs", step.inputs), c.get("transpose_left", step.transpose_left),
                    c.get("transpose", step.transpose))
    return [({"op": "product", **c}, _("this is %(this)s, not %(right)s") % {"this": said(c), "right": right})
            for c in turned]


def scaling_slips(step, sym, spec, before, whole=None):
    """The scaling's slips: not scaled at all, divided by d_k or multiplied by sqrt(d_k), and in a
    head, divided by the whole model's sqrt(d_k)."""
    me, of = sym(step.name), sym(step.inputs[0])
    values = {"me": me, "of": of, "scale": spec.scale, "d_k": spec.d_k,
              "whole": whole.d_k if whole is not None else None}
    if spec.scale is not None:
        return [({"factor": 1.0}, _("this is %(of)s itself, not scaled: %(me)s = %(scale)s·%(of)s")
                 % values)]
    # a head's d_k first: dividing by √ of the whole model's d_k may be dividing by the head's d_k
    found = [] if whole is None or whole.d_k == spec.d_k else [(
        {"factor": float(1 / np.sqrt(whole.d_k))},
        _("this divides by √%(whole)s, the whole model's d_k: a head's d_k is its own share, "
          "%(d_k)s, so %(me)s = %(of)s/√%(d_k)s") % values)]
    return found + [
        ({"factor": 1.0}, _("this is %(of)s itself, not scaled: %(me)s = %(of)s/√d_k") % values),
        ({"factor": 1.0 / spec.d_k}, _("this divides by d_k: %(me)s = %(of)s/√d_k, by its square root")
         % values),
        ({"factor": float(np.sqrt(spec.d_k))},
         _("this multiplies by √d_k instead of dividing by it: %(me)s = %(of)s/√d_k") % values)]


def softmax_slips(step, sym, spec, before, whole=None):
    """The softmax's slips: down the columns instead of along the rows, the exponentials not divided
    by their sum, and the causal mask left out."""
    me, of = sym(step.name), sym(step.inputs[0])
    values = {"me": me, "of": of}
    found = [({"by_columns": True}, _("this is softmax down each column: it runs along each row of "
                                      "%(of)s, so that each row of %(me)s sums to 1") % values),
             ({"divided": False}, _("the exponentials are not divided by the row's sum: each entry "
                                    "of %(me)s is exp of %(of)s's entry over the sum of its row's "
                                    "exponentials, so that each row of %(me)s sums to 1") % values)]
    source = before(step.inputs[0])
    if source is not None and source.op == "masking":
        hidden = (_("key j comes after query i") if spec.mask == "causal" else
                  _("key j is padding") if spec.mask == "padding" else _("the mask hides key j"))
        found.append(({"inputs": [source.inputs[0]]}, _(
            "the mask is missing: where %(hidden)s the weight is 0, and each row of %(me)s sums to "
            "1 over the keys that query may see") % {**values, "hidden": hidden}))
        found.append(({"inputs": [source.inputs[0]], "hide_after": _listed(spec.visible)}, _(
            "this is softmax over every key, the masked weights then set to 0: the mask comes "
            "first, %(me)s = softmax(%(of)s) with the masked scores at −∞, so that each row sums "
            "to 1 over the keys that query may see") % values))
    elif source is not None and source.op == "scaling":
        found.append(({"inputs": [source.inputs[0]]}, _(
            "this is the softmax of %(raw)s: %(me)s = softmax(%(of)s), of the scaled scores")
            % {**values, "raw": sym(source.inputs[0])}))
    return found


def masking_slips(step, sym, spec, before, whole=None):
    """The mask's slips: the causal mask transposed (the later keys seen, the earlier hidden), and
    key padding put on the query side (the padded queries' rows hidden, not the padded keys)."""
    me, (n_q, n_k) = sym(step.name), (spec.n_queries, spec.n_keys)
    causal = spec.mask in ("causal", "causal+padding")
    lengths = masks.lengths(spec.valid, n_q) if "padding" in spec.mask else None
    found = []
    if causal and n_q == n_k > 1:
        turned = [[j >= i and (lengths is None or j < lengths[i]) for j in range(n_k)]
                  for i in range(n_q)]
        found.append(({"visible": turned}, _(
            "this mask is the causal one transposed: in %(me)s query i sees keys 1 to i, the keys "
            "before it, never the keys after it") % {"me": me}))
    if isinstance(spec.valid, int) and lengths is not None:
        side = [[(j <= i or not causal) and i < spec.valid for j in range(n_k)] for i in range(n_q)]
        found.append(({"visible": side}, _(
            "the padding is on the query side: in %(me)s the padded keys (after key %(valid)s) are "
            "hidden from every query, not the padded queries' rows") % {"me": me, "valid": spec.valid}))
    return found


def _listed(mask) -> list[list[bool]]:
    """A mask for the page's JSON."""
    return [list(row) for row in mask]


def softmax_backward_slips(step, sym, spec, before, whole=None):
    """The softmax backward pass's slip: the row-sum term left out."""
    me, a, da = sym(step.name), sym(step.inputs[0]), sym(step.inputs[1])
    return [({"rowsum": False}, _("the row-sum term is missing: %(me)sᵢⱼ = %(a)sᵢⱼ(%(da)sᵢⱼ − Σₖ "
                                  "%(a)sᵢₖ%(da)sᵢₖ), not %(a)sᵢⱼ%(da)sᵢⱼ") % {"me": me, "a": a, "da": da})]


def add_slips(step, sym, spec, before, whole=None):
    """The sum's slips: each term left out in turn."""
    whole = " + ".join(sym(n) for n in step.inputs)
    return [({"inputs": [n for n in step.inputs if n != left_out]},
             _("%(missing)s is missing: %(me)s = %(sum)s") % {
                 "missing": sym(left_out), "me": sym(step.name), "sum": whole})
            for left_out in step.inputs]


def concat_slips(step, sym, spec, before, whole=None):
    """The heads' concatenation's slip: the heads the wrong way round."""
    return [({"inputs": list(step.inputs[::-1])}, _(
        "the heads are the wrong way round: %(me)s = [%(heads)s], head 1 on the left") % {
            "me": sym(step.name), "heads": ", ".join(sym(n) for n in step.inputs)})]


def jacobian_slips(step, sym, spec, before, whole=None):
    """The softmax Jacobian's slips: the wrong sign off the diagonal, and the diagonal's a_i left
    out."""
    me, a = sym(step.name), sym(step.inputs[0])
    values = {"me": me, "a": a}
    return [({"off_diagonal_sign": 1}, _("the entries off the diagonal have the wrong sign: "
                                         "%(me)sᵢⱼ = −%(a)sᵢ%(a)sⱼ for i ≠ j, and %(me)sᵢᵢ = "
                                         "%(a)sᵢ(1 − %(a)sᵢ)") % values),
            ({"diagonal": False}, _("the diagonal's %(a)sᵢ is missing: %(me)s = diag(%(a)s) − "
                                    "%(a)sᵀ%(a)s, so %(me)sᵢᵢ = %(a)sᵢ(1 − %(a)sᵢ), not −%(a)sᵢ²")
             % values)]

