#!/usr/bin/env python3
"""HTTP/3 and hq-interop server and client on aioquic, for the interop runner.

Written for flowshare's container matrix (docker/aioquic/run_endpoint.sh
starts it): a peer built on a QUIC stack that no one in this project wrote.

    endpoint.py server --alpn h3|hq-interop --cc reno|cubic [--www DIR] [--certs DIR] [--port 443]
    endpoint.py client --alpn h3|hq-interop --cc reno|cubic [--mode single|multiconnect]
                       [--downloads DIR] URL...

The server serves files from --www (never outside it) to every connection.
The client fetches the URLs over one connection (single) or one connection
per URL, one after the other (multiconnect), writes each body to
--downloads under the URL's file name, and exits 0 only if every request
got a complete 200 response. SSLKEYLOGFILE and QLOGDIR are honoured.
"""

import argparse
import asyncio
import os
import ssl
import sys
import time
from urllib.parse import urlparse

from aioquic.asyncio import QuicConnectionProtocol, connect, serve
from aioquic.h0.connection import H0_ALPN, H0Connection
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ConnectionTerminated, ProtocolNegotiated
from aioquic.quic.logger import QuicFileLogger

# UDP payload per packet: what fits a 1500-byte path with room to spare,
# as quiche-based endpoints send (aioquic's default is the minimum, 1200).
MAX_DATAGRAM_SIZE = int(os.environ.get("MAX_DATAGRAM_SIZE", "1350"))


def log(message):
    print(f"{time.strftime('%H:%M:%S')} aioquic {message}", flush=True)


def configuration(args, is_client):
    config = QuicConfiguration(
        is_client=is_client,
        alpn_protocols=list(H3_ALPN if args.alpn == "h3" else H0_ALPN),
        congestion_control_algorithm=args.cc,
        max_datagram_size=MAX_DATAGRAM_SIZE,
        idle_timeout=30.0,
        # Receive windows large enough for the bandwidth-delay products of
        # the runner's scenarios (750 ms RTT at 10 Mbit/s is about 1 MB).
        max_data=16 * 1024 * 1024,
        max_stream_data=8 * 1024 * 1024,
    )
    keylog = os.environ.get("SSLKEYLOGFILE")
    if keylog:
        config.secrets_log_file = open(keylog, "a", buffering=1)
    qlog = os.environ.get("QLOGDIR")
    if qlog:
        os.makedirs(qlog, exist_ok=True)
        config.quic_logger = QuicFileLogger(qlog)
    return config


def http_connection(quic, alpn):
    """The HTTP layer for the negotiated ALPN: HTTP/3 or hq-interop, else None."""
    if alpn in H3_ALPN:
        return H3Connection(quic)
    if alpn in H0_ALPN:
        return H0Connection(quic)
    return None


class ServerProtocol(QuicConnectionProtocol):
    """One connection: requests in, files out."""

    www = "/www"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.http = None

    def quic_event_received(self, event):
        if isinstance(event, ProtocolNegotiated):
            self.http = http_connection(self._quic, event.alpn_protocol)
        if self.http is None:
            return
        for http_event in self.http.handle_event(event):
            if isinstance(http_event, HeadersReceived):
                self.request(http_event)

    def request(self, event):
        headers = dict(event.headers)
        method = headers.get(b":method", b"GET")
        path = headers.get(b":path", b"/").decode("utf-8", "replace")
        stream_id = event.stream_id
        if method != b"GET":
            self.respond_error(stream_id, 405)
            return
        # Only files beneath the root, however the path is spelled.
        root = os.path.realpath(self.www)
        target = os.path.realpath(os.path.join(root, path.split("?", 1)[0].lstrip("/")))
        if not target.startswith(root + os.sep) or not os.path.isfile(target):
            log(f"404 {path}")
            self.respond_error(stream_id, 404)
            return
        size = os.path.getsize(target)
        if isinstance(self.http, H3Connection):
            self.http.send_headers(
                stream_id,
                [(b":status", b"200"), (b"content-length", str(size).encode()), (b"server", b"aioquic-flowshare")],
            )
        # aioquic buffers a stream's data until it is acknowledged: hand it
        # the whole body (the runner's largest file is 25 MB).
        with open(target, "rb") as handle:
            self.http.send_data(stream_id, handle.read(), end_stream=True)

    def respond_error(self, stream_id, status):
        if isinstance(self.http, H3Connection):
            self.http.send_headers(stream_id, [(b":status", str(status).encode())], end_stream=True)
        else:
            self.http.send_data(stream_id, b"", end_stream=True)


async def run_server(args):
    config = configuration(args, is_client=False)
    config.load_cert_chain(os.path.join(args.certs, "cert.pem"), os.path.join(args.certs, "priv.key"))
    ServerProtocol.www = args.www
    try:
        await serve("::", args.port, configuration=config, create_protocol=ServerProtocol)
        where = f"[::]:{args.port}"
    except OSError:
        await serve("0.0.0.0", args.port, configuration=config, create_protocol=ServerProtocol)
        where = f"0.0.0.0:{args.port}"
    log(f"server listening on {where} alpn={args.alpn} cc={args.cc} www={args.www}")
    await asyncio.Future()


