"""Numbers a problem gives to a few places and is worked exactly from (a row of weights,
a head's outputs): shared by the types that do, and registering no type of its own, so that
importing it leaves the types' order (the default mix) as generator/__init__.py sets it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import sympy

from ..engine import Num
from ..exact import shown as shown_text
from ..spec import SpecError

SHORT_PLACES = 2  # without a calculator, the row of weights a is given to two places


def to_places(numbers, places: int) -> tuple[Num, ...]:
    """Each number rounded to ``places``, as an exact decimal to work on from."""
    units = rounded_units([n.value for n in numbers], places)
    return tuple(Num(sympy.Rational(u, 10**places), u / 10**places) for u in units)


def rounded_units(weights, places: int) -> list[int]:
    """Each weight rounded to ``places``, in units of 10^-places (halves up)."""
    return [int(np.floor(w * 10**places + 0.5)) for w in weights]


def short_places(rng, candidate, params: dict, decimals: int) -> dict:
    """Without a calculator, a type that works on from decimals it rounds (the heads'
    outputs before W_O) takes them to two places."""
    return {"places": SHORT_PLACES}


def read_places(spec, record: dict, where: str):
    """``places``: the row of weights given to that many places (no calculator)."""
    if "places" not in record:
        return spec
    places = record["places"]
    if not isinstance(places, int) or isinstance(places, bool) or not 1 <= places <= 6:
        raise SpecError(f"{where}: places must be a whole number from 1 to 6, got "
                        f"{shown_text(places)}")
    return replace(spec, places=places)
