"""The lessons' predict-then-run check: it never raises, and always prints the answer."""

from __future__ import annotations

from jupyter_refs.course import check


def test_an_unanswered_guess_prints_the_answer(capsys):
    assert check(..., "forgotten") is False
    assert capsys.readouterr().out == "[no guess yet] the answer: 'forgotten'\n"


def test_a_right_guess_ignores_case_and_blanks(capsys):
    assert check(" Forgotten", "forgotten", why="the release won") is True
    assert capsys.readouterr().out == "[right] the answer: 'forgotten' (the release won)\n"


def test_a_wrong_guess_says_what_was_guessed(capsys):
    assert check(3, 2) is False
    assert capsys.readouterr().out == "[not quite: you guessed 3] the answer: 2\n"
