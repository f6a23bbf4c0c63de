"""Units of work on Dask distributed: a scheduler's address, or ``"auto"`` for a local ``LocalCluster``.

Dask is imported lazily (the ``tsdp[cluster]`` extra). An address is checked before any work
(:func:`check_cluster`): its form, then a TCP connection and the scheduler's first answer, each within
:data:`CONNECT_TIMEOUT_S`, so a wrong or hung address is one error line, not a wait without end.
"""
from __future__ import annotations

import contextlib
import socket
import uuid
from typing import Callable, Optional, Tuple

from tsdp.theorems.config import ConfigError
from tsdp.theorems.errors import MissingExtraError

from .tracker import Tracker

CLUSTER_SCHEMES = ("tcp", "tls")
LOCAL_HOST = "127.0.0.1"
"""Where ``"auto"``'s local cluster (its scheduler and workers) listens: this machine only, no dashboard."""
CONNECT_TIMEOUT_S = 5.0
"""How long a scheduler address may take to accept a TCP connection, and then to send its handshake, before the
run is refused."""


def _dask():
    """dask.distributed, or :class:`MissingExtraError` naming the ``cluster`` extra."""
    try:
        import dask.distributed
    except ImportError:
        raise MissingExtraError("--cluster needs Dask distributed", "cluster") from None
    return dask.distributed


def check_address(address: Optional[str]) -> Optional[Tuple[str, str, int]]:
    """The form of a cluster's address, checked without a connection: None, ``"auto"`` or
    ``[tcp|tls://]host:port`` with a port in 1..65535.

    Args:
        address: The cluster's address (None: none).

    Returns:
        (scheme, host, port) of a scheduler's address; None for None and ``"auto"``.

    Raises:
        ConfigError: Naming ``cluster`` for an address of another form.
    """
    if address is None or address == "auto":
        return None
    scheme, sep, rest = address.strip().rpartition("://")
    if sep and scheme not in CLUSTER_SCHEMES:
        raise ConfigError("cluster", f"scheme must be one of {', '.join(CLUSTER_SCHEMES)} or 'auto'", address)
    host, colon, port = rest.rpartition(":")
    host = host.strip("[]")
    if not colon or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ConfigError("cluster", "must be 'auto' or a scheduler address [tcp://]HOST:PORT with a port in "
                                     "1..65535", address)
    return (scheme if sep else "tcp"), host, int(port)


def check_cluster(address: Optional[str]) -> None:
    """ConfigError naming ``cluster`` unless ``address`` is None, ``"auto"`` or a scheduler's address
    (:func:`check_address`) that accepts a TCP connection and answers it within :data:`CONNECT_TIMEOUT_S` each (a
    Dask scheduler sends its handshake at once; over tls, the TLS handshake), checked before any work (nothing is
    sent over tcp).

    Args:
        address: The cluster's address (None: none).

    Raises:
        ConfigError: Naming ``cluster`` for a bad or unreachable address.
        MissingExtraError: Dask is not installed.
    """
    if address is None:
        return
    _dask()
    parsed = check_address(address)
    if parsed is None:
        return
    scheme, host, port = parsed
    try:
        conn = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S)
    except OSError as exc:
        raise ConfigError("cluster", f"no Dask scheduler accepts connections at {host}:{port} "
                                     f"({exc.strerror or exc or 'timed out'})", address) from None
    with conn:
        silent = _silent(conn, scheme)
    if silent:
        raise ConfigError("cluster", f"the server at {host}:{port} accepts connections but {silent} within "
                                     f"{CONNECT_TIMEOUT_S:g} s: not a Dask scheduler, or a hung one", address)


def _silent(conn: socket.socket, scheme: str) -> Optional[str]:
    """Why the server on ``conn`` is not answering as a Dask scheduler would, or None: over tcp a scheduler sends its
    handshake as soon as it accepts (distributed's own connect then waits for it without a time limit); over tls it
    answers the TLS handshake (an error from it is an answer)."""
    import ssl

    conn.settimeout(CONNECT_TIMEOUT_S)
    try:
        if scheme == "tls":
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
            with contextlib.suppress(ssl.SSLError):
                context.wrap_socket(conn).close()
            return None
        return None if conn.recv(1) else "closed the connection without a Dask handshake"
    except socket.timeout:
        return "sends no Dask handshake" if scheme == "tcp" else "does not answer the TLS handshake"
    except OSError as exc:
        return f"dropped the connection ({exc.strerror or exc})"


def run_dask(tracker: Tracker, fn: Callable, address: str, workers: int) -> None:
    """Run the tracker's pending units on Dask distributed until done or stopped; a failed unit (an error in it, or
    ``KilledWorker``) is submitted again under a new key.

    Args:
        tracker: The run's book.
        fn: The unit of work (picklable).
        address: A scheduler's address, or ``"auto"`` for a ``LocalCluster`` of ``workers`` processes on
            :data:`LOCAL_HOST`.
        workers: The local cluster's processes (``"auto"`` only).

    Raises:
        ConfigError: Naming ``cluster`` when the address does not lead to a Dask scheduler.
    """
    dd = _dask()
    Client, LocalCluster, as_completed = dd.Client, dd.LocalCluster, dd.as_completed
    cluster = None
    if address == "auto":
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                               host=LOCAL_HOST)  # said, not left to distributed's default
        client = Client(cluster)
    else:
        check_cluster(address)
        try:
            client = Client(address, timeout=CONNECT_TIMEOUT_S)
        except (OSError, MemoryError, ValueError, TypeError) as exc:  # accepted TCP but does not speak Dask
            raise ConfigError("cluster", f"the server at {address} is not a Dask scheduler "
                                         f"({type(exc).__name__}: {exc})", address) from None
    token = uuid.uuid4().hex[:8]
    place = {key: i for i, key in enumerate(tracker.specs)}  # a unit's Dask name: its place in the plan, unique
    # whatever its key prints as ((1, 23) and (12, 3) both print "123" with their parts run together)
    try:
        def submit(spec, attempt):
            return client.submit(fn, spec, key=f"tsdp-shard-{token}-{place[spec.key]}-{attempt}", pure=False)

        futures, initial = {}, []
        for spec in tracker.pending():
            fut = submit(spec, 0)
            futures[fut.key] = spec
            initial.append(fut)
        queue = as_completed(initial)
        for fut in queue:
            spec = futures.pop(fut.key)
            if fut.status == "finished":
                tracker.done(fut.result())
            else:
                try:
                    fut.result()
                except Exception as exc:  # noqa: BLE001 - KilledWorker, an error in the unit: re-run
                    tracker.failed(spec.key, exc)
                new = submit(spec, tracker.attempts.get(spec.key, 0) + 1)
                futures[new.key] = spec
                queue.add(new)
            if tracker.stopped:
                client.cancel([f for f in queue.futures])
                break
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


__all__ = ["CLUSTER_SCHEMES", "CONNECT_TIMEOUT_S", "LOCAL_HOST", "check_address", "check_cluster", "run_dask"]
