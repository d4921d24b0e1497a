"""What a checker says to an answer: shared by the exercise tests (test_exercises_lessonNN.py)."""

from __future__ import annotations


def run(check, fn, capsys) -> tuple[bool, str]:
    """Call check(fn); return its verdict and what it printed."""
    ok = check(fn)
    return ok, capsys.readouterr().out


def wrong_answer(check, fn, message, capsys) -> None:
    """The checker rejects fn and names the mistake with `message`."""
    ok, out = run(check, fn, capsys)
    assert ok is False, out
    assert message in out, out
