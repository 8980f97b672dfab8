"""The NATS JetStream transport: one stream per group (file storage, kept forever, replicated
on up to three servers), batches published with ``Nats-Msg-Id`` so a repeat within the
duplicate window is stored once, one durable pull consumer per device (a new device's starts
at the stream's first message: it receives the whole shared history), and a key-value bucket
holding one status box per device. Subjects and names are tokens of the group key.

After each batch a sender also publishes an empty message on the group's bell subject (plain
NATS, not stored): the other devices' daemons listen there and fetch at once instead of
polling often (a bell missed costs only time: the daemon still polls now and then, and a
restored connection rings too)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nerve.sync.box import token
from nerve.sync.group import SyncError
from nerve.sync.transport import Delivery

if TYPE_CHECKING:
    from nerve.clock import Hlc
    from nerve.sync.group import Group

__all__ = ["NatsBus"]

TIMEOUT_S = 5.0
FETCH_WAIT_S = 0.4  # how long an empty fetch waits for a box
KEYS_EVERY = 30  # status reads between listings of the status bucket's keys


class NatsBus:
    """A connected JetStream transport (see the module docstring)."""

    def __init__(self, nc: Any, js: Any, group_token: str, me: str, replicas: int) -> None:
        self._nc, self._js, self._g, self._me = nc, js, group_token, me
        self._replicas = replicas
        self._sub: Any = None
        self._kv: Any = None
        self._keys: list[str] = []
        self._key_reads = 0
        self._bell: Callable[[], None] | None = None
        self._bell_sub: Any = None

    @classmethod
    async def connect(cls, group: Group, me: str) -> NatsBus:
        """Connect to the group's servers (a comma-separated list is a cluster)."""
        import nats

        servers = [s.strip() for s in group.transport.url.split(",") if s.strip()]
        buses: list[NatsBus] = []

        async def reconnected() -> None:
            for bus in buses:
                bus._ring()  # bells may have been missed while the connection was down

        try:
            nc = await nats.connect(
                servers=servers,
                connect_timeout=2,
                allow_reconnect=True,
                max_reconnect_attempts=2,
                reconnect_time_wait=0.2,
                reconnected_cb=reconnected,
            )
        except Exception as exc:  # nats raises its own tree and OSErrors
            raise SyncError(f"{group.transport.url}: cannot reach NATS ({exc!r})") from None
        bus = cls(
            nc, nc.jetstream(timeout=TIMEOUT_S), token(group.key, "group"), me, min(3, len(servers))
        )
        buses.append(bus)
        await bus._ensure()
        return bus

    @property
    def _stream(self) -> str:
        return f"NERVE_{self._g}"

    async def _ensure(self) -> None:
        """The stream and status bucket exist (made by the first device; idempotent)."""
        from nats.js.api import KeyValueConfig, StorageType, StreamConfig

        config = StreamConfig(
            name=self._stream,
            subjects=[f"nerve.{self._g}.b.>"],
            storage=StorageType.FILE,
            num_replicas=self._replicas,
            duplicate_window=120.0,
        )
        try:
            await self._js.stream_info(self._stream)
        except Exception:
            await _call(self._js.add_stream(config), "create the stream")
        bucket = f"nerve_{self._g}"
        try:
            self._kv = await self._js.key_value(bucket)
        except Exception:
            kv_config = KeyValueConfig(bucket=bucket, history=1, replicas=self._replicas)
            self._kv = await _call(self._js.create_key_value(kv_config), "create the status bucket")

    async def publish(self, sender: str, batch_id: str, last: Hlc, blob: bytes) -> None:
        """Store one batch; acknowledged by the stream (a repeat id is stored once)."""
        subject = f"nerve.{self._g}.b.{sender}"
        headers = {"Nats-Msg-Id": batch_id}
        await _call(self._js.publish(subject, blob, headers=headers, timeout=TIMEOUT_S), "publish")
        with contextlib.suppress(Exception):  # a bell is a hint: the stream has the batch
            await self._nc.publish(f"nerve.{self._g}.n.{sender}", b"")

    async def listen(self, bell: Callable[[], None]) -> bool:
        """Call ``bell`` (in this connection's event loop) when another device publishes a
        batch, or the connection comes back."""
        self._bell = bell

        async def heard(msg: Any) -> None:
            if msg.subject.rsplit(".", 1)[-1] != self._me:
                self._ring()

        if self._bell_sub is None:
            self._bell_sub = await _call(
                self._nc.subscribe(f"nerve.{self._g}.n.*", cb=heard), "listen for bells"
            )
        return True

    @property
    def listening(self) -> bool:
        """True while bells can ring (subscribed, and connected)."""
        return self._bell_sub is not None and bool(self._nc.is_connected)

    def _ring(self) -> None:
        if self._bell is not None:
            self._bell()

    async def fetch(self, positions: dict[str, Hlc], limit: int) -> list[Delivery]:
        """Up to ``limit`` boxes from this device's durable consumer, each acked by ``done``."""
        from nats.errors import TimeoutError as NatsTimeout

        if self._sub is None:
            self._sub = await _call(
                self._js.pull_subscribe(
                    f"nerve.{self._g}.b.>", durable=f"dev_{self._me}", stream=self._stream
                ),
                "subscribe",
            )
        try:
            msgs = await self._sub.fetch(limit, timeout=FETCH_WAIT_S)
        except (TimeoutError, NatsTimeout):
            return []
        except Exception as exc:
            raise SyncError(f"NATS fetch failed ({exc!r})") from None
        return [Delivery(bytes(m.data), _acker(m)) for m in msgs]

    async def put_status(self, sender: str, blob: bytes) -> None:
        await _call(self._kv.put(f"s_{sender}", blob), "write the status")

    async def statuses(self) -> list[bytes]:
        """Every other device's latest status box (the bucket's keys listed again every
        ``KEYS_EVERY`` reads: a device that joined since is seen a little later)."""
        from nats.js.errors import NotFoundError

        if self._key_reads % KEYS_EVERY == 0:
            self._keys = await self._list_keys()
        self._key_reads += 1
        out = []
        for key in self._keys:
            if key == f"s_{self._me}":
                continue  # this device knows its own
            try:
                entry = await self._kv.get(key)
            except NotFoundError:  # deleted, or gone with a lost server's copy
                continue
            except Exception as exc:
                raise SyncError(f"NATS: could not read a status ({exc!r})") from None
            if entry.value:
                out.append(bytes(entry.value))
        return out

    async def _list_keys(self) -> list[str]:
        from nats.js.errors import NoKeysError

        try:
            return sorted(await self._kv.keys())
        except NoKeysError:
            return []
        except Exception as exc:
            raise SyncError(f"NATS status read failed ({exc!r})") from None

    async def close(self) -> None:
        try:
            await asyncio.wait_for(self._nc.close(), 2)
        except Exception:  # closing a broken connection: nothing is left to lose
            return


def _acker(msg: Any) -> Any:
    async def done() -> None:
        try:
            await msg.ack()
        except Exception:  # an ack lost: the box comes again and is ignored then
            return

    return done


async def _call(work: Any, what: str) -> Any:
    """Await a NATS call; any failure becomes a ``SyncError`` naming ``what``."""
    try:
        return await work
    except SyncError:
        raise
    except Exception as exc:
        raise SyncError(f"NATS: could not {what} ({exc!r})") from None
