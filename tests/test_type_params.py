"""A question type's own parameters: a type defined in this file declares a ``pair`` key
(``kinds.Param``), and with no edit anywhere else a spec file gives it, a draw chooses it,
problems.json writes it and --record reads it back; a bad or unknown key is one line."""

import json
from contextlib import contextmanager
from dataclasses import replace

import pytest
from test_extending import spec_file  # a TOML spec file of these keys

from generator import kinds
from generator.formats.export import spec_record
from generator.kinds import GIVEN, Param, QuestionType
from generator.kinds.questions import SETUP, Question, given_steps, lettered, step_parts
from generator.kinds.sampling import draw_options, sample_set
from generator.maths.engine import solve
from generator.maths.spec import SpecError, one_based, spec_from_record

X = [[1, 0], [0, 1], [1, 1]]
W = {"W_Q": [[1, 2], [0, 1]], "W_K": [[1, 0], [1, 1]], "W_V": [[2, 0], [0, 1]]}


# --- a toy type with a parameter of its own: the score of one pair of tokens ----------

def read_pair(value, spec, where):
    if not (isinstance(value, list) and len(value) == 2 and value[0] != value[1]):
        raise SpecError(f"{where}: pair must name two different tokens, e.g. [1, 3]")
    return tuple(one_based(token, spec.n_queries, "pair", where) for token in value)


def pair_score(spec) -> Question:
    """Q, K and V, then the scores, whose key says the pair's own score."""
    solution = solve(spec)
    projections, scores = step_parts(solution, (("Q", "K", "V"), ("scores",)))
    i, j = spec.pair
    scores = replace(scores, answer=(solution.step("scores").entries[i][j],))
    return Question(spec.question, spec, solution, given_steps(solution),
                    lettered([projections, scores]))


def draw_pair(rng, candidate, decimals):
    first, second = (int(t) for t in rng.choice(len(candidate.x), size=2, replace=False))
    return {"pair": (first, second)}


PAIR_SCORE = QuestionType(
    "pair-score", pair_score, "The score of a pair of tokens",
    (SETUP, GIVEN, "How much does token {{ spec.pair[0] + 1 }} attend to token "
                   "{{ spec.pair[1] + 1 }}, before softmax?"),
    after={"scores": "Token {{ spec.pair[0] + 1 }} scores token {{ spec.pair[1] + 1 }} at "
                     "${{ part.answer[0] | num }}$."},
    params=(Param("pair", read_pair, write=lambda pair: [token + 1 for token in pair],
                  default=[1, 2]),),
    min_tokens=2, draw_params=draw_pair, in_default_mix=False)


@contextmanager
def registered(kind: QuestionType):
    kinds.register(kind)
    try:
        yield kind
    finally:
        kinds.unregister(kind.name)


@pytest.fixture
def pair_type():
    with registered(PAIR_SCORE):
        yield PAIR_SCORE


def test_a_spec_file_gives_the_types_own_parameter(pair_type):
    spec = spec_from_record({"type": "pair-score", "pair": [3, 1], "X": X, **W}, "p")
    assert spec.params == {"pair": (2, 0)} and spec.pair == (2, 0)
    assert spec_from_record({"type": "pair-score", "X": X, **W}, "p").pair == (0, 1)  # its default
    assert spec_record(spec)["pair"] == [3, 1]  # problems.json writes it as the file did


def test_the_parameter_reaches_the_papers_and_problems_json(tmp_path, run_cli, pair_type):
    code, _, err = run_cli("--spec", spec_file(tmp_path, type="pair-score", pair=[3, 1], X=X, **W),
                           "--format", "md", "--out", tmp_path / "out")
    assert code == 0, err
    record = json.loads((tmp_path / "out" / "problems.json").read_text())["problems"][0]
    assert record["spec"]["pair"] == [3, 1] and record["type"] == "pair-score"
    assert "How much does token 3 attend to token 1, before softmax?" in (
        tmp_path / "out" / "questions.md").read_text()
    assert "Token 3 scores token 1 at 1." in (tmp_path / "out" / "answers.md").read_text()


