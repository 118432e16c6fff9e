"""The RNG bridge: audit a library that takes a scikit-learn-style ``random_state``.

:func:`dpkit.audit.audit` calls ``mechanism(database, n, rng)`` with a
:class:`numpy.random.Generator`. Libraries in the scikit-learn style (diffprivlib's mechanisms,
tools and models) take a ``random_state`` instead: an int or a legacy
:class:`numpy.random.RandomState`, which a ``Generator`` is not. :func:`random_state_from` seeds
a ``RandomState`` from the audit's generator, so the audit's seed reproduces the library's
outputs; :func:`per_call_mechanism` turns "one release per call" (fit a model, read what it
publishes) into the ``n``-output mechanism the audit wants.

>>> import numpy as np
>>> def noisy_mean(database, random_state):  # a library call that takes random_state
...     return float(np.mean(database) + random_state.laplace(0.0, 0.1))
>>> mechanism = per_call_mechanism(noisy_mean)
>>> first = mechanism([0.0, 1.0], 3, np.random.default_rng(7))
>>> again = mechanism([0.0, 1.0], 3, np.random.default_rng(7))
>>> first.shape, bool(np.array_equal(first, again))
((3,), True)
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

__all__ = ["random_state_from", "per_call_mechanism"]


def random_state_from(rng: np.random.Generator) -> np.random.RandomState:
    """A legacy ``RandomState`` seeded by one 32-bit draw of ``rng``: pass it as ``random_state=``.

    The same audit seed gives the same ``RandomState``, hence the same library outputs.

    >>> a = random_state_from(np.random.default_rng(0)).randint(1000)
    >>> b = random_state_from(np.random.default_rng(0)).randint(1000)
    >>> a == b
    True
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return np.random.RandomState(int(rng.integers(2**32)))


def per_call_mechanism(release: Callable[[Any, np.random.RandomState], Any]
                       ) -> Callable[[Any, int, np.random.Generator], np.ndarray]:
    """The audit mechanism that makes ``n`` releases ``release(database, random_state)``.

    All ``n`` calls share one ``RandomState`` seeded from the audit's ``rng``
    (:func:`random_state_from`). ``release`` returns what the library publishes: a number, or a
    vector of fixed length (say a model's coefficients, raveled). The mechanism returns a float
    array of shape ``(n,)`` or ``(n, d)``.
    """
    def mechanism(database: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        state = random_state_from(rng)
        outputs = [np.asarray(release(database, state), dtype=float).ravel() for _ in range(n)]
        stacked = np.stack(outputs) if outputs else np.empty((0, 1))
        return stacked[:, 0] if stacked.shape[1] == 1 else stacked
    return mechanism
