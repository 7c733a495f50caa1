// The lab's Reno dumbbell in ns-3 (Debian's ns-3.37), for
// `flowshare lab ns3`: `flows` TcpNewReno bulk transfers, each behind its own
// access link, share a drop-tail bottleneck whose buffer is one
// bandwidth-delay product. Settings follow the lab's defaults: 1500-byte IP
// packets, initial window 10, an ACK every second segment or after 25 ms,
// random starts in the first 2 s, SACK (QUIC's ACK ranges), classic
// NewReno recovery. Prints `flow,throughput_bps` (application bytes after
// the warm-up) for each flow.
//
// Build: lab/ns3/build.sh. Run: reno-dumbbell --flows=8 --rateMbps=20
//   --delayMs=20 --accessMs=1,1,1,1,1,1,1,1 --duration=60 --warmup=12 --run=1

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <iostream>
#include <sstream>
#include <vector>

using namespace ns3;

static std::vector<double>
ParseList(const std::string& text)
{
    std::vector<double> values;
    std::stringstream stream(text);
    std::string item;
    while (std::getline(stream, item, ','))
    {
        values.push_back(std::stod(item));
    }
    return values;
}

int
main(int argc, char* argv[])
{
    uint32_t flows = 8;
    double rateMbps = 20;
    double delayMs = 20;
    std::string accessMs = "1";
    double duration = 60;
    double warmup = 12;
    uint32_t run = 1;
    double bdpRttMs = 0;

    CommandLine cmd;
    cmd.AddValue("flows", "number of NewReno flows", flows);
    cmd.AddValue("rateMbps", "bottleneck rate, Mbit/s", rateMbps);
    cmd.AddValue("delayMs", "bottleneck one-way delay, ms", delayMs);
    cmd.AddValue("accessMs", "one-way access delay per flow, ms (comma list, last repeats)", accessMs);
    cmd.AddValue("duration", "simulated time, s", duration);
    cmd.AddValue("warmup", "time discarded from the throughput, s", warmup);
    cmd.AddValue("run", "RNG run number", run);
    cmd.AddValue("bdpRttMs", "RTT of the buffer's bandwidth-delay product (default 2 delayMs)", bdpRttMs);
    cmd.Parse(argc, argv);

    std::vector<double> access = ParseList(accessMs);
    if (access.empty() || flows == 0)
    {
        std::cerr << "reno-dumbbell: need at least one flow and one access delay" << std::endl;
        return 2;
    }
    if (bdpRttMs <= 0)
    {
        bdpRttMs = 2 * delayMs;
    }

    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(run);

    const uint32_t segment = 1448; // 1500-byte IP packets with timestamps
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::TcpNewReno"));
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType",
                       TypeIdValue(TypeId::LookupByName("ns3::TcpClassicRecovery")));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(segment));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(MilliSeconds(25)));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(1 << 26));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(1 << 26));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(200)));

    NodeContainer senders;
    senders.Create(flows);
    NodeContainer routers;
    routers.Create(2);
    NodeContainer receiver;
    receiver.Create(1);

    InternetStackHelper stack;
    stack.InstallAll();

    // The bottleneck: a one-packet device queue under a FIFO queue disc of
    // one bandwidth-delay product, so that the queue disc is the buffer.
    PointToPointHelper bottleneck;
    bottleneck.SetDeviceAttribute("DataRate", DataRateValue(DataRate(rateMbps * 1e6)));
    bottleneck.SetChannelAttribute("Delay", TimeValue(MilliSeconds(delayMs)));
    bottleneck.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
    NetDeviceContainer core = bottleneck.Install(routers.Get(0), routers.Get(1));
    const uint32_t bdpPackets =
        std::max<uint32_t>(1, uint32_t(rateMbps * 1e6 * bdpRttMs * 1e-3 / (8.0 * 1500) + 0.5));
    TrafficControlHelper tch;
    tch.SetRootQueueDisc("ns3::FifoQueueDisc",
                         "MaxSize",
                         QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, bdpPackets)));
    tch.Install(core);

    Ipv4AddressHelper address;
    address.SetBase("10.0.0.0", "255.255.255.0");
    address.Assign(core);

    PointToPointHelper fast;
    fast.SetDeviceAttribute("DataRate", StringValue("10Gbps"));
    fast.SetChannelAttribute("Delay", TimeValue(Seconds(0)));
    NetDeviceContainer last = fast.Install(routers.Get(1), receiver.Get(0));
    address.SetBase("10.1.0.0", "255.255.255.0");
    Ipv4InterfaceContainer receiverInterfaces = address.Assign(last);
    Ipv4Address sinkAddress = receiverInterfaces.GetAddress(1);

    for (uint32_t i = 0; i < flows; ++i)
    {
        PointToPointHelper link;
        link.SetDeviceAttribute("DataRate", StringValue("10Gbps"));
        link.SetChannelAttribute("Delay",
                                 TimeValue(MicroSeconds(1000 * access[std::min<size_t>(i, access.size() - 1)])));
        NetDeviceContainer devices = link.Install(senders.Get(i), routers.Get(0));
        std::ostringstream base;
        base << "10.2." << i << ".0";
        address.SetBase(base.str().c_str(), "255.255.255.0");
        address.Assign(devices);
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    Ptr<UniformRandomVariable> start = CreateObject<UniformRandomVariable>();
    std::vector<Ptr<PacketSink>> sinks;
    for (uint32_t i = 0; i < flows; ++i)
    {
        uint16_t port = 5000 + i;
        PacketSinkHelper sinkHelper("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer sinkApp = sinkHelper.Install(receiver.Get(0));
        sinkApp.Start(Seconds(0));
        sinks.push_back(DynamicCast<PacketSink>(sinkApp.Get(0)));

        BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(sinkAddress, port));
        bulk.SetAttribute("MaxBytes", UintegerValue(0));
        bulk.SetAttribute("SendSize", UintegerValue(segment * 8));
        ApplicationContainer app = bulk.Install(senders.Get(i));
        app.Start(Seconds(start->GetValue(0, 2)));
    }

    std::vector<uint64_t> atWarmup(flows, 0);
    Simulator::Schedule(Seconds(warmup), [&]() {
        for (uint32_t i = 0; i < flows; ++i)
        {
            atWarmup[i] = sinks[i]->GetTotalRx();
        }
    });
    Simulator::Stop(Seconds(duration));
    Simulator::Run();
    std::cout << "flow,throughput_bps" << std::endl;
    for (uint32_t i = 0; i < flows; ++i)
    {
        double bps = double(sinks[i]->GetTotalRx() - atWarmup[i]) * 8.0 / (duration - warmup);
        std::cout << i << "," << bps << std::endl;
    }
    Simulator::Destroy();
    return 0;
}
