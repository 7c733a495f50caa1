#!/usr/bin/env python3
"""Checks flowshare serve against an independent QUIC stack, aioquic.

    pip install aioquic
    aioquic_check.py amplification HOST:PORT     bytes an unvalidated client draws
    aioquic_check.py get HOST:PORT PATH...       HTTP/3 GETs on one connection, with
                                                 time to first byte and completion

`amplification` sends the first flight of an aioquic client (or only its
first datagram, --datagrams 1) and never answers; it counts every byte that
comes back until the server has been quiet for --quiet seconds, and exits 1
if that is more than three times what was sent (RFC 9000, section 8.1).

`get` fetches the paths over one HTTP/3 connection (certificate not
verified), all requested at once, and prints for each the time to its
first byte and to its end; it exits 1 if any response is not 200 or a
connection error occurs. A Retry from the server is followed as RFC 9000
requires (aioquic does this by itself); --expect-retry exits 1 if none came.
--chacha20 offers ChaCha20-Poly1305 alone (the runner's chacha20 case);
--key-update updates the keys once the handshake is done and fails unless
the server answered in the new key phase (the runner's keyupdate case).

Loopback only: the server is given as 127.0.0.1:PORT or [::1]:PORT.
"""

import argparse
import asyncio
import socket
import ssl
import sys
import time

from aioquic.asyncio import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection
from aioquic.quic.events import ConnectionTerminated, StreamReset
from aioquic import tls
from aioquic.tls import CipherSuite


def address(text):
    host, _, port = text.rpartition(":")
    host = host.strip("[]")
    if host not in ("127.0.0.1", "::1", "localhost"):
        raise argparse.ArgumentTypeError("loopback addresses only")
    return host, int(port)


def amplification(args):
    configuration = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, verify_mode=ssl.CERT_NONE)
    conn = QuicConnection(configuration=configuration)
    conn.connect(args.server, now=time.monotonic())
    flight = [data for data, _ in conn.datagrams_to_send(now=time.monotonic())][: args.datagrams]
    family = socket.AF_INET6 if ":" in args.server[0] else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as sock:
        for datagram in flight:
            sock.sendto(datagram, args.server)
        sent = sum(len(datagram) for datagram in flight)
        sock.settimeout(args.quiet)
        received, datagrams, started = 0, 0, time.monotonic()
        while time.monotonic() - started < 60:
            try:
                data = sock.recv(65535)
            except socket.timeout:
                break
            received += len(data)
            datagrams += 1
    ratio = received / sent if sent else 0.0
    print(f"sent {sent} bytes in {len(flight)} datagram(s), received {received} bytes in {datagrams} ({ratio:.2f} x)")
    return 0 if received <= 3 * sent else 1


class Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic)
        self.waiters = {}
        self.results = {}
        self.retried = False

    def get(self, authority, path):
        stream = self._quic.get_next_available_stream_id()
        headers = [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", authority.encode()),
                   (b":path", path.encode())]
        self.h3.send_headers(stream, headers, end_stream=True)
        self.results[stream] = {"path": path, "sent": time.monotonic(), "first": None, "end": None,
                                "status": None, "bytes": 0, "error": None}
        waiter = self._loop.create_future()
        self.waiters[stream] = waiter
        self.transmit()
        return waiter

    def quic_event_received(self, event):
        if isinstance(event, ConnectionTerminated):
            for stream, waiter in self.waiters.items():
                if not waiter.done():
                    self.results[stream]["error"] = f"connection closed: {event.reason_phrase}"
                    waiter.set_result(None)
            return
        if isinstance(event, StreamReset) and event.stream_id in self.waiters:
            self.results[event.stream_id]["error"] = f"reset with 0x{event.error_code:x}"
            self.waiters[event.stream_id].set_result(None)
            return
        for h3_event in self.h3.handle_event(event):
            result = self.results.get(getattr(h3_event, "stream_id", None))
            if result is None:
                continue
            if result["first"] is None:
                result["first"] = time.monotonic()
            if isinstance(h3_event, HeadersReceived):
                result["status"] = dict(h3_event.headers).get(b":status", b"").decode()
            elif isinstance(h3_event, DataReceived):
                result["bytes"] += len(h3_event.data)
            if h3_event.stream_ended:
                result["end"] = time.monotonic()
                self.waiters[h3_event.stream_id].set_result(None)


async def fetch(args):
    configuration = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, verify_mode=ssl.CERT_NONE,
                                      server_name="localhost")
    if args.chacha20:
        configuration.cipher_suites = [CipherSuite.CHACHA20_POLY1305_SHA256]
    host, port = args.server
    async with connect(host, port, configuration=configuration, create_protocol=Client) as client:
        retried = client._quic._retry_count > 0
        failed = 0
        if args.key_update:
            client._quic.request_key_update()
            client.transmit()
        waiters = [client.get(f"localhost:{port}", path) for path in args.paths]
        await asyncio.wait_for(asyncio.gather(*waiters), timeout=args.timeout)
        suite = client._quic.tls.key_schedule.cipher_suite
        print(f"cipher suite: {suite.name}")
        if args.chacha20 and suite != CipherSuite.CHACHA20_POLY1305_SHA256:
            print("expected ChaCha20-Poly1305")
            failed += 1
        if args.key_update:
            # The server answered in the new key phase if the client could
            # decrypt the responses after its update.
            phase = client._quic._cryptos[tls.Epoch.ONE_RTT].recv.key_phase
            print(f"server key phase after the update: {phase}")
            if phase != 1:
                failed += 1
        for result in client.results.values():
            if result["error"] or result["status"] != "200":
                failed += 1
                print(f"GET {result['path']}: failed: {result['error'] or 'status ' + str(result['status'])}")
                continue
            print(f"GET {result['path']}: {result['bytes']} bytes, first byte after "
                  f"{result['first'] - result['sent']:.3f} s, complete after {result['end'] - result['sent']:.3f} s")
        print(f"retry: {'yes' if retried else 'no'}")
        if args.expect_retry and not retried:
            print("expected a Retry from the server, got none")
            failed += 1
        return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    probe = commands.add_parser("amplification")
    probe.add_argument("server", type=address)
    probe.add_argument("--datagrams", type=int, default=99)
    probe.add_argument("--quiet", type=float, default=3.0)
    get = commands.add_parser("get")
    get.add_argument("server", type=address)
    get.add_argument("paths", nargs="+")
    get.add_argument("--timeout", type=float, default=120.0)
    get.add_argument("--expect-retry", action="store_true")
    get.add_argument("--chacha20", action="store_true")
    get.add_argument("--key-update", action="store_true")
    args = parser.parse_args()
    if args.command == "amplification":
        return amplification(args)
    return asyncio.run(fetch(args))


if __name__ == "__main__":
    sys.exit(main())
