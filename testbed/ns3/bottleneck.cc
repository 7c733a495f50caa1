// The testbed's emulated network (Debian's ns-3.37), run by
// `flowshare testbed` inside the `sim` network namespace.
//
// Real packets from Linux endpoints enter ns-3 through EmuFdNetDevices (raw
// sockets on the sim namespace's veths), cross one or more point-to-point
// bottlenecks with the requested rate, delay and queue, and leave on the
// other side: the way the QUIC network simulator's scenarios emulate a link,
// with the same `--delay --bandwidth --queue` vocabulary (comma lists, one
// entry per link, for the two-bottleneck topology).
//
//   client ns            sim ns (this program)                   server ns
//   c0 198.18.0.100 -- l0 [left 0] ==link 0== [    ] -- r0 -- s0 198.19.0.100
//   c1 198.18.1.100 -- l1 [left 1] ==link 1== [right]
//
// Each link has its own left node, so both directions of a flow that uses
// link i (chosen by the client address 198.18.i.100) cross link i only.
// The server-to-client direction ("down") is the measured one: its queue
// disc is the bottleneck buffer, its receive side applies random loss.
// Blackholes drop everything in both directions.
//
// Self-monitoring, so that CPU starvation is never mistaken for bottleneck
// loss: every interval, the lag of real time behind simulated time (on the
// monotonic clock and on the system clock, whichever lags more), the
// raw sockets' kernel drop counters (PACKET_STATISTICS), and per flow the
// bytes the bottleneck delivered, its queue drops and its link drops.
//
// Control on stdin, one command per line: `stop`, `blackhole LINK on|off`,
// `cbr PORT on|off`. End of input also stops (the runner died).
//
// Outputs: `ready` on stdout once running; --series (per-flow rows each
// interval), --monitor (lag and queues each interval) and --summary (JSON
// at the end).
//
// The container image flowshare-sim (docker/sim/run.sh) runs the same
// program in the QUIC network simulator's role, with the runner's scenario
// vocabulary: --scenario=simple-p2p|blackhole|drop-rate|corrupt-rate,
// --on/--off/--repeat (blackhole), --rate_to_server/--rate_to_client in
// percent and --burst_to_server/--burst_to_client (drop-rate: at most that
// many drops in a row; corrupt-rate: one byte of the UDP payload changed,
// checksum fixed, so the endpoint sees a corrupted QUIC packet), --pcap=DIR
// (trace_node_left.pcap, trace_node_right.pcap of the emulated devices),
// --readyPort (ns-3 itself accepts TCP connections there once it runs),
// --stdin=false (no control on stdin), and --waitQuic=HOST:PORT, which only
// waits until a QUIC server answers a probe with Version Negotiation and
// exits (0 answered, 1 not within --waitSeconds).
//
// Build: testbed/ns3/build.sh.

#include "ns3/core-module.h"
#include "ns3/emu-fd-net-device-helper.h"
#include "ns3/fd-net-device.h"
#include "ns3/internet-module.h"
#include "ns3/ipv4-queue-disc-item.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <csignal>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <linux/if_packet.h>
#include <map>
#include <memory>
#include <net/ethernet.h>
#include <net/if.h>
#include <netdb.h>
#include <poll.h>
#include <random>
#include <sstream>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace ns3;

namespace
{

// Kernel receive buffer of each raw socket: at 200 Mbit/s a 100 ms stall of
// the reader thread is 2.5 MB.
const int kRawSocketBuffer = 16 * 1024 * 1024;
// Size of CBR packets on the wire (IP), bytes: the lab's packet size.
const uint32_t kCbrPacketBytes = 1500;
// Real time behind simulated time beyond this counts as a late tick.
const double kLateMs = 5.0;

std::atomic<bool> g_stop{false};

void
OnSignal(int)
{
    g_stop.store(true);
}

std::vector<std::string>
Split(const std::string& text, char separator)
{
    std::vector<std::string> items;
    std::stringstream stream(text);
    std::string item;
    while (std::getline(stream, item, separator))
    {
        if (!item.empty())
        {
            items.push_back(item);
        }
    }
    return items;
}

[[noreturn]] void
Fail(const std::string& message)
{
    std::cerr << "bottleneck: " << message << std::endl;
    std::exit(2);
}

double
WallSecondsSinceEpoch()
{
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// One bottleneck as given on the command line.
struct LinkConfig
{
    DataRate rate;
    Time delay;
    uint32_t queuePackets;
    std::string qdisc;
    double loss;
};

// A flow as the classifier sees it: link, direction, IPv4 5-tuple.
struct FlowKey
{
    uint32_t link;
    char direction; // 'd' server to client, 'u' client to server
    uint8_t protocol;
    uint32_t source;
    uint32_t destination;
    uint16_t sourcePort;
    uint16_t destinationPort;

    bool operator<(const FlowKey& other) const
    {
        return std::tie(link, direction, protocol, source, destination, sourcePort, destinationPort) <
               std::tie(other.link,
                        other.direction,
                        other.protocol,
                        other.source,
                        other.destination,
                        other.sourcePort,
                        other.destinationPort);
    }
};

struct FlowCounters
{
    uint64_t bytes = 0;
    uint64_t packets = 0;
    uint64_t queueDrops = 0;
    uint64_t linkDrops = 0;
    uint64_t lossEvents = 0;
};

struct FlowTotals
{
    FlowCounters counters;
    // Start of the current loss event: drops more than one loss-event
    // window after it open a new one (the TFRC definition, RFC 5348
    // section 5.2, with the link's worst-case RTT as the window).
    double lastEventStart = -1e9;
};

std::string
Dotted(uint32_t address)
{
    std::ostringstream out;
    out << ((address >> 24) & 0xff) << '.' << ((address >> 16) & 0xff) << '.' << ((address >> 8) & 0xff)
        << '.' << (address & 0xff);
    return out.str();
}

// Reads the IPv4 5-tuple from raw bytes starting at the IP header.
bool
ParseIpv4(const uint8_t* ip, uint32_t length, FlowKey& key)
{
    if (length < 20 || (ip[0] >> 4) != 4)
    {
        return false;
    }
    uint32_t headerLength = (ip[0] & 0x0f) * 4;
    key.protocol = ip[9];
    key.source = (uint32_t(ip[12]) << 24) | (uint32_t(ip[13]) << 16) | (uint32_t(ip[14]) << 8) | ip[15];
    key.destination = (uint32_t(ip[16]) << 24) | (uint32_t(ip[17]) << 16) | (uint32_t(ip[18]) << 8) | ip[19];
    key.sourcePort = 0;
    key.destinationPort = 0;
    if ((key.protocol == 6 || key.protocol == 17) && length >= headerLength + 4)
    {
        const uint8_t* l4 = ip + headerLength;
        key.sourcePort = uint16_t((l4[0] << 8) | l4[1]);
        key.destinationPort = uint16_t((l4[2] << 8) | l4[3]);
    }
    return true;
}

// Random loss and blackhole on the receive side of a link.
class PathErrorModel : public ErrorModel
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid =
            TypeId("flowshare::PathErrorModel").SetParent<ErrorModel>().AddConstructor<PathErrorModel>();
        return tid;
    }

    PathErrorModel()
        : m_random(CreateObject<UniformRandomVariable>())
    {
    }

    void Configure(double loss, const std::atomic<bool>* blackhole)
    {
        m_loss = loss;
        m_blackhole = blackhole;
    }

