"""Golden test of seed 004: the 3-token module, every printed matrix, and PyTorch."""

import numpy as np
import pytest
import sympy
from conftest import SEEDS, make_solution, module05_record, torch_or_skip

from generator.rendering.formatting import decimal_text

# Printed in the seed with numpy at 3 decimals (the output at 4).
SEED_Q = [[0.396, -0.981, -2.435, -0.428], [2.084, 0.089, -0.17, -1.498], [-1.081, 1.119, 0.825, -0.024]]
SEED_K = [[0.963, -1.012, -1.462, 0.77], [1.042, -2.655, -2.244, -0.06], [-0.168, 0.386, 1.393, -1.479]]
SEED_V = [[-2.506, -0.188, 0.896, 2.679], [-1.459, 1.296, 1.914, 2.07], [1.587, -0.747, -0.24, -1.597]]
SEED_SCORES = [[4.604, 8.508, -3.204], [1.011, 2.405, 1.664], [-3.398, -5.949, 1.797]]
SEED_SCALED = [[2.302, 4.254, -1.602], [0.506, 1.203, 0.832], [-1.699, -2.974, 0.899]]
SEED_WEIGHTS = [[0.124, 0.873, 0.003], [0.228, 0.457, 0.315], [0.068, 0.019, 0.913]]
SEED_OUTPUT = [[-1.5813, 1.1064, 1.7821, 2.1362], [-0.7367, 0.3136, 1.0029, 1.0518],
               [1.2507, -0.6701, -0.1218, -1.2369]]


@pytest.fixture(scope="module")
def solution():
    return make_solution(**module05_record())


def shown(step, decimals):
    return [[float(decimal_text(n, decimals)) for n in row] for row in step.entries]


def test_the_seed_file_prints_these_numbers():
    text = next(SEEDS.glob("004_*.txt")).read_text()
    assert "[[0.124 0.873 0.003]" in text
    assert "[[-1.5813  1.1064  1.7821  2.1362]" in text


def test_inputs_are_the_seed_draw(solution):
    assert solution.step("X").numeric.tolist()[0] == [0.5, -0.14, 0.65, 1.52]
    assert solution.step("X").entries[0][1].exact == sympy.Rational(-14, 100)


@pytest.mark.parametrize("name, printed, decimals", [
    ("Q", SEED_Q, 3), ("K", SEED_K, 3), ("V", SEED_V, 3),
    ("scores", SEED_SCORES, 3), ("scaled", SEED_SCALED, 3),
    ("weights", SEED_WEIGHTS, 3), ("output", SEED_OUTPUT, 4),
])
def test_every_printed_matrix(solution, name, printed, decimals):
    assert shown(solution.step(name), decimals) == printed


def test_every_weights_row_sums_to_one(solution):
    assert np.allclose(solution.step("weights").numeric.sum(axis=1), 1.0, atol=1e-15)


def test_row_zero_working_matches_exercise_two(solution):
    row = solution.step("weights").working[0]
    assert [decimal_text(x, 3) for x in row.inputs] == ["2.302", "4.254", "-1.602"]
    assert [decimal_text(w, 3) for w in row.weights] == ["0.124", "0.873", "0.003"]


def test_same_output_as_pytorch_scaled_dot_product_attention(solution):
    torch = torch_or_skip()
    q, k, v = (torch.tensor(solution.step(n).numeric, dtype=torch.float64).unsqueeze(0)
               for n in "QKV")
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v).squeeze(0).numpy()
    assert np.allclose(solution.step("output").numeric, expected, rtol=0, atol=1e-12)
    assert np.allclose(expected, SEED_OUTPUT, atol=5e-5)
