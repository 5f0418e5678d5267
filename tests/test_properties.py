"""Property tests over random shapes and values: engine = numpy = torch, and the invariants."""

import numpy as np
import sympy
from conftest import make_solution
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.maths.crosscheck import attention_steps

ENTRY = st.one_of(
    st.integers(-3, 3),
    st.integers(-200, 200).map(lambda n: str(sympy.Rational(n, 100))),  # two-place decimals
    st.sampled_from(["1/2", "-1/3", "sqrt(2)/2", "sqrt(3)"]),
)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def matrix(rows: int, columns: int):
    return st.lists(st.lists(ENTRY, min_size=columns, max_size=columns),
                    min_size=rows, max_size=rows)


@st.composite
def records(draw):
    tokens, d_model, d_k, d_v = (draw(st.integers(1, n)) for n in (5, 4, 4, 3))
    record = {"mask": draw(st.sampled_from(["none", "causal"]))}
    if draw(st.booleans()):
        record.update(X=draw(matrix(tokens, d_model)), W_Q=draw(matrix(d_model, d_k)),
                      W_K=draw(matrix(d_model, d_k)), W_V=draw(matrix(d_model, d_v)))
    else:  # Q, K, V given directly; cross-attention when the row counts differ
        queries = draw(st.integers(1, 4))
        record.update(Q=draw(matrix(queries, d_k)), K=draw(matrix(tokens, d_k)),
                      V=draw(matrix(tokens, d_v)))
    if draw(st.booleans()):
        record["scale"] = draw(st.sampled_from([1, "1/2", "1/sqrt(5)"]))
    return record


@SETTINGS
@given(records())
def test_invariants(record):
    solution = make_solution(**record)  # raises if engine and numpy differ beyond 1e-9
    spec = solution.spec
    weights = solution.step("weights")
    assert np.allclose(weights.numeric.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert solution.step("output").shape == (spec.n_queries, spec.d_v)
    assert weights.shape == (spec.n_queries, spec.n_keys)
    if spec.mask == "causal":
        for i, row in enumerate(weights.exact):
            assert all(w == 0 and w.is_Integer for w in row[i + 1:])
            assert all(w.is_positive for w in row[:i + 1])


@SETTINGS
@given(records())
def test_engine_matches_torch(record):
    from conftest import torch_or_skip
    torch = torch_or_skip()
    solution = make_solution(**record)
    spec = solution.spec
    q, k, v = (torch.tensor(solution.step(n).numeric, dtype=torch.float64) for n in "QKV")
    scale = None if spec.scale is None else float(spec.scale)
    causal = spec.mask == "causal"
    expected = torch.nn.functional.scaled_dot_product_attention(
        q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), is_causal=causal, scale=scale).squeeze(0)
    assert np.allclose(solution.step("output").numeric, expected.numpy(), rtol=1e-9, atol=1e-9)


def test_numpy_pipeline_is_independent_and_right_on_a_known_case():
    steps = attention_steps({"Q": np.eye(2), "K": np.array([[1.0, 0], [0, 2]]), "V": np.eye(2)})
    assert np.allclose(steps["weights"], [[0.66976155, 0.33023845], [0.19557032, 0.80442968]])


def test_cross_check_raises_on_a_disagreement():
    import pytest

    from generator.maths.crosscheck import CrossCheckError, cross_check
    solution = make_solution(Q=[[1, 0]], K=[[1, 0], [0, 1]], V=[[1], [2]])
    values = {step.name: step.numeric for step in solution.steps}
    cross_check(values, solution.plan, None, 2)
    values["weights"] = values["weights"] + 1e-8
    with pytest.raises(CrossCheckError, match="weights: engine and numpy differ by 1e-08"):
        cross_check(values, solution.plan, None, 2)
