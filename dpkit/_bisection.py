"""Bisection on a monotone predicate: over integers (sample sizes, round counts) and over reals (ε and ρ thresholds)."""

from __future__ import annotations

from typing import Callable

__all__ = ["first_passing", "threshold_bracket", "bisect_to_adjacent_floats"]


def first_passing(passes: Callable[[int], bool], low: int, high: int, relative: int = 0) -> int:
    """The smallest ``k`` in ``(low, high]`` with ``passes(k)``, for a predicate that is False up to
    some point and True after it, given that ``passes(high)`` holds and treating ``low`` as failing.

    With ``relative = r > 0`` the search stops once the bracket is at most ``max(1, low // r)``
    wide, so the answer passes and is within a factor ``1 + 1/r`` of the smallest passing ``k``
    (cheaper when each call is expensive).

    >>> first_passing(lambda k: k * k >= 50, 0, 100)
    8
    >>> first_passing(lambda k: k >= 12_345, 1, 10**6, relative=1000) - 12_345 <= 12
    True
    """
    while high - low > (max(1, low // relative) if relative else 1):
        middle = (low + high) // 2
        if passes(middle):
            high = middle
        else:
            low = middle
    return high


def threshold_bracket(passes: Callable[[float], bool], low: float, high: float, *, absolute: float = 0.0,
                      relative: float = 0.0, steps: int = 200) -> tuple[float, float]:
    """A bracket ``(low, high)`` around the point where a monotone ``passes`` turns True, given that
    ``passes(high)`` holds and ``low`` fails: halved until ``high − low ≤ max(absolute, relative·|low|)``
    or for ``steps`` halvings, whichever comes first. ``high`` always passes and ``low`` always fails,
    so a caller keeps the end on its safe side.

    >>> low, high = threshold_bracket(lambda x: x * x >= 2.0, 1.0, 2.0, absolute=1e-9)
    >>> low * low < 2.0 <= high * high, high - low <= 1e-9
    (True, True)
    """
    for _ in range(steps):
        if high - low <= max(absolute, relative * abs(low)):
            break
        middle = 0.5 * (low + high)
        if passes(middle):
            high = middle
        else:
            low = middle
    return low, high


def bisect_to_adjacent_floats(passes: Callable[[float], bool], failing: float, passing: float) -> float:
    """The passing end once ``failing < passing`` are adjacent floats, for a monotone ``passes``
    that is False at ``failing`` and True at ``passing``: the boundary to the last bit.

    >>> x = bisect_to_adjacent_floats(lambda x: x * x >= 2.0, 1.0, 2.0)
    >>> x * x >= 2.0 > (x - x * 2.0**-52) ** 2
    True
    """
    while True:
        middle = failing + (passing - failing) / 2.0
        if not failing < middle < passing:
            return passing
        if passes(middle):
            passing = middle
        else:
            failing = middle