    // The runner's drop-rate (probability, at most maxBurst drops in a row,
    // 0 for no limit) and corrupt-rate (probability) scenarios.
    void ConfigureScenario(double dropRate, uint32_t maxBurst, double corruptRate)
    {
        m_dropRate = dropRate;
        m_maxBurst = maxBurst;
        m_corruptRate = corruptRate;
    }

    uint64_t Corrupted() const
    {
        return m_corrupted;
    }

  private:
    bool DoCorrupt(Ptr<Packet> packet) override
    {
        if (m_blackhole && m_blackhole->load(std::memory_order_relaxed))
        {
            return true;
        }
        if (m_loss > 0 && m_random->GetValue() < m_loss)
        {
            return true;
        }
        if (m_dropRate > 0)
        {
            if (m_random->GetValue() < m_dropRate && (m_maxBurst == 0 || m_run < m_maxBurst))
            {
                m_run += 1;
                return true;
            }
            m_run = 0;
        }
        if (m_corruptRate > 0 && m_random->GetValue() < m_corruptRate && CorruptUdp(packet))
        {
            m_corrupted += 1;
        }
        return false;
    }

    // Changes one byte of a UDP payload (after the first, so that a QUIC
    // packet keeps its header form) and fixes the UDP checksum, so that the
    // receiver's kernel delivers the damaged datagram. The packet starts
    // with the 2-byte PPP header. Returns whether it was UDP over IPv4.
    bool CorruptUdp(Ptr<Packet> packet)
    {
        uint32_t size = packet->GetSize();
        if (size < 2 + 20 + 8 + 2)
        {
            return false;
        }
        std::vector<uint8_t> bytes(size);
        packet->CopyData(bytes.data(), size);
        uint8_t* ip = bytes.data() + 2;
        uint32_t headerLength = (ip[0] & 0x0f) * 4;
        if ((ip[0] >> 4) != 4 || ip[9] != 17 || size < 2 + headerLength + 8 + 2)
        {
            return false;
        }
        uint8_t* udp = ip + headerLength;
        uint32_t udpLength = (uint32_t(udp[4]) << 8) | udp[5];
        if (udpLength < 8 + 2 || 2 + headerLength + udpLength > size)
        {
            return false;
        }
        uint32_t payload = udpLength - 8;
        uint32_t offset = 1 + uint32_t(m_random->GetInteger(0, payload - 2));
        udp[8 + offset] ^= uint8_t(m_random->GetInteger(1, 255));
        // RFC 768 checksum over the pseudo-header and the datagram.
        udp[6] = 0;
        udp[7] = 0;
        uint64_t sum = 0;
        for (int i = 12; i < 20; i += 2)
        {
            sum += (uint32_t(ip[i]) << 8) | ip[i + 1];
        }
        sum += 17 + udpLength;
        for (uint32_t i = 0; i + 1 < udpLength; i += 2)
        {
            sum += (uint32_t(udp[i]) << 8) | udp[i + 1];
        }
        if (udpLength % 2)
        {
            sum += uint32_t(udp[udpLength - 1]) << 8;
        }
        while (sum >> 16)
        {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        uint16_t checksum = uint16_t(~sum & 0xffff);
        if (checksum == 0)
        {
            checksum = 0xffff;
        }
        udp[6] = uint8_t(checksum >> 8);
        udp[7] = uint8_t(checksum & 0xff);
        packet->RemoveAtEnd(size);
        packet->AddAtEnd(Create<Packet>(bytes.data(), size));
        return true;
    }

    void DoReset() override
    {
    }

    double m_loss = 0;
    double m_dropRate = 0;
    uint32_t m_maxBurst = 0;
    uint32_t m_run = 0;
    double m_corruptRate = 0;
    uint64_t m_corrupted = 0;
    const std::atomic<bool>* m_blackhole = nullptr;
    Ptr<UniformRandomVariable> m_random;
};

// Waits until a QUIC server at HOST:PORT answers a probe, a 1200-byte
// datagram with a long header of a reserved version (RFC 9000 section 15),
// which a server answers with Version Negotiation. Returns whether it did
// within `seconds`.
bool
WaitForQuicServer(const std::string& target, double seconds)
{
    size_t colon = target.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == target.size())
    {
        Fail("--waitQuic must be HOST:PORT, got " + target);
    }
    std::string host = target.substr(0, colon);
    std::string port = target.substr(colon + 1);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    std::mt19937 random(std::random_device{}());
    std::vector<uint8_t> probe(1200, 0);
    probe[0] = 0xc0;
    probe[1] = 0x1a, probe[2] = 0x2a, probe[3] = 0x3a, probe[4] = 0x4a;
    probe[5] = 8;
    for (int i = 0; i < 8; ++i)
    {
        probe[6 + i] = uint8_t(random());
    }
    probe[14] = 8;
    for (int i = 0; i < 8; ++i)
    {
        probe[15 + i] = uint8_t(random());
    }
    while (std::chrono::steady_clock::now() < deadline)
    {
        addrinfo hints{};
        hints.ai_family = AF_INET;
        hints.ai_socktype = SOCK_DGRAM;
        addrinfo* found = nullptr;
        if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) == 0 && found)
        {
            int fd = socket(found->ai_family, found->ai_socktype, found->ai_protocol);
            if (fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
                send(fd, probe.data(), probe.size(), 0) == ssize_t(probe.size()))
            {
                pollfd waiting{fd, POLLIN, 0};
                uint8_t answer[1500];
                if (poll(&waiting, 1, 300) == 1 && recv(fd, answer, sizeof(answer), 0) > 0)
                {
                    close(fd);
                    freeaddrinfo(found);
                    std::cout << "bottleneck: " << target << " answered" << std::endl;
                    return true;
                }
            }
            if (fd >= 0)
            {
                close(fd);
            }
            freeaddrinfo(found);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
}

NS_OBJECT_ENSURE_REGISTERED(PathErrorModel);

// The down flow key of a queued packet: its IPv4 5-tuple on `link`.
FlowKey
DownKey(uint32_t link, Ptr<const QueueDiscItem> item)
{
    FlowKey key{link, 'd', 0, 0, 0, 0, 0};
    Ptr<const Ipv4QueueDiscItem> ipv4 = DynamicCast<const Ipv4QueueDiscItem>(item);
    if (!ipv4)
    {
        return key;
    }
    const Ipv4Header& header = ipv4->GetHeader();
    key.protocol = header.GetProtocol();
    key.source = header.GetSource().Get();
    key.destination = header.GetDestination().Get();
    uint8_t ports[4];
    if ((key.protocol == 6 || key.protocol == 17) && ipv4->GetPacket()->CopyData(ports, 4) == 4)
    {
        key.sourcePort = uint16_t((ports[0] << 8) | ports[1]);
        key.destinationPort = uint16_t((ports[2] << 8) | ports[3]);
    }
    return key;
}

// How many maximum jitters a drifting delay takes from one drawn value to
// the next: the lab's DRIFT_PERIODS (lab/src/setup.rs), so that a flow's
// spacing never changes by more than a tenth while its phase against the
// bottleneck's departures wanders over the whole range.
const double kDriftPeriods = 10;