def test_a_drawn_parameter_is_written_and_read_back_by_record(tmp_path, run_cli, pair_type):
    code, _, err = run_cli("--types", "pair-score", "--count", 3, "--seed", 5, "--out", tmp_path / "set")
    assert code == 0, err
    problems = json.loads((tmp_path / "set" / "problems.json").read_text())["problems"]
    pairs = [problem["spec"]["pair"] for problem in problems]
    assert all(len(set(pair)) == 2 for pair in pairs)
    again = tmp_path / "again"
    code, _, err = run_cli("--problem", problems[2]["id"], "--record", tmp_path / "set" / "problems.json",
                           "--out", again)
    assert code == 0, err
    redone = json.loads((again / "problems.json").read_text())["problems"][0]
    assert redone["spec"] == problems[2]["spec"] and redone["steps"] == problems[2]["steps"]


def test_a_practice_problem_is_drawn_again_by_its_id(tmp_path, run_cli, pair_type):
    code, _, err = run_cli("--types", "pair-score", "--count", 3, "--seed", 5, "--practice",
                           "--out", tmp_path / "set")
    assert code == 0, err
    third = json.loads((tmp_path / "set" / "problems.json").read_text())["problems"][2]
    code, _, err = run_cli("--problem", third["id"], "--types", "pair-score", "--practice",
                           "--out", tmp_path / "redrawn")
    assert code == 0, err
    redrawn = json.loads((tmp_path / "redrawn" / "problems.json").read_text())["problems"][0]
    assert redrawn["spec"] == third["spec"] and "pair" in third["spec"]


@pytest.mark.parametrize("record, message", [
    ({"pair": [2, 2]}, "problem.toml: pair must name two different tokens, e.g. [1, 3]"),
    ({"pair": [1, 4]}, "problem.toml: pair must be a whole number from 1 to 3, got 4"),
    ({"pear": [1, 2]}, "problem.toml: unknown key 'pear'; did you mean 'pair'?"),
])
def test_a_bad_or_unknown_key_is_one_line(tmp_path, run_cli, pair_type, record, message):
    code, _, err = run_cli("--spec", spec_file(tmp_path, type="pair-score", X=X, **W, **record),
                           "--out", tmp_path / "out")
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and "TypeError" not in err


def test_another_types_parameter_is_refused(pair_type):
    with pytest.raises(SpecError, match="pair goes with type pair-score, not full"):
        spec_from_record({"pair": [1, 2], "X": X, **W}, "p")


def test_a_registered_type_comes_after_the_built_in_ones(pair_type):
    assert kinds.type_names() == kinds.BUILT_IN + ("pair-score",)
    assert "pair-score" not in kinds.default_mix()  # it says so: in_default_mix=False


@pytest.mark.parametrize("kind", kinds.BUILT_IN)
def test_every_built_in_types_drawn_parameters_are_read_back_as_written(kind):
    """A drawn problem's params, written to problems.json's spec and read back, are the same."""
    options = draw_options("medium", tokens=(3, 3), d_k=4)
    for spec in sample_set(options, 11, 2, types=(kind,)):
        record = json.loads(json.dumps(spec_record(spec)))
        assert spec_from_record(record, spec.id).params == spec.params


def test_a_type_whose_parameter_or_draw_is_not_its_own_is_refused_at_once():
    """A parameter named like a problem's own key, or a draw of a key not declared, is the
    type's fault: a TypeError naming it, before any file is read or written."""
    with registered(replace(PAIR_SCORE, params=(Param("title", read_pair),))):
        with pytest.raises(TypeError, match="parameter 'title' is taken"):
            spec_from_record({"X": X, **W}, "p")
    with registered(replace(PAIR_SCORE, draw_params=lambda rng, candidate, decimals: {"pear": 1})):
        with pytest.raises(TypeError, match="draws pear, not among its params"):
            sample_set(draw_options("medium"), 1, 1, types=("pair-score",))
