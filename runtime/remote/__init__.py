"""Drivers out of process: the HAL over gRPC (``hal.proto``, the contract), a host that serves
any Python driver (:mod:`.host`), client proxies implementing ``IDevice`` (:mod:`.proxy`), the
link that detects a driver process's death or hang and restarts it (:mod:`.link`), and the
client side's settings and device cache (:mod:`.client`).

Driver specs ``process:NAME`` (run driver NAME in its own process) and ``endpoint:ADDRESS``
(a driver host someone else started, gRPC address ``unix:/path.sock`` or ``host:port``; over
TCP with the mutual-TLS files of :func:`.client.set_endpoint_tls`, see :mod:`.access`) are
understood by :func:`runtime.loader.load_driver`. Needs the ``remote`` extra
(``pip install 'nncts[remote]'``).
"""