// The down queue of every bottleneck: the buffer (a FIFO or RED child queue
// disc) and, in front of it, what holds a packet back before it joins.
//
// * Access jitter (--jitter, --jitterShape): each flow (5-tuple) waits up to
//   --jitter more, never overtaking its own earlier packets, as the lab's
//   access jitter does (lab/src/flow.rs): `drift` moves linearly between
//   values drawn uniformly every kDriftPeriods maximum jitters, `per-packet`
//   draws each packet's own. Without it every sender is acknowledgement
//   clocked by a bottleneck whose service time is exact, so which flow's
//   packet finds the slot a departure frees depends on how soon its stack
//   answers, modulo the service time (the phase effect of drop-tail
//   gateways, Floyd and Jacobson 1992; testbed/README.md).
// * --tcpDelay: the server's TCP packets wait that long more, as if Linux
//   TCP answered its acknowledgements that much later (the experiment of
//   "Weight one between stacks" in testbed/README.md).
//
// A held packet counts nowhere until it joins the buffer: the buffer's
// enqueues, dequeues and drops are this queue disc's (ns-3 passes a child's
// to its parent), so the queue lengths, drops and sojourn times the testbed
// reports are the buffer's.
class AccessQueueDisc : public QueueDisc
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid =
            TypeId("flowshare::AccessQueueDisc")
                .SetParent<QueueDisc>()
                .AddConstructor<AccessQueueDisc>()
                .AddAttribute("Jitter",
                              "the most a flow's packet waits before it joins the buffer",
                              TimeValue(Seconds(0)),
                              MakeTimeAccessor(&AccessQueueDisc::m_jitter),
                              MakeTimeChecker())
                .AddAttribute("Drift",
                              "whether the jitter drifts (true) or is drawn per packet (false)",
                              BooleanValue(true),
                              MakeBooleanAccessor(&AccessQueueDisc::m_drift),
                              MakeBooleanChecker())
                .AddAttribute("TcpDelay",
                              "how long a TCP packet waits more before it joins the buffer",
                              TimeValue(Seconds(0)),
                              MakeTimeAccessor(&AccessQueueDisc::m_tcpDelay),
                              MakeTimeChecker())
                .AddAttribute("Link",
                              "the link's index, for the flow keys and the random stream",
                              UintegerValue(0),
                              MakeUintegerAccessor(&AccessQueueDisc::m_link),
                              MakeUintegerChecker<uint32_t>())
                .AddAttribute("Seed",
                              "the run's seed, from which the jitter is drawn",
                              UintegerValue(1),
                              MakeUintegerAccessor(&AccessQueueDisc::m_seed),
                              MakeUintegerChecker<uint64_t>());
        return tid;
    }

    AccessQueueDisc()
        : QueueDisc(QueueDiscSizePolicy::SINGLE_CHILD_QUEUE_DISC)
    {
    }

  private:
    // A flow's drifting delay: the period it is in and the delays drawn for
    // its start and end, and when its last packet joins.
    struct FlowAccess
    {
        int64_t period = -1;
        double start = 0;
        double end = 0;
        Time lastJoin;
    };

    bool DoEnqueue(Ptr<QueueDiscItem> item) override
    {
        Time now = Simulator::Now();
        Time wait = m_tcpDelay.IsStrictlyPositive() && IsTcp(item) ? m_tcpDelay : Time(0);
        if (m_jitter.IsStrictlyPositive())
        {
            FlowAccess& flow = m_flows[DownKey(m_link, item)];
            Time join = std::max(now + wait + Jitter(flow, now), flow.lastJoin);
            flow.lastJoin = join;
            wait = join - now;
        }
        if (!wait.IsStrictlyPositive())
        {
            return Join(item);
        }
        // Counted as received now and as enqueued (or dropped) when it
        // joins; ns-3's statistics check between the two is compiled out in
        // Debian's optimised build.
        Simulator::Schedule(wait, &AccessQueueDisc::JoinLate, this, item);
        return true;
    }

    static bool IsTcp(Ptr<QueueDiscItem> item)
    {
        Ptr<Ipv4QueueDiscItem> ip = DynamicCast<Ipv4QueueDiscItem>(item);
        return ip && ip->GetHeader().GetProtocol() == 6;
    }

    // The flow's extra delay for a packet that reaches the stage at `now`.
    Time Jitter(FlowAccess& flow, Time now)
    {
        double max = m_jitter.GetSeconds();
        if (!m_drift)
        {
            return Seconds(Draw() * max);
        }
        double period = max * kDriftPeriods;
        auto index = int64_t(now.GetSeconds() / period);
        if (flow.period + 1 == index)
        {
            // The next period starts where this one ends.
            flow.start = flow.end;
            flow.end = Draw() * max;
        }
        else if (flow.period != index)
        {
            flow.start = Draw() * max;
            flow.end = Draw() * max;
        }
        flow.period = index;
        double along = (now.GetSeconds() - double(index) * period) / period;
        return Seconds(flow.start + (flow.end - flow.start) * along);
    }

    double Draw()
    {
        return std::uniform_real_distribution<double>(0.0, 1.0)(m_random);
    }

    bool Join(Ptr<QueueDiscItem> item)
    {
        return GetQueueDiscClass(0)->GetQueueDisc()->Enqueue(item);
    }

    void JoinLate(Ptr<QueueDiscItem> item)
    {
        if (Join(item))
        {
            // An idle link must be woken as the traffic control layer does
            // after an enqueue.
            Run();
        }
    }

    Ptr<QueueDiscItem> DoDequeue() override
    {
        return GetQueueDiscClass(0)->GetQueueDisc()->Dequeue();
    }

    bool CheckConfig() override
    {
        return GetNQueueDiscClasses() == 1 && GetNPacketFilters() == 0 && GetNInternalQueues() == 0;
    }

    void InitializeParams() override
    {
        m_random.seed(m_seed * 1000003 + m_link);
    }

    Time m_jitter;
    bool m_drift = true;
    Time m_tcpDelay;
    uint32_t m_link = 0;
    uint64_t m_seed = 1;
    std::mt19937_64 m_random;
    std::map<FlowKey, FlowAccess> m_flows;
};

NS_OBJECT_ENSURE_REGISTERED(AccessQueueDisc);

// EmuFdNetDeviceHelper whose raw socket is opened here: Debian's build
// points the helper at a setuid socket creator under a build directory that
// does not exist. The runner is root, so no helper process is needed.
class RawSocketEmuHelper : public EmuFdNetDeviceHelper
{
  public:
    // The socket of the last device installed, for its kernel statistics.
    int LastSocket() const
    {
        return m_lastSocket;
    }

  protected:
    int CreateFileDescriptor() const override
    {
        int fd = socket(PF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
        if (fd < 0)
        {
            Fail(std::string("cannot open a raw socket (are we root?): ") + strerror(errno));
        }
        // Larger than the default so that a short stall of the reader thread
        // does not drop packets at the socket; FORCE ignores rmem_max.
        setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &kRawSocketBuffer, sizeof(kRawSocketBuffer));
        setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &kRawSocketBuffer, sizeof(kRawSocketBuffer));
        // The packets ns-3 itself writes would come back to the reader and
        // cost a parse each; best effort (Linux >= 4.20).
        int one = 1;
        setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
        m_lastSocket = fd;
        return fd;
    }

  private:
    mutable int m_lastSocket = -1;
};

