#!/usr/bin/env python3
"""A UDP relay that impairs traffic like the interop runner's ns-3 scenarios.

    impair.py --listen 127.0.0.1:PORT --server 127.0.0.1:PORT
              [--delay-ms 15] [--rate-mbit 10] [--queue 25] [--loss 0.02]
              [--blackout ON_S,OFF_S]

Clients send to --listen; each client address gets its own upstream socket
towards --server (as a NAT would), so several connections, one after the
other or at once, keep apart. Both directions share the runner's simple-p2p
shape: a drop-tail queue of --queue packets served at --rate-mbit, then
--delay-ms of propagation; --loss drops that fraction of datagrams at random
in each direction; --blackout 5,2 drops everything for 2 s after every 5 s,
like the runner's blackhole scenario.

Used by local_check.sh where the kernel has no netem. Python's timers are
good to about a tenth of a millisecond, plenty for 10 Mbit/s.
"""

import argparse
import heapq
import random
import selectors
import socket
import time


def address(text):
    host, _, port = text.rpartition(":")
    return (host.strip("[]"), int(port))


class Direction:
    """One direction of the link: queue, serialisation, delay, loss."""

    def __init__(self, args):
        self.rate = args.rate_mbit * 1e6 / 8  # bytes per second
        self.delay = args.delay_ms / 1e3
        self.queue = args.queue
        self.loss = args.loss
        self.departures = []  # departure times of queued datagrams
        self.last_departure = 0.0
        self.dropped = 0

    def admit(self, now, size):
        """The delivery time of a datagram arriving now, or None if dropped."""
        self.departures = [t for t in self.departures if t > now]
        if len(self.departures) >= self.queue or random.random() < self.loss:
            self.dropped += 1
            return None
        departs = max(self.last_departure, now) + size / self.rate
        self.last_departure = departs
        self.departures.append(departs)
        return departs + self.delay


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", type=address, required=True)
    parser.add_argument("--server", type=address, required=True)
    parser.add_argument("--delay-ms", type=float, default=15.0)
    parser.add_argument("--rate-mbit", type=float, default=10.0)
    parser.add_argument("--queue", type=int, default=25)
    parser.add_argument("--loss", type=float, default=0.0)
    parser.add_argument("--blackout", default=None, help="ON_S,OFF_S")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    random.seed(args.seed)
    blackout = tuple(float(x) for x in args.blackout.split(",")) if args.blackout else None

    selector = selectors.DefaultSelector()
    front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    front.bind(args.listen)
    front.setblocking(False)
    selector.register(front, selectors.EVENT_READ, None)
    upstream = {}  # client address -> socket towards the server
    to_client, to_server = Direction(args), Direction(args)
    pending = []  # (deliver_at, sequence, socket, payload, destination)
    sequence = 0
    started = time.monotonic()

    def dark(now):
        if not blackout:
            return False
        on, off = blackout
        return (now - started) % (on + off) >= on

    while True:
        now = time.monotonic()
        timeout = max(0.0, pending[0][0] - now) if pending else 1.0
        for key, _ in selector.select(timeout):
            sock, client = key.fileobj, key.data
            while True:
                try:
                    payload, source = sock.recvfrom(65535)
                except BlockingIOError:
                    break
                now = time.monotonic()
                if client is None:  # from a client, towards the server
                    if source not in upstream:
                        up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                        up.bind((args.listen[0], 0))
                        up.setblocking(False)
                        selector.register(up, selectors.EVENT_READ, source)
                        upstream[source] = up
                    direction, out, destination = to_server, upstream[source], args.server
                else:  # from the server, back to its client
                    direction, out, destination = to_client, front, client
                if dark(now):
                    direction.dropped += 1
                    continue
                deliver_at = direction.admit(now, len(payload))
                if deliver_at is not None:
                    sequence += 1
                    heapq.heappush(pending, (deliver_at, sequence, out, payload, destination))
        now = time.monotonic()
        while pending and pending[0][0] <= now:
            _, _, out, payload, destination = heapq.heappop(pending)
            try:
                out.sendto(payload, destination)
            except OSError:
                pass


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
