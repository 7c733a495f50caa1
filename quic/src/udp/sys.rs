//! The system calls behind [`super::Socket`]: `sendmmsg` with a
//! `UDP_SEGMENT` control message per segmented message, `recvmmsg` with the
//! `UDP_GRO` segment size, and the socket options that switch them on. The
//! only unsafe code of the crate: each block builds the C structures from
//! memory it borrows for the duration of one call.
//!
//! Off Linux the same functions send and receive one datagram per call and
//! report no offload.

use std::io;
use std::io::IoSlice;
use std::net::SocketAddr;

/// One message for [`send_many`]: `iov` holds its datagrams; with
/// `segment`, the kernel cuts the concatenated payload into datagrams of
/// that size (the last may be shorter).
pub(super) struct OutMessage<'a> {
    pub(super) to: &'a socket2::SockAddr,
    pub(super) iov: &'a [IoSlice<'a>],
    pub(super) segment: Option<u16>,
}

/// What [`recv_many`] learned of one received message.
#[derive(Clone, Copy, Debug)]
pub(super) struct InMessage {
    /// Bytes received.
    pub(super) len: usize,
    /// Size of the datagrams GRO coalesced into it (all but the last);
    /// `len` when it is one datagram.
    pub(super) segment: usize,
    pub(super) from: Option<SocketAddr>,
}

/// Most messages one `sendmmsg` or `recvmmsg` handles here.
pub(super) const BATCH: usize = 32;

#[cfg(target_os = "linux")]
mod linux {
    use std::io;
    use std::mem;
    use std::os::fd::RawFd;

    use super::InMessage;
    use super::OutMessage;
    use super::BATCH;

    /// Room for one control message with an `int` or `u16` payload,
    /// aligned as `cmsghdr` needs.
    #[derive(Clone, Copy)]
    #[repr(C, align(8))]
    struct Control([u8; 32]);

    fn cvt(result: libc::c_int) -> io::Result<usize> {
        if result < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(result as usize)
        }
    }

    pub(in super::super) fn set_udp_option(fd: RawFd, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
        // SAFETY: `value` outlives the call and its size is passed with it.
        let result = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_UDP,
                name,
                (&value as *const libc::c_int).cast(),
                mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        cvt(result).map(drop)
    }

    pub(in super::super) fn send_many(fd: RawFd, messages: &[OutMessage<'_>]) -> io::Result<usize> {
        let count = messages.len().min(BATCH);
        // SAFETY: all-zero is a valid value of these plain C structures.
        let mut headers: [libc::mmsghdr; BATCH] = unsafe { mem::zeroed() };
        let mut controls = [Control([0; 32]); BATCH];
        for ((message, header), control) in messages.iter().zip(&mut headers).zip(&mut controls).take(count) {
            let hdr = &mut header.msg_hdr;
            // The kernel only reads the address and the iovecs (IoSlice is
            // an iovec on Unix), which `messages` borrows past the call.
            hdr.msg_name = message.to.as_ptr() as *mut libc::c_void;
            hdr.msg_namelen = message.to.len();
            hdr.msg_iov = message.iov.as_ptr() as *mut libc::iovec;
            hdr.msg_iovlen = message.iov.len() as _;
            if let Some(segment) = message.segment {
                // SAFETY: CMSG_SPACE and CMSG_LEN are arithmetic; the header
                // and the u16 after it fit in the 32 aligned bytes of
                // `control`, which outlives the call.
                unsafe {
                    hdr.msg_control = control.0.as_mut_ptr().cast();
                    hdr.msg_controllen = libc::CMSG_SPACE(mem::size_of::<u16>() as u32) as _;
                    let cmsg = libc::CMSG_FIRSTHDR(hdr);
                    (*cmsg).cmsg_level = libc::SOL_UDP;
                    (*cmsg).cmsg_type = libc::UDP_SEGMENT;
                    (*cmsg).cmsg_len = libc::CMSG_LEN(mem::size_of::<u16>() as u32) as _;
                    libc::CMSG_DATA(cmsg).cast::<u16>().write_unaligned(segment);
                }
            }
        }
        // SAFETY: `headers[..count]` are initialised and point into memory
        // borrowed for the duration of the call.
        cvt(unsafe { libc::sendmmsg(fd, headers.as_mut_ptr(), count as libc::c_uint, 0) })
    }

    pub(in super::super) fn recv_many(
        fd: RawFd,
        buffers: &mut [u8],
        slot: usize,
        out: &mut [InMessage],
    ) -> io::Result<usize> {
        let count = out.len().min(BATCH).min(buffers.len() / slot);
        // SAFETY: all-zero is a valid value of these plain C structures.
        let mut headers: [libc::mmsghdr; BATCH] = unsafe { mem::zeroed() };
        let mut names: [libc::sockaddr_storage; BATCH] = unsafe { mem::zeroed() };
        let mut iovs: [libc::iovec; BATCH] = unsafe { mem::zeroed() };
        let mut controls = [Control([0; 32]); BATCH];
        let slots = buffers.chunks_exact_mut(slot);
        for ((((header, name), iov), control), buffer) in
            headers.iter_mut().zip(&mut names).zip(&mut iovs).zip(&mut controls).zip(slots).take(count)
        {
            iov.iov_base = buffer.as_mut_ptr().cast();
            iov.iov_len = buffer.len();
            let hdr = &mut header.msg_hdr;
            hdr.msg_name = (name as *mut libc::sockaddr_storage).cast();
            hdr.msg_namelen = mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            hdr.msg_iov = iov;
            hdr.msg_iovlen = 1;
            hdr.msg_control = control.0.as_mut_ptr().cast();
            hdr.msg_controllen = control.0.len() as _;
        }
        // SAFETY: every pointer in `headers[..count]` points into a buffer
        // of the stated length that outlives the call.
        let received =
            cvt(unsafe { libc::recvmmsg(fd, headers.as_mut_ptr(), count as libc::c_uint, 0, std::ptr::null_mut()) })?;
        for ((header, name), message) in headers.iter().zip(&names).zip(out.iter_mut()).take(received) {
            let len = header.msg_len as usize;
            let mut segment = len;
            // SAFETY: the kernel wrote `msg_controllen` bytes of control
            // messages into `controls`; the CMSG macros walk exactly those.
            unsafe {
                let mut cmsg = libc::CMSG_FIRSTHDR(&header.msg_hdr);
                while !cmsg.is_null() {
                    if (*cmsg).cmsg_level == libc::SOL_UDP && (*cmsg).cmsg_type == libc::UDP_GRO {
                        let size = libc::CMSG_DATA(cmsg).cast::<libc::c_int>().read_unaligned();
                        if size > 0 {
                            segment = size as usize;
                        }
                    }
                    cmsg = libc::CMSG_NXTHDR(&header.msg_hdr, cmsg);
                }
            }
            // SAFETY: the kernel filled `name` with an address of
            // `msg_namelen` bytes.
            let from = unsafe { socket2::SockAddr::new(*name, header.msg_hdr.msg_namelen) }.as_socket();
            *message = InMessage { len, segment: segment.max(1), from };
        }
        Ok(received)
    }
}