Mac48Address
InterfaceMac(const std::string& name)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    ifreq request{};
    strncpy(request.ifr_name, name.c_str(), IFNAMSIZ - 1);
    if (fd < 0 || ioctl(fd, SIOCGIFHWADDR, &request) < 0)
    {
        Fail("interface " + name + " not found in this namespace");
    }
    close(fd);
    uint8_t bytes[6];
    memcpy(bytes, request.ifr_hwaddr.sa_data, 6);
    Mac48Address address;
    address.CopyFrom(bytes);
    return address;
}

// A constant-bit-rate UDP source on the right node sending to a sink on
// a left node, switched on and off by the runner.
struct CbrSource
{
    uint16_t port;
    double rateBps;
    uint32_t link;
    Ptr<Socket> socket;
    std::atomic<bool> on{false};
};

class Testbed
{
  public:
    void Parse(int argc, char* argv[]);
    void Build();
    void Run();

  private:
    QueueDiscContainer InstallBuffer(Ptr<NetDevice> device, const LinkConfig& link, uint32_t index, bool downward);
    void Tick();
    void Deliver(uint32_t link, char direction, Ptr<const Packet> packet);
    void LinkDrop(uint32_t link, char direction, Ptr<const Packet> packet);
    void QueueDrop(uint32_t link, Ptr<const QueueDiscItem> item);
    void CountDrop(const FlowKey& key, bool queue);
    void SendCbr(CbrSource* source);
    void ReadCommands();
    void WriteSummary();
    void SetBlackholes(bool on);
    void ListenForReadiness(Ptr<Node> node);
    double Now() const;

    // Command line.
    std::vector<LinkConfig> m_links;
    std::vector<std::string> m_clientInterfaces;
    std::string m_serverInterface = "r0";
    std::vector<std::string> m_leftAddresses;
    std::string m_rightAddress = "198.19.0.2/24";
    Time m_interval = MilliSeconds(100);
    double m_maxSeconds = 3600;
    double m_hardLimitMs = 0;
    uint64_t m_seed = 1;
    std::string m_cbr;
    std::string m_seriesPath;
    std::string m_monitorPath;
    std::string m_summaryPath;
    // The runner's scenario vocabulary (flowshare-sim).
    std::string m_scenario;
    double m_rateToServer = 0;
    double m_rateToClient = 0;
    uint32_t m_burstToServer = 0;
    uint32_t m_burstToClient = 0;
    Time m_blackholeOn;
    Time m_blackholeOff;
    uint32_t m_blackholeRepeat = 1;
    std::string m_pcapDirectory;
    Time m_tcpDelay;
    Time m_jitter;
    std::string m_jitterShape = "drift";
    uint16_t m_readyPort = 0;
    bool m_readStdin = true;

    // Topology.
    Ptr<Node> m_right;
    std::vector<Ptr<Node>> m_left;
    std::vector<Ptr<QueueDisc>> m_downQueues;
    std::vector<Ptr<QueueDisc>> m_upQueues;
    std::vector<std::unique_ptr<std::atomic<bool>>> m_blackholes;
    std::vector<std::pair<std::string, int>> m_rawSockets;
    std::vector<std::unique_ptr<CbrSource>> m_cbrSources;
    std::vector<double> m_eventWindow;
    std::vector<Ptr<PathErrorModel>> m_toClientErrors;
    std::vector<Ptr<PathErrorModel>> m_toServerErrors;
    std::vector<Ptr<Socket>> m_readySockets;

    // Measurements.
    std::map<FlowKey, FlowCounters> m_interval_counters;
    std::map<FlowKey, FlowTotals> m_totals;
    std::vector<double> m_sojournSum;
    std::vector<uint64_t> m_sojournCount;
    std::vector<uint32_t> m_maxQueue;
    std::vector<uint64_t> m_socketPackets;
    std::vector<uint64_t> m_socketDrops;
    // Where real time started, on both clocks (Tick says why); the system
    // clock's as the seconds since the epoch that the monitor's rows carry.
    std::chrono::steady_clock::time_point m_startMonotonic;
    double m_startEpoch = 0;
    double m_maxLagMs = 0;
    double m_lagSumMs = 0;
    uint64_t m_ticks = 0;
    uint64_t m_lateTicks = 0;
    std::ofstream m_series;
    std::ofstream m_monitor;
    std::thread m_commands;
};

double
Testbed::Now() const
{
    return Simulator::Now().GetSeconds();
}

