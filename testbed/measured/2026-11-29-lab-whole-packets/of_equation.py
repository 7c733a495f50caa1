"""Each flow's rate against RFC 5348's equation, lab and testbed alike.

Usage: python3 of_equation.py GLOB [GLOB ...]   (each GLOB matches summary.json files)

Per flow: its rate in packets per network RTT R (propagation plus the
bottleneck's mean queueing delay: the testbed's `mean_rtt_ms`; for a lab
summary, 40 ms plus the link's `mean_queueing_delay_ms`, this directory's
path) over X(p, R) with b = 1 and t_RTO = 4 R at its own loss event rate p,
the formula of `flowshare testbed equation`. Packets: 1500 bytes in the lab
and for TCP, 1378 for QUIC (quiche's 1350-byte datagram plus IPv4/UDP).
Printed per role: mean p, packets per RTT, of X mean ± standard deviation
over flows, losses per loss event, R.
"""
import glob, json, math, statistics as st, sys

def x(p, t_rto=4.0):
    return 1.0 / (math.sqrt(2 * p / 3) + t_rto * 3 * math.sqrt(3 * p / 8) * p * (1 + 32 * p * p))

for pattern in sys.argv[1:]:
    rows = []
    for path in sorted(glob.glob(pattern, recursive=True)):
        run = json.load(open(path))
        lab = 'transport' not in run['flows'][0]
        for flow in run['flows']:
            p = flow['loss_event_rate']
            if not p:
                continue
            size = 1378 if flow.get('transport') == 'quic' else 1500
            rtt = (40.0 + run['metrics']['links'][0]['mean_queueing_delay_ms']) / 1e3 if lab else flow['mean_rtt_ms'] / 1e3
            w = flow['throughput_bps'] / 8 / size * rtt
            rows.append((flow['role'], p, w, w / x(p), flow['packet_loss_rate'] / p, rtt))
    for role in sorted({r[0] for r in rows}):
        rs = [r for r in rows if r[0] == role]
        mean = lambda i: st.mean(r[i] for r in rs)
        sd = st.stdev(r[3] for r in rs) if len(rs) > 1 else 0.0
        print(f"{pattern}  {role}: {len(rs)} flows, p {mean(1):.4f}, {mean(2):.2f} packets per RTT, "
              f"of X {mean(3):.3f} ± {sd:.3f}, {mean(4):.2f} losses per event, R {mean(5) * 1e3:.1f} ms")
