"""The lessons' helpers: predictions that commit (``predict`` raises until there is a guess; tests
fill them from an answers file), the check (prints a sentence, returns nothing), ``%%solution``,
and the form of #8576 read from a trace."""

from __future__ import annotations

import pytest
from helpers import inc

from jupyter_refs import explore, replay
from jupyter_refs.course import ANSWERS_ENV, NoGuessError, check, form_of_8576, predict
from jupyter_refs.explore import fingerprint


def test_an_unanswered_guess_prints_the_answer(capsys):
    assert check(..., "forgotten") is None  # a cell ending in a check echoes nothing
    assert capsys.readouterr().out == "[no guess yet] the answer: 'forgotten'\n"


def test_a_right_guess_ignores_case_and_blanks(capsys):
    check(" Forgotten", "forgotten", why="the release won")
    assert capsys.readouterr().out == "[right] the answer: 'forgotten' (the release won)\n"


@pytest.mark.parametrize("guess, actual", [
    ("CancelledError", "FutureCancelledError"), ("cancellederror", "FutureCancelledError"),
    ("[41]", [41]), (" 0 ", 0), ("True", True), ("{'A', 'B'}", {"A", "B"}), ({"a", "b"}, {"A", "B"}),
    # review 4: a list for a tuple (order compared), a list for a set, case inside sequences
    (["cancelled", "processing"], ("cancelled", "processing")),
    (("Cancelled", "processing "), ("cancelled", "processing")),
    (["Cancelled", "PROCESSING"], ("cancelled", "processing")),
    ("['Cancelled', 'processing']", ("cancelled", "processing")),
    (["dangling_future"], {"dangling_future"}), (["B", "a"], {"A", "B"}),
    (("b", "A"), {"A", "B"}),
    (("inc-1", "Inc-2"), ["inc-1", "inc-2"]),
])
def test_obvious_aliases_are_right(capsys, guess, actual):
    check(guess, actual)
    assert capsys.readouterr().out.startswith("[right] the answer: ")


@pytest.mark.parametrize("guess, actual", [
    ("Error", "FutureCancelledError"), ("ledError", "FutureCancelledError"), ("[42]", [41]),
    ("not python", [41]), ("1", "10"), ({"A"}, {"A", "B"}),
    # a tuple's order is still compared; a list for a set holds each name once, all of them
    (["processing", "cancelled"], ("cancelled", "processing")), (["A"], {"A", "B"}),
    (["A", "A", "B"], {"A", "B"}), (["A", "B", "C"], {"A", "B"}),
])
def test_aliases_stay_narrow(capsys, guess, actual):
    check(guess, actual)
    assert capsys.readouterr().out.startswith("[not quite: ")


def test_a_wrong_guess_says_what_was_guessed(capsys):
    check(3, 2)
    assert capsys.readouterr().out == "[not quite: you guessed 3] the answer: 2\n"


def test_a_prediction_raises_until_there_is_a_guess(monkeypatch):
    monkeypatch.delenv(ANSWERS_ENV, raising=False)
    with pytest.raises(NoGuessError, match="prediction '01-state': write your guess"):
        predict(..., "01-state")
    assert predict("forgotten", "01-state") == "forgotten"
    # IPython shows one line, not a traceback
    try:
        predict(..., "01-state")
    except NoGuessError as exc:
        [line] = exc._render_traceback_()
        assert line.startswith("NoGuessError: prediction '01-state'")


def test_the_tests_fill_the_guesses_from_a_file(tmp_path, monkeypatch):
    answers = tmp_path / "answers.txt"
    answers.write_text('{"02-raised": {"y", "g"}, "01-state": "forgotten"}')
    monkeypatch.setenv(ANSWERS_ENV, str(answers))
    assert predict(..., "02-raised") == {"y", "g"}
    assert predict("memory", "01-state") == "memory"  # a student's own guess wins
    with pytest.raises(NoGuessError, match="has no '03-x'"):
        predict(..., "03-x")


def test_a_solution_runs_only_on_purpose(monkeypatch, capsys):
    pytest.importorskip("IPython")
    from IPython.testing.globalipapp import get_ipython

    from jupyter_refs.course import load_magics

    shell = get_ipython()
    load_magics(shell)
    monkeypatch.delenv(ANSWERS_ENV, raising=False)
    shell.run_cell_magic("solution", "2", "ran = 'yes'\nprint('the solution ran')")
    out = capsys.readouterr().out
    assert "the solution ran" not in out and "%%solution 2 run" in out
    shell.run_cell_magic("solution", "2 run", "print('the solution ran')")
    assert "the solution ran" in capsys.readouterr().out
    # a lesson's reading question (the capstone's "Question 1/2"), said as a question
    shell.run_cell_magic("solution", "question 1", "print('the answer ran')")
    out = capsys.readouterr().out
    assert "the answer ran" not in out and out.startswith("Question 1's solution is in this cell")
    assert "Try the question first" in out and "`%%solution question 1 run`" in out
    shell.run_cell_magic("solution", "question 1 run", "print('the answer ran')")
    assert "the answer ran" in capsys.readouterr().out


def _scatter_race(client):
    x = client.scatter(123)
    del x
    x = client.scatter(123)
    client.submit(inc, x)


@pytest.mark.parametrize(("schedule", "form"), [
    # (since the scatter's second key-in-memory, 30078e3, every decision after the first
    # scatter's comes one later)
    ("1>1,2>1,3>1", "A"),  # the scatter's three messages overtake the release
    ("3>1,5>1", "B"),  # the put overtakes the free-keys of the key's previous life
    ("5>1", "C"),  # the put's reply overtakes the worker's release-worker-data of the old copy
])
def test_the_forms_of_8576_from_the_trace(schedule, form):
    run = replay(_scatter_race, f"dask@{fingerprint(_scatter_race)}:{schedule}")
    [violation, *_] = run.violations
    assert violation.name == "dangling_future"
    assert form_of_8576(run.trace, violation.key) == form


def test_every_failure_of_the_race_has_a_form():
    result = explore(_scatter_race, protocol="dask", bound=2, sample=False, max_schedules=2000)
    forms = {form_of_8576(f.run.trace, f.violations[0].key) for f in result.failures}
    assert forms == {"A", "B", "C"}


def test_a_message_names_its_channel_once():
    """Review 4: ``cluster.in_flight`` printed as a list showed an RPC's channel twice."""
    from jupyter_refs.protocol.messages import Message

    rpc = Message("client:1", "scheduler", "scatter", "rpc:client:1#1", False, ("k",), msg_id=1)
    assert repr(rpc) == "<Message #1 scatter[k] client:1->scheduler on rpc:client:1#1>"
    stream = Message("client:1", "scheduler", "cancel-keys", "client:1->scheduler", True, ("k",),
                     msg_id=2)
    assert repr(stream) == "<Message #2 cancel-keys[k] client:1->scheduler on client:1->scheduler>"