void
Testbed::Parse(int argc, char* argv[])
{
    std::string bandwidth = "10Mbps";
    std::string delay = "20ms";
    std::string queue = "25";
    std::string qdisc = "droptail";
    std::string loss = "0";
    std::string client = "l0";
    std::string left = "198.18.0.2/24";
    double intervalMs = 100;
    std::string on;
    std::string off;
    std::string waitQuic;
    double waitSeconds = 10;
    uint32_t readyPort = 0;

    CommandLine cmd;
    cmd.AddValue("bandwidth", "bottleneck rate per link, e.g. 10Mbps[,20Mbps]", bandwidth);
    cmd.AddValue("delay", "one-way delay per link, e.g. 20ms[,20ms]", delay);
    cmd.AddValue("queue", "queue per link, packets", queue);
    cmd.AddValue("qdisc", "queue discipline per link: droptail or red", qdisc);
    cmd.AddValue("loss", "random drop probability per link (server to client)", loss);
    cmd.AddValue("client", "sim-side interface towards the client, per link", client);
    cmd.AddValue("server", "sim-side interface towards the server", m_serverInterface);
    cmd.AddValue("left", "address/prefix of each left (client-side) node", left);
    cmd.AddValue("right", "address/prefix of the right (server-side) node", m_rightAddress);
    cmd.AddValue("cbr", "CBR sources PORT:RATE_BPS:LINK, comma-separated (start off)", m_cbr);
    cmd.AddValue("interval", "sampling interval, ms", intervalMs);
    cmd.AddValue("maxSeconds", "stop after this much simulated time", m_maxSeconds);
    cmd.AddValue("hardLimit", "abort when real time lags by more than this, ms (0: best effort)", m_hardLimitMs);
    cmd.AddValue("seed", "RNG run number (random loss)", m_seed);
    cmd.AddValue("series", "per-flow series CSV", m_seriesPath);
    cmd.AddValue("monitor", "lag and queue CSV", m_monitorPath);
    cmd.AddValue("summary", "summary JSON written at the end", m_summaryPath);
    cmd.AddValue("scenario", "the runner's scenario: simple-p2p, blackhole, drop-rate, corrupt-rate", m_scenario);
    cmd.AddValue("rate_to_server", "drop-rate/corrupt-rate: percent of packets towards the server", m_rateToServer);
    cmd.AddValue("rate_to_client", "drop-rate/corrupt-rate: percent of packets towards the client", m_rateToClient);
    cmd.AddValue("burst_to_server", "drop-rate: at most this many drops in a row towards the server", m_burstToServer);
    cmd.AddValue("burst_to_client", "drop-rate: at most this many drops in a row towards the client", m_burstToClient);
    cmd.AddValue("on", "blackhole: time traffic flows before each blackout, e.g. 5s", on);
    cmd.AddValue("off", "blackhole: length of each blackout, e.g. 2s", off);
    cmd.AddValue("repeat", "blackhole: number of blackouts", m_blackholeRepeat);
    cmd.AddValue("tcpDelay", "hold the server's TCP packets back this long before the down queue, e.g. 90us", m_tcpDelay);
    cmd.AddValue("jitter", "each flow's packets wait up to this much more before the down queue, e.g. 1ms", m_jitter);
    cmd.AddValue("jitterShape", "how the jitter varies: drift (slowly, keeping each flow's spacing) or per-packet", m_jitterShape);
    cmd.AddValue("pcap", "directory for trace_node_left.pcap and trace_node_right.pcap", m_pcapDirectory);
    cmd.AddValue("readyPort", "accept TCP connections on this port on every node once running (0: none)", readyPort);
    cmd.AddValue("stdin", "read control commands from stdin (end of input stops)", m_readStdin);
    cmd.AddValue("waitQuic", "only wait for a QUIC server HOST:PORT to answer a probe, then exit", waitQuic);
    cmd.AddValue("waitSeconds", "how long --waitQuic waits", waitSeconds);
    cmd.Parse(argc, argv);

    if (!waitQuic.empty())
    {
        std::exit(WaitForQuicServer(waitQuic, waitSeconds) ? 0 : 1);
    }
    if (m_jitterShape != "drift" && m_jitterShape != "per-packet")
    {
        Fail("--jitterShape " + m_jitterShape + " is not a shape (accepted: drift, per-packet)");
    }
    if (m_jitter.IsStrictlyNegative() || m_jitter > MilliSeconds(100) || m_tcpDelay.IsStrictlyNegative())
    {
        Fail("--jitter must be from 0 to 100ms and --tcpDelay not negative");
    }
    if (readyPort > 65535)
    {
        Fail("--readyPort must be a port number");
    }
    m_readyPort = uint16_t(readyPort);
    if (!m_scenario.empty() && m_scenario != "simple-p2p" && m_scenario != "blackhole" &&
        m_scenario != "drop-rate" && m_scenario != "corrupt-rate")
    {
        Fail("--scenario " + m_scenario + " is not supported (accepted: simple-p2p, blackhole, drop-rate, corrupt-rate)");
    }
    bool scenarioRates = m_rateToServer != 0 || m_rateToClient != 0 || m_burstToServer != 0 || m_burstToClient != 0;
    if (scenarioRates && m_scenario != "drop-rate" && m_scenario != "corrupt-rate")
    {
        Fail("--rate_to_server, --rate_to_client and the bursts need --scenario=drop-rate or corrupt-rate");
    }
    if (m_rateToServer < 0 || m_rateToServer > 100 || m_rateToClient < 0 || m_rateToClient > 100)
    {
        Fail("--rate_to_server and --rate_to_client are percentages in [0, 100]");
    }
    if ((!on.empty() || !off.empty()) && m_scenario != "blackhole")
    {
        Fail("--on and --off need --scenario=blackhole");
    }
    if (m_scenario == "blackhole")
    {
        if (on.empty() || off.empty())
        {
            Fail("--scenario=blackhole needs --on and --off, e.g. --on=5s --off=2s");
        }
        m_blackholeOn = Time(on);
        m_blackholeOff = Time(off);
        if (m_blackholeOn.IsNegative() || !m_blackholeOff.IsStrictlyPositive() || m_blackholeRepeat == 0)
        {
            Fail("--on must not be negative, --off must be positive and --repeat at least 1");
        }
    }

    auto rates = Split(bandwidth, ',');
    auto delays = Split(delay, ',');
    auto queues = Split(queue, ',');
    auto qdiscs = Split(qdisc, ',');
    auto losses = Split(loss, ',');
    m_clientInterfaces = Split(client, ',');
    m_leftAddresses = Split(left, ',');
    size_t count = rates.size();
    if (count == 0 || count > 8)
    {
        Fail("--bandwidth must list 1 to 8 links");
    }
    auto entry = [count](const std::vector<std::string>& list, size_t i, const char* name) {
        if (list.size() != count && list.size() != 1)
        {
            Fail(std::string("--") + name + " must have one entry or one per link");
        }
        return list[list.size() == 1 ? 0 : i];
    };
    for (size_t i = 0; i < count; ++i)
    {
        LinkConfig link;
        link.rate = DataRate(rates[i]);
        link.delay = Time(entry(delays, i, "delay"));
        link.queuePackets = std::stoul(entry(queues, i, "queue"));
        link.qdisc = entry(qdiscs, i, "qdisc");
        link.loss = std::stod(entry(losses, i, "loss"));
        if (link.qdisc != "droptail" && link.qdisc != "red")
        {
            Fail("--qdisc " + link.qdisc + " is not a queue discipline (accepted: droptail, red)");
        }
        if (link.queuePackets == 0 || link.loss < 0 || link.loss > 1)
        {
            Fail("--queue must be positive and --loss in [0, 1]");
        }
        m_links.push_back(link);
    }
    if (m_clientInterfaces.size() != count || m_leftAddresses.size() != count)
    {
        Fail("--client and --left need one entry per link");
    }
    if (intervalMs < 1)
    {
        Fail("--interval must be at least 1 ms");
    }
    m_interval = MicroSeconds(uint64_t(intervalMs * 1000));
    for (const auto& item : Split(m_cbr, ','))
    {
        auto fields = Split(item, ':');
        if (fields.size() != 3)
        {
            Fail("--cbr entries are PORT:RATE_BPS:LINK, got " + item);
        }
        auto source = std::make_unique<CbrSource>();
        source->port = uint16_t(std::stoul(fields[0]));
        source->rateBps = std::stod(fields[1]);
        source->link = std::stoul(fields[2]);
        if (source->link >= count || source->rateBps <= 0)
        {
            Fail("--cbr " + item + ": link out of range or rate not positive");
        }
        m_cbrSources.push_back(std::move(source));
    }
}

