"""The lessons' helpers: the predict-then-run check (never raises, always prints the answer)
and the form of #8576 read from a trace."""

from __future__ import annotations

import pytest
from helpers import inc

from jupyter_refs import explore, replay
from jupyter_refs.course import check, form_of_8576
from jupyter_refs.explore import fingerprint


def test_an_unanswered_guess_prints_the_answer(capsys):
    assert check(..., "forgotten") is False
    assert capsys.readouterr().out == "[no guess yet] the answer: 'forgotten'\n"


def test_a_right_guess_ignores_case_and_blanks(capsys):
    assert check(" Forgotten", "forgotten", why="the release won") is True
    assert capsys.readouterr().out == "[right] the answer: 'forgotten' (the release won)\n"


def test_a_wrong_guess_says_what_was_guessed(capsys):
    assert check(3, 2) is False
    assert capsys.readouterr().out == "[not quite: you guessed 3] the answer: 2\n"


def _scatter_race(client):
    x = client.scatter(123)
    del x
    x = client.scatter(123)
    client.submit(inc, x)


@pytest.mark.parametrize(("schedule", "form"), [
    ("0>1,1>1,2>1", "A"),  # the scatter's three messages overtake the release
    ("2>1,4>1", "B"),  # the put overtakes the free-keys of the key's previous life
    ("4>1", "C"),  # the put's reply overtakes the worker's release-worker-data of the old copy
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