class ClientProtocol(QuicConnectionProtocol):
    """One connection's requests and the files they fill."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.http = None
        self.requests = {}  # stream id -> [path, file, future, bytes, status]
        self.terminated = None

    def start_http(self, alpn):
        # Normally done at ProtocolNegotiated, before any stream data.
        if self.http is None:
            self.http = H3Connection(self._quic) if alpn == "h3" else H0Connection(self._quic)

    def get(self, url, downloads):
        parsed = urlparse(url)
        name = os.path.basename(parsed.path) or "index.html"
        stream_id = self._quic.get_next_available_stream_id()
        future = asyncio.get_event_loop().create_future()
        handle = open(os.path.join(downloads, name), "wb")
        self.requests[stream_id] = [parsed.path, handle, future, 0, None]
        authority = parsed.netloc.encode()
        self.http.send_headers(
            stream_id,
            [
                (b":method", b"GET"),
                (b":scheme", b"https"),
                (b":authority", authority),
                (b":path", (parsed.path or "/").encode()),
                (b"user-agent", b"aioquic-flowshare"),
            ],
            end_stream=True,
        )
        self.transmit()
        return future

    def quic_event_received(self, event):
        if isinstance(event, ProtocolNegotiated):
            # Before the server's control and QPACK streams arrive.
            self.http = http_connection(self._quic, event.alpn_protocol)
        if isinstance(event, ConnectionTerminated):
            self.terminated = event
            for path, handle, future, received, status in self.requests.values():
                handle.close()
                if not future.done():
                    future.set_exception(
                        RuntimeError(f"{path}: connection closed (error {event.error_code}: {event.reason_phrase})")
                    )
            return
        if self.http is None:
            return
        for http_event in self.http.handle_event(event):
            entry = self.requests.get(http_event.stream_id)
            if entry is None:
                continue
            if isinstance(http_event, HeadersReceived):
                status = dict(http_event.headers).get(b":status")
                entry[4] = status.decode() if status else "200"
                if http_event.stream_ended:
                    self.finish(http_event.stream_id)
            elif isinstance(http_event, DataReceived):
                entry[1].write(http_event.data)
                entry[3] += len(http_event.data)
                if http_event.stream_ended:
                    self.finish(http_event.stream_id)

    def finish(self, stream_id):
        path, handle, future, received, status = self.requests[stream_id]
        handle.close()
        if future.done():
            return
        if status not in (None, "200"):
            future.set_exception(RuntimeError(f"{path}: status {status}"))
        else:
            future.set_result(received)


async def fetch(args, urls):
    """One connection for all of `urls`."""
    first = urlparse(urls[0])
    host, port = first.hostname, first.port or 443
    config = configuration(args, is_client=True)
    config.server_name = host
    config.verify_mode = ssl.CERT_NONE
    started = time.monotonic()
    async with connect(host, port, configuration=config, create_protocol=ClientProtocol) as client:
        client.start_http(args.alpn)
        futures = [client.get(url, args.downloads) for url in urls]
        sizes = await asyncio.gather(*futures)
        elapsed = time.monotonic() - started
        total = sum(sizes)
        log(f"fetched {len(urls)} files, {total} bytes in {elapsed:.3f} s ({8 * total / max(elapsed, 1e-9) / 1e6:.2f} Mbit/s)")
        client.close(error_code=0)
        await client.wait_closed()


async def run_client(args):
    os.makedirs(args.downloads, exist_ok=True)
    if not args.urls:
        raise RuntimeError("REQUESTS is empty")
    if args.mode == "multiconnect":
        for url in args.urls:
            await asyncio.wait_for(fetch(args, [url]), timeout=args.timeout)
    else:
        await asyncio.wait_for(fetch(args, args.urls), timeout=args.timeout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("role", choices=["server", "client"])
    parser.add_argument("--alpn", choices=["h3", "hq-interop"], default="hq-interop")
    parser.add_argument("--cc", choices=["reno", "cubic"], default="cubic")
    parser.add_argument("--www", default="/www")
    parser.add_argument("--certs", default="/certs")
    parser.add_argument("--port", type=int, default=443)
    parser.add_argument("--downloads", default="/downloads")
    parser.add_argument("--mode", choices=["single", "multiconnect"], default="single")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per connection")
    parser.add_argument("urls", nargs="*")
    args = parser.parse_intermixed_args()
    try:
        if args.role == "server":
            asyncio.run(run_server(args))
        else:
            asyncio.run(run_client(args))
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # one line, the way the runner's logs are read
        print(f"aioquic {args.role}: error: {error or type(error).__name__}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