void
Testbed::Build()
{
    GlobalValue::Bind("SimulatorImplementationType", StringValue("ns3::RealtimeSimulatorImpl"));
    GlobalValue::Bind("ChecksumEnabled", BooleanValue(true));
    if (m_hardLimitMs > 0)
    {
        Config::SetDefault("ns3::RealtimeSimulatorImpl::SynchronizationMode", StringValue("HardLimit"));
        Config::SetDefault("ns3::RealtimeSimulatorImpl::HardLimit",
                           TimeValue(MicroSeconds(uint64_t(m_hardLimitMs * 1000))));
    }
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(m_seed);

    size_t count = m_links.size();
    m_right = CreateObject<Node>();
    for (size_t i = 0; i < count; ++i)
    {
        m_left.push_back(CreateObject<Node>());
    }
    InternetStackHelper internet;
    // IPv4 only: Debian's ns-3 3.37 must not meet IPv6 on the emulated
    // devices (neighbour discovery from containers with IPv6 networks).
    internet.SetIpv6StackInstall(false);
    internet.Install(m_right);
    for (auto& node : m_left)
    {
        internet.Install(node);
    }

    auto addEmu = [this](Ptr<Node> node, const std::string& interface, const std::string& cidr,
                         const std::string& pcapName) {
        RawSocketEmuHelper emu;
        emu.SetDeviceName(interface);
        Ptr<FdNetDevice> device = DynamicCast<FdNetDevice>(emu.Install(node).Get(0));
        device->SetAddress(InterfaceMac(interface));
        m_rawSockets.emplace_back(interface, emu.LastSocket());
        if (!m_pcapDirectory.empty())
        {
            // What this side's endpoints sent and received, as the runner's
            // trace checks read it.
            emu.EnablePcap(m_pcapDirectory + "/" + pcapName, device, false, true);
        }
        auto parts = Split(cidr, '/');
        if (parts.size() != 2)
        {
            Fail("address " + cidr + " is not ADDRESS/PREFIX");
        }
        Ptr<Ipv4> ipv4 = node->GetObject<Ipv4>();
        uint32_t index = ipv4->AddInterface(device);
        ipv4->AddAddress(index,
                         Ipv4InterfaceAddress(Ipv4Address(parts[0].c_str()),
                                              Ipv4Mask(("/" + parts[1]).c_str())));
        ipv4->SetUp(index);
        return index;
    };
    uint32_t rightEmu = addEmu(m_right, m_serverInterface, m_rightAddress, "trace_node_right.pcap");
    (void)rightEmu;

    Ipv4StaticRoutingHelper staticRouting;
    Ptr<Ipv4StaticRouting> rightRoutes = staticRouting.GetStaticRouting(m_right->GetObject<Ipv4>());
    for (size_t i = 0; i < count; ++i)
    {
        const LinkConfig& link = m_links[i];
        addEmu(m_left[i],
               m_clientInterfaces[i],
               m_leftAddresses[i],
               i == 0 ? std::string("trace_node_left.pcap") : "trace_node_left_" + std::to_string(i) + ".pcap");

        PointToPointHelper p2p;
        p2p.SetDeviceAttribute("DataRate", DataRateValue(link.rate));
        p2p.SetChannelAttribute("Delay", TimeValue(link.delay));
        // A one-packet device queue, so that the queue disc below is the
        // buffer that fills and drops.
        p2p.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
        NetDeviceContainer devices = p2p.Install(m_left[i], m_right);

        // Installed before any address is assigned: assigning first would
        // install ns-3's default fq_codel, which would then be the buffer.
        // Both directions get the buffer behind an access stage, which only
        // holds packets back in the down direction.
        QueueDiscContainer queues = InstallBuffer(devices.Get(0), link, i, false);
        queues.Add(InstallBuffer(devices.Get(1), link, i, true));
        m_upQueues.push_back(queues.Get(0));   // left node sends towards the server
        m_downQueues.push_back(queues.Get(1)); // right node sends towards the client

        std::ostringstream base;
        base << "198.19.254." << 4 * i;
        Ipv4AddressHelper addresses;
        addresses.SetBase(base.str().c_str(), "255.255.255.252");
        Ipv4InterfaceContainer p2pInterfaces = addresses.Assign(devices);

        m_blackholes.push_back(std::make_unique<std::atomic<bool>>(false));
        Ptr<PathErrorModel> down = CreateObject<PathErrorModel>();
        down->Configure(link.loss, m_blackholes.back().get());
        devices.Get(0)->SetAttribute("ReceiveErrorModel", PointerValue(down));
        Ptr<PathErrorModel> up = CreateObject<PathErrorModel>();
        up->Configure(0, m_blackholes.back().get());
        devices.Get(1)->SetAttribute("ReceiveErrorModel", PointerValue(up));
        if (m_scenario == "drop-rate")
        {
            down->ConfigureScenario(m_rateToClient / 100, m_burstToClient, 0);
            up->ConfigureScenario(m_rateToServer / 100, m_burstToServer, 0);
        }
        else if (m_scenario == "corrupt-rate")
        {
            down->ConfigureScenario(0, 0, m_rateToClient / 100);
            up->ConfigureScenario(0, 0, m_rateToServer / 100);
        }
        m_toClientErrors.push_back(down);
        m_toServerErrors.push_back(up);

        uint32_t linkIndex = i;
        devices.Get(0)->TraceConnectWithoutContext(
            "PhyRxEnd",
            MakeCallback(&Testbed::Deliver, this).Bind(linkIndex, 'd'));
        devices.Get(1)->TraceConnectWithoutContext(
            "PhyRxEnd",
            MakeCallback(&Testbed::Deliver, this).Bind(linkIndex, 'u'));
        devices.Get(0)->TraceConnectWithoutContext(
            "PhyRxDrop",
            MakeCallback(&Testbed::LinkDrop, this).Bind(linkIndex, 'd'));
        devices.Get(1)->TraceConnectWithoutContext(
            "PhyRxDrop",
            MakeCallback(&Testbed::LinkDrop, this).Bind(linkIndex, 'u'));
        m_downQueues.back()->TraceConnectWithoutContext(
            "Drop",
            MakeCallback(&Testbed::QueueDrop, this).Bind(linkIndex));
        m_sojournSum.push_back(0);
        m_sojournCount.push_back(0);
        m_maxQueue.push_back(0);
        m_downQueues.back()->TraceConnectWithoutContext(
            "SojournTime",
            MakeCallback(
                +[](Testbed* self, uint32_t link, Time sojourn) {
                    self->m_sojournSum[link] += sojourn.GetSeconds();
                    self->m_sojournCount[link] += 1;
                })
                .Bind(this, linkIndex));
        // Worst-case RTT of the link: propagation both ways plus a full queue.
        m_eventWindow.push_back(2 * link.delay.GetSeconds() +
                                link.queuePackets * 1500.0 * 8 / link.rate.GetBitRate());

        // Left node i reaches everything beyond it through link i; the right
        // node reaches client subnet i through link i.
        Ptr<Ipv4StaticRouting> leftRoutes = staticRouting.GetStaticRouting(m_left[i]->GetObject<Ipv4>());
        uint32_t leftP2p = m_left[i]->GetObject<Ipv4>()->GetInterfaceForDevice(devices.Get(0));
        leftRoutes->SetDefaultRoute(p2pInterfaces.GetAddress(1), leftP2p);
        uint32_t rightP2p = m_right->GetObject<Ipv4>()->GetInterfaceForDevice(devices.Get(1));
        auto cidr = Split(m_leftAddresses[i], '/');
        Ipv4Mask mask(("/" + cidr[1]).c_str());
        rightRoutes->AddNetworkRouteTo(Ipv4Address(cidr[0].c_str()).CombineMask(mask),
                                       mask,
                                       p2pInterfaces.GetAddress(0),
                                       rightP2p);
    }

    for (auto& source : m_cbrSources)
    {
        Ptr<Node> sinkNode = m_left[source->link];
        Ptr<Socket> sink = Socket::CreateSocket(sinkNode, UdpSocketFactory::GetTypeId());
        sink->Bind(InetSocketAddress(Ipv4Address::GetAny(), source->port));
        sink->SetRecvCallback(MakeCallback(+[](Ptr<Socket> socket) {
            while (socket->Recv())
            {
            }
        }));
        auto cidr = Split(m_leftAddresses[source->link], '/');
        source->socket = Socket::CreateSocket(m_right, UdpSocketFactory::GetTypeId());
        source->socket->Bind();
        source->socket->Connect(InetSocketAddress(Ipv4Address(cidr[0].c_str()), source->port));
        Simulator::Schedule(Seconds(0), &Testbed::SendCbr, this, source.get());
    }

    if (m_readyPort != 0)
    {
        ListenForReadiness(m_right);
        for (auto& node : m_left)
        {
            ListenForReadiness(node);
        }
    }
    if (m_scenario == "blackhole")
    {
        // Traffic flows for --on, then nothing crosses for --off, --repeat
        // times; after that it flows for good.
        Time at = Seconds(0);
        for (uint32_t k = 0; k < m_blackholeRepeat; ++k)
        {
            at += m_blackholeOn;
            Simulator::Schedule(at, &Testbed::SetBlackholes, this, true);
            at += m_blackholeOff;
            Simulator::Schedule(at, &Testbed::SetBlackholes, this, false);
        }
    }

    m_socketPackets.assign(m_rawSockets.size(), 0);
    m_socketDrops.assign(m_rawSockets.size(), 0);
    if (!m_seriesPath.empty())
    {
        m_series.open(m_seriesPath);
        m_series << "wall_s,sim_s,link,direction,protocol,source,source_port,destination,destination_port,"
                    "bytes,packets,queue_drops,link_drops,loss_events\n";
    }
    if (!m_monitorPath.empty())
    {
        m_monitor.open(m_monitorPath);
        m_monitor << "wall_s,sim_s,lag_ms";
        for (size_t i = 0; i < count; ++i)
        {
            m_monitor << ",queue_" << i;
        }
        m_monitor << ",socket_drops\n";
    }
}

