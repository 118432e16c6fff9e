"""Integer bisection on a monotone predicate, shared by the sample-size searches and the round-count rules."""

from __future__ import annotations

from typing import Callable

__all__ = ["first_passing"]


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
