"""Optional scale-out of an audit on a Dask distributed cluster.

A :class:`distributed.Client` offers a :class:`concurrent.futures.Executor` view of the
cluster (``client.get_executor()``); :func:`~dpkit.audit.audit` accepts any executor, and
batch seeds depend only on *what* is sampled, so an audit on a cluster gives exactly the
result it gives on one core for the same seed. Requires the ``dask`` extra
(``pip install "dpkit[dask]"``); importing this module without it raises ``ImportError``
with that hint.

Example (not run in the doctests)::

    from dask.distributed import Client, LocalCluster
    from dpkit.audit.dask import audit_on_dask
    with LocalCluster(n_workers=4, processes=True) as cluster, Client(cluster) as client:
        result = audit_on_dask(client, mechanism, "statdp", claimed_epsilon=0.7, samples=10**8)

The mechanism, the databases and the events are shipped to the workers by pickling (use
module-level functions, not lambdas, for process-based clusters).
"""

from __future__ import annotations

from typing import Any

try:
    import distributed
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError('dpkit.audit.dask needs Dask distributed: pip install "dpkit[dask]"') from error

from dpkit.audit.api import audit
from dpkit.audit.result import AuditResult

__all__ = ["dask_executor", "audit_on_dask"]


def dask_executor(client: "distributed.Client") -> Any:
    """The :class:`concurrent.futures.Executor` interface of a Dask ``client``."""
    if not isinstance(client, distributed.Client):
        raise TypeError(f"client must be a distributed.Client, got {type(client).__name__}")
    return client.get_executor(pure=False)


def audit_on_dask(client: "distributed.Client", mechanism: Any, pairs: Any, claimed_epsilon: float,
                  **kwargs: Any) -> AuditResult:
    """:func:`~dpkit.audit.audit` with every batch run on the cluster behind ``client``."""
    return audit(mechanism, pairs, claimed_epsilon, executor=dask_executor(client), **kwargs)