void
Testbed::SetBlackholes(bool on)
{
    for (auto& blackhole : m_blackholes)
    {
        blackhole->store(on);
    }
    std::cout << "blackhole " << (on ? "on" : "off") << " at " << Now() << " s" << std::endl;
}

void
Testbed::ListenForReadiness(Ptr<Node> node)
{
    // A TCP listener inside ns-3: a connection to it succeeds only while the
    // emulation runs, which is what the runner's endpoints wait for.
    Ptr<Socket> listener = Socket::CreateSocket(node, TcpSocketFactory::GetTypeId());
    if (listener->Bind(InetSocketAddress(Ipv4Address::GetAny(), m_readyPort)) != 0 || listener->Listen() != 0)
    {
        Fail("cannot listen on TCP port " + std::to_string(m_readyPort) + " inside ns-3");
    }
    listener->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(),
                                MakeCallback(
                                    +[](Testbed* self, Ptr<Socket> socket, const Address&) {
                                        socket->SetRecvCallback(MakeCallback(+[](Ptr<Socket> s) {
                                            while (s->Recv())
                                            {
                                            }
                                        }));
                                        socket->SetCloseCallbacks(
                                            MakeCallback(+[](Ptr<Socket> s) { s->Close(); }),
                                            MakeCallback(+[](Ptr<Socket>) {}));
                                        self->m_readySockets.push_back(socket);
                                    })
                                    .Bind(this));
    m_readySockets.push_back(listener);
}

void
Testbed::SendCbr(CbrSource* source)
{
    const uint32_t payload = kCbrPacketBytes - 28; // IPv4 and UDP headers
    if (source->on.load(std::memory_order_relaxed))
    {
        source->socket->Send(Create<Packet>(payload));
    }
    Simulator::Schedule(Seconds(kCbrPacketBytes * 8.0 / source->rateBps), &Testbed::SendCbr, this, source);
}

void
Testbed::Deliver(uint32_t link, char direction, Ptr<const Packet> packet)
{
    uint8_t bytes[64];
    uint32_t length = packet->CopyData(bytes, sizeof(bytes));
    FlowKey key{link, direction, 0, 0, 0, 0, 0};
    // Skip the 2-byte PPP header.
    if (length < 2 || !ParseIpv4(bytes + 2, length - 2, key))
    {
        return;
    }
    FlowCounters& counters = m_interval_counters[key];
    counters.bytes += packet->GetSize() - 2;
    counters.packets += 1;
}

void
Testbed::CountDrop(const FlowKey& key, bool queue)
{
    FlowCounters& counters = m_interval_counters[key];
    (queue ? counters.queueDrops : counters.linkDrops) += 1;
    if (key.direction == 'd')
    {
        FlowTotals& totals = m_totals[key];
        double now = Now();
        if (now - totals.lastEventStart > m_eventWindow[key.link])
        {
            counters.lossEvents += 1;
            totals.lastEventStart = now;
        }
    }
}

void
Testbed::LinkDrop(uint32_t link, char direction, Ptr<const Packet> packet)
{
    uint8_t bytes[64];
    uint32_t length = packet->CopyData(bytes, sizeof(bytes));
    FlowKey key{link, direction, 0, 0, 0, 0, 0};
    if (length >= 2 && ParseIpv4(bytes + 2, length - 2, key))
    {
        CountDrop(key, false);
    }
}

// The queue of `device`: the link's buffer of --queue packets (a FIFO, or
// ns-3's automatic RED: MinTh = MaxTh = 0, QW = -1, gentle, the parameters
// the lab's RED derives the same way) behind the access stage, which holds
// the down direction's packets back by the access jitter and --tcpDelay.
QueueDiscContainer
Testbed::InstallBuffer(Ptr<NetDevice> device, const LinkConfig& link, uint32_t index, bool downward)
{
    TrafficControlHelper helper;
    uint16_t access = helper.SetRootQueueDisc("flowshare::AccessQueueDisc",
                                              "Jitter", TimeValue(downward ? m_jitter : Time(0)),
                                              "Drift", BooleanValue(m_jitterShape == "drift"),
                                              "TcpDelay", TimeValue(downward ? m_tcpDelay : Time(0)),
                                              "Link", UintegerValue(index),
                                              "Seed", UintegerValue(m_seed));
    uint16_t buffer = helper.AddQueueDiscClasses(access, 1, "ns3::QueueDiscClass")[0];
    QueueSize size(QueueSizeUnit::PACKETS, link.queuePackets);
    if (link.qdisc == "red")
    {
        helper.AddChildQueueDisc(access, buffer, "ns3::RedQueueDisc",
                                 "MaxSize", QueueSizeValue(size),
                                 "MinTh", DoubleValue(0),
                                 "MaxTh", DoubleValue(0),
                                 "QW", DoubleValue(-1),
                                 "Gentle", BooleanValue(true),
                                 "MeanPktSize", UintegerValue(1500),
                                 "LinkBandwidth", DataRateValue(link.rate),
                                 "LinkDelay", TimeValue(link.delay));
    }
    else
    {
        helper.AddChildQueueDisc(access, buffer, "ns3::FifoQueueDisc", "MaxSize", QueueSizeValue(size));
    }
    return helper.Install(device);
}

void
Testbed::QueueDrop(uint32_t link, Ptr<const QueueDiscItem> item)
{
    if (!DynamicCast<const Ipv4QueueDiscItem>(item))
    {
        return;
    }
    CountDrop(DownKey(link, item), true);
}

