"""Numbers a problem gives to a few places and is worked exactly from (a row of weights,
a head's outputs), and the parameter that says how many: shared by the types that do, and
registering no type of its own."""

from __future__ import annotations

import numpy as np
import sympy

from generator.kinds import Param
from generator.maths.engine import Num
from generator.maths.exact import shown as shown_text
from generator.maths.spec import SpecError

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


def read_places(places, spec, where: str) -> int:
    """The spec file's ``places``: a whole number from 1 to 6."""
    if not isinstance(places, int) or isinstance(places, bool) or not 1 <= places <= 6:
        raise SpecError(f"{where}: places must be a whole number from 1 to 6, got "
                        f"{shown_text(places)}")
    return places


# Numbers given to that many places, worked exactly from there (no calculator): a row of
# weights, a head's outputs.
PLACES = Param("places", read_places)
