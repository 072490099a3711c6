"""Size bounds shared by both transports of :mod:`runtime.remote`.

:data:`MAX_MESSAGE_BYTES` is the largest single message either end accepts: gRPC's
``grpc.max_receive_message_length`` / ``grpc.max_send_message_length`` on the driver host and
on the client (:data:`runtime.remote.host.CHANNEL_OPTIONS`), and the default frame limit of the
local transport (host option ``--max-frame-bytes``). Models whose weights do not fit inline
must share memory instead. A bigger message is refused (gRPC: RESOURCE_EXHAUSTED) and the
host keeps serving.
"""
from __future__ import annotations

#: Largest message (bytes) either end of a driver link sends or receives: 256 MiB.
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