void
Testbed::Tick()
{
    double sim = Now();
    // The monotonic clock sees the CPU starve ns-3. It does not see a pause
    // of the whole machine (a virtual machine stopped for seconds), which
    // ns-3's real-time scheduler, on the system clock, does see: it then
    // runs the missed seconds at once, a hole in which no packet crossed
    // the bottleneck while every endpoint was stopped (2026-12-06: 5.2 s,
    // in two runs at once, with 0 ms of monotonic lag). A system clock
    // stepped back stops ns-3 instead; the monotonic lag sees that.
    double monotonic = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_startMonotonic).count();
    double epoch = WallSecondsSinceEpoch();
    double lagMs = std::max(0.0, (std::max(monotonic, epoch - m_startEpoch) - sim) * 1000);
    m_ticks += 1;
    m_lagSumMs += lagMs;
    m_maxLagMs = std::max(m_maxLagMs, lagMs);
    if (lagMs > kLateMs)
    {
        m_lateTicks += 1;
    }
    for (size_t i = 0; i < m_rawSockets.size(); ++i)
    {
        tpacket_stats stats{};
        socklen_t size = sizeof(stats);
        // Reading the counters resets them.
        if (getsockopt(m_rawSockets[i].second, SOL_PACKET, PACKET_STATISTICS, &stats, &size) == 0)
        {
            m_socketPackets[i] += stats.tp_packets;
            m_socketDrops[i] += stats.tp_drops;
        }
    }
    if (m_series.is_open())
    {
        for (const auto& [key, counters] : m_interval_counters)
        {
            m_series << std::fixed << std::setprecision(4) << epoch << ',' << sim << ',' << key.link << ','
                     << key.direction << ',' << int(key.protocol) << ',' << Dotted(key.source) << ','
                     << key.sourcePort << ',' << Dotted(key.destination) << ',' << key.destinationPort << ','
                     << counters.bytes << ',' << counters.packets << ',' << counters.queueDrops << ','
                     << counters.linkDrops << ',' << counters.lossEvents << '\n';
        }
        m_series.flush();
    }
    for (const auto& [key, counters] : m_interval_counters)
    {
        FlowCounters& total = m_totals[key].counters;
        total.bytes += counters.bytes;
        total.packets += counters.packets;
        total.queueDrops += counters.queueDrops;
        total.linkDrops += counters.linkDrops;
        total.lossEvents += counters.lossEvents;
    }
    m_interval_counters.clear();
    uint64_t socketDrops = 0;
    for (uint64_t drops : m_socketDrops)
    {
        socketDrops += drops;
    }
    if (m_monitor.is_open())
    {
        m_monitor << std::fixed << std::setprecision(4) << epoch << ',' << sim << ',' << std::setprecision(3)
                  << lagMs;
        for (size_t i = 0; i < m_downQueues.size(); ++i)
        {
            uint32_t packets = m_downQueues[i]->GetNPackets();
            m_maxQueue[i] = std::max(m_maxQueue[i], packets);
            m_monitor << ',' << packets;
        }
        m_monitor << ',' << socketDrops << '\n';
        m_monitor.flush();
    }
    if (g_stop.load() || sim >= m_maxSeconds)
    {
        Simulator::Stop();
        return;
    }
    Simulator::Schedule(m_interval, &Testbed::Tick, this);
}

void
Testbed::ReadCommands()
{
    std::string line;
    while (std::getline(std::cin, line))
    {
        auto words = Split(line, ' ');
        if (words.empty())
        {
            continue;
        }
        if (words[0] == "stop")
        {
            break;
        }
        bool on = words.size() == 3 && words[2] == "on";
        if (words.size() == 3 && words[0] == "blackhole")
        {
            size_t link = std::stoul(words[1]);
            if (link < m_blackholes.size())
            {
                m_blackholes[link]->store(on);
            }
        }
        else if (words.size() == 3 && words[0] == "cbr")
        {
            uint16_t port = uint16_t(std::stoul(words[1]));
            for (auto& source : m_cbrSources)
            {
                if (source->port == port)
                {
                    source->on.store(on);
                }
            }
        }
        else
        {
            std::cerr << "bottleneck: unknown command: " << line << std::endl;
        }
    }
    g_stop.store(true);
}

void
Testbed::WriteSummary()
{
    if (m_summaryPath.empty())
    {
        return;
    }
    std::ofstream out(m_summaryPath);
    out << std::setprecision(10);
    out << "{\n  \"scenario\": \"" << (m_scenario.empty() ? "testbed" : m_scenario) << "\",\n";
    out << "  \"lag\": {\"ticks\": " << m_ticks << ", \"late_ticks\": " << m_lateTicks
        << ", \"late_threshold_ms\": " << kLateMs << ", \"max_ms\": " << m_maxLagMs
        << ", \"mean_ms\": " << (m_ticks ? m_lagSumMs / m_ticks : 0) << "},\n";
    out << "  \"sockets\": [";
    for (size_t i = 0; i < m_rawSockets.size(); ++i)
    {
        out << (i ? ", " : "") << "{\"interface\": \"" << m_rawSockets[i].first
            << "\", \"packets\": " << m_socketPackets[i] << ", \"drops\": " << m_socketDrops[i] << "}";
    }
    out << "],\n  \"links\": [";
    for (size_t i = 0; i < m_links.size(); ++i)
    {
        const QueueDisc::Stats& down = m_downQueues[i]->GetStats();
        const QueueDisc::Stats& up = m_upQueues[i]->GetStats();
        out << (i ? ", " : "") << "{\"link\": " << i << ", \"rate_bps\": " << m_links[i].rate.GetBitRate()
            << ", \"delay_s\": " << m_links[i].delay.GetSeconds() << ", \"queue_packets\": "
            << m_links[i].queuePackets << ", \"qdisc\": \"" << m_links[i].qdisc
            << "\", \"down_enqueued\": " << down.nTotalEnqueuedPackets
            << ", \"down_dropped\": " << down.nTotalDroppedPackets << ", \"up_dropped\": "
            << up.nTotalDroppedPackets << ", \"max_queue_packets\": " << m_maxQueue[i]
            << ", \"mean_sojourn_s\": " << (m_sojournCount[i] ? m_sojournSum[i] / m_sojournCount[i] : 0)
            << ", \"corrupted_to_client\": " << m_toClientErrors[i]->Corrupted()
            << ", \"corrupted_to_server\": " << m_toServerErrors[i]->Corrupted() << "}";
    }
    out << "],\n  \"flows\": [";
    bool first = true;
    for (const auto& [key, totals] : m_totals)
    {
        out << (first ? "\n    " : ",\n    ") << "{\"link\": " << key.link << ", \"direction\": \""
            << key.direction << "\", \"protocol\": " << int(key.protocol) << ", \"source\": \""
            << Dotted(key.source) << "\", \"source_port\": " << key.sourcePort << ", \"destination\": \""
            << Dotted(key.destination) << "\", \"destination_port\": " << key.destinationPort
            << ", \"bytes\": " << totals.counters.bytes << ", \"packets\": " << totals.counters.packets
            << ", \"queue_drops\": " << totals.counters.queueDrops << ", \"link_drops\": "
            << totals.counters.linkDrops << ", \"loss_events\": " << totals.counters.lossEvents << "}";
        first = false;
    }
    out << "\n  ]\n}\n";
}

void
Testbed::Run()
{
    Simulator::Schedule(Seconds(0), [this]() {
        m_startMonotonic = std::chrono::steady_clock::now();
        m_startEpoch = WallSecondsSinceEpoch();
        std::cout << "ready" << std::endl;
        Simulator::Schedule(m_interval, &Testbed::Tick, this);
    });
    if (m_readStdin)
    {
        m_commands = std::thread(&Testbed::ReadCommands, this);
        // The reader blocks on stdin; it ends with the process.
        m_commands.detach();
    }
    Simulator::Run();
    WriteSummary();
    std::cout << "stopped" << std::endl;
    // FdNetDevice reader threads are joined by Destroy.
    Simulator::Destroy();
}

} // namespace

int
main(int argc, char* argv[])
{
    std::signal(SIGINT, OnSignal);
    std::signal(SIGTERM, OnSignal);
    Testbed testbed;
    testbed.Parse(argc, argv);
    testbed.Build();
    testbed.Run();
    return 0;
}
