//! UDP sockets shared by the server and the client. Paced sending is
//! `flowshare_quic::pacing`, shared with the loopback transfer engine.

use std::io;
use std::net::SocketAddr;

use mio::net::UdpSocket;

pub use flowshare_quic::pacing::MAX_DATAGRAM_SIZE;

/// Largest UDP payload accepted.
pub const MAX_RECV_SIZE: usize = 65_535;

/// Socket buffers asked for: enough for a few hundred handshakes arriving
/// at once. The kernel caps them at net.core.{r,w}mem_max.
const SOCKET_BUFFER_BYTES: usize = 8 << 20;

/// A non-blocking UDP socket bound to `address`, with large buffers.
pub fn bind(address: SocketAddr) -> io::Result<UdpSocket> {
    let domain = socket2::Domain::for_address(address);
    let socket = socket2::Socket::new(domain, socket2::Type::DGRAM, Some(socket2::Protocol::UDP))?;
    if address.is_ipv6() {
        // Accept IPv4 clients on [::] as the interop runner's server46 does.
        let _ = socket.set_only_v6(false);
    }
    let _ = socket.set_recv_buffer_size(SOCKET_BUFFER_BYTES);
    let _ = socket.set_send_buffer_size(SOCKET_BUFFER_BYTES);
    socket.bind(&address.into())?;
    socket.set_nonblocking(true)?;
    Ok(UdpSocket::from_std(socket.into()))
}