/// Sets a `SOL_UDP` option; unsupported off Linux.
pub(super) fn set_udp_option(socket: &impl std::os::fd::AsRawFd, name: UdpOption, value: i32) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        let name = match name {
            UdpOption::Segment => libc::UDP_SEGMENT,
            UdpOption::Gro => libc::UDP_GRO,
        };
        linux::set_udp_option(socket.as_raw_fd(), name, value)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (socket, name, value);
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}

/// The offload options.
#[derive(Clone, Copy, Debug)]
pub(super) enum UdpOption {
    /// UDP_SEGMENT: generic segmentation offload on send.
    Segment,
    /// UDP_GRO: generic receive offload.
    Gro,
}

/// Sends up to [`BATCH`] of `messages` in one call; returns how many the
/// kernel took. The error of the first message that failed is returned
/// when no message was taken.
pub(super) fn send_many(socket: &mio::net::UdpSocket, messages: &[OutMessage<'_>]) -> io::Result<usize> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd as _;
        linux::send_many(socket.as_raw_fd(), messages)
    }
    #[cfg(not(target_os = "linux"))]
    {
        // One datagram per call; `segment` is never set without GSO.
        let Some(message) = messages.first() else { return Ok(0) };
        let to = message.to.as_socket().ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        let datagram: Vec<u8> = message.iov.iter().flat_map(|slice| slice.iter().copied()).collect();
        socket.send_to(&datagram, to).map(|_| 1)
    }
}

/// Receives up to [`BATCH`] messages into the `slot`-byte slots of
/// `buffers`, describing them in `out`; returns how many arrived.
pub(super) fn recv_many(
    socket: &mio::net::UdpSocket,
    buffers: &mut [u8],
    slot: usize,
    out: &mut [InMessage],
) -> io::Result<usize> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd as _;
        linux::recv_many(socket.as_raw_fd(), buffers, slot, out)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let (Some(buffer), Some(message)) = (buffers.get_mut(..slot), out.first_mut()) else { return Ok(0) };
        let (len, from) = socket.recv_from(buffer)?;
        *message = InMessage { len, segment: len.max(1), from: Some(from) };
        Ok(1)
    }
}
