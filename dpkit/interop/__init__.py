"""Interoperability with peer libraries: dp_accounting events and an Opacus accountant.

This layer uses :mod:`dpkit.accounting` only. Peer libraries are imported lazily inside the
functions that need them, so importing any dpkit module never imports a peer.

- :func:`from_dp_accounting` / :func:`to_dp_accounting` convert between dp_accounting's
  ``DpEvent`` objects and dpkit's :mod:`~dpkit.accounting.events`.
- :class:`dpkit.interop.opacus.DpkitAccountant` has Opacus's accountant interface and
  dpkit's certified PLD (or RDP) behind it, for Poisson-sampled, randomly allocated or shuffled
  batches (``batching=``).
- :class:`dpkit.interop.batching.RandomAllocationBatchSampler` is a PyTorch ``batch_sampler`` for
  random allocation ("balls and bins"; Feldman & Shenfeld 2025, Chua et al. 2025), the batching
  with fixed per-epoch participation and a tight certified guarantee. Torch is imported only
  when it draws, so importing this package never imports torch.
"""

from dpkit.interop.dp_accounting_events import UnconvertibleEventError, from_dp_accounting, to_dp_accounting

__all__ = ["UnconvertibleEventError", "from_dp_accounting", "to_dp_accounting"]
