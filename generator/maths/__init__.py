"""Stages 1 and 2, the mathematics: a problem's spec, the steps of attention and the ops
that compute them, the exact engine and its independent numpy cross-check, the
tolerance a student's entry is marked with, and what makes a draw worth setting.

Nothing here renders, writes a file or knows how a run is scheduled.
"""
