//! UDP sockets shared by the server and the client: `flowshare_quic::udp`,
//! the one I/O layer of every flowshare endpoint (GSO and GRO where the
//! kernel has them, `sendmmsg` and `recvmmsg`), as is paced sending
//! (`flowshare_quic::pacing`).

use std::io;
use std::net::SocketAddr;

use crate::event;
use crate::log::Level;

pub use flowshare_quic::pacing::MAX_DATAGRAM_SIZE;
pub use flowshare_quic::udp::Capabilities;
pub use flowshare_quic::udp::Offload;
pub use flowshare_quic::udp::RecvBatch;
pub use flowshare_quic::udp::Socket;
pub use flowshare_quic::udp::MAX_RECV_SIZE;

/// A non-blocking UDP socket bound to `address`, with large buffers and
/// segmentation offload as `offload` allows and the kernel has it.
pub fn bind(address: SocketAddr, offload: Offload) -> io::Result<Socket> {
    Socket::bind(address, offload)
}

/// Says which data path a socket uses (`event=udp_offload gso=on
/// gso_segments=64 gso_reason=- gro=on`): the server at start-up and when
/// the kernel makes it fall back, the client at debug level.
pub fn log_offload(level: Level, offload: Capabilities) {
    event!(
        level,
        "udp_offload",
        gso = if offload.gso() { "on" } else { "off" },
        gso_segments = offload.gso_segments,
        gso_reason = offload.gso_off.unwrap_or("-"),
        gro = if offload.gro { "on" } else { "off" },
    );
}
