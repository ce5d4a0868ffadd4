//! UDP on the hot path: batches of datagrams received with `recvmmsg` and their kernel
//! receive timestamps (`SO_TIMESTAMPNS`, CLOCK_REALTIME, mapped to CLOCK_MONOTONIC), and
//! one `sendto` per answer.
//!
//! Real-time contract: [`RecvBatch::new`] allocates its buffers once; [`RecvBatch::recv`],
//! [`RecvBatch::get`] and [`send_to`] allocate and lock nothing.

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::AsRawFd;

use engine::clock::monotonic_ns;

/// Datagrams one `recvmmsg` call can return.
pub const BATCH: usize = 32;
/// Bytes kept of each datagram; a longer one is marked truncated.
pub const MAX_DATAGRAM: usize = 2048;
const CONTROL_BYTES: usize = 128;

/// `CLOCK_REALTIME - CLOCK_MONOTONIC` in ns, read with the tightest of a few bracketing
/// reads, to map kernel receive timestamps (wall clock) onto the monotonic clock.
pub fn realtime_minus_monotonic_ns() -> i64 {
    let mut best = (u64::MAX, 0i64);
    for _ in 0..5 {
        let before = monotonic_ns();
        let wall = realtime_ns();
        let after = monotonic_ns();
        let gap = after - before;
        if gap < best.0 {
            best = (gap, wall - (before + gap / 2) as i64);
        }
    }
    best.1
}

fn realtime_ns() -> i64 {
    // SAFETY: clock_gettime writes one timespec we own.
    let mut ts: libc::timespec = unsafe { zeroed() };
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// Asks the kernel to timestamp received datagrams (`SO_TIMESTAMPNS`). False when it
/// refuses: arrival times then come from the monotonic clock when `recvmmsg` returns.
pub fn enable_receive_timestamps(socket: &UdpSocket) -> bool {
    let on: libc::c_int = 1;
    // SAFETY: a valid socket and an int option of the right size.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        ) == 0
    }
}

/// Asks the kernel to report, with each datagram, how many it has dropped so far for
/// want of room in the socket's receive queue (`SO_RXQ_OVFL`).
pub fn enable_drop_counter(socket: &UdpSocket) -> bool {
    let on: libc::c_int = 1;
    // SAFETY: a valid socket and an int option of the right size.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RXQ_OVFL,
            (&on as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        ) == 0
    }
}

/// The datagrams the kernel has dropped so far for want of room in the socket's receive
/// queue, read at any time (`SO_MEMINFO`), where [`enable_drop_counter`]'s count comes
/// only with a datagram received: drops after the last one read are in this one alone.
/// `None` where the kernel does not say (before Linux 4.12).
pub fn dropped_so_far(socket: &UdpSocket) -> Option<u32> {
    let mut info = [0u32; libc::SK_MEMINFO_DROPS as usize + 1];
    let mut len = size_of_val(&info) as libc::socklen_t;
    // SAFETY: a valid socket and a buffer of `len` bytes; the kernel writes at most `len`
    // and says how many.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_MEMINFO,
            info.as_mut_ptr().cast(),
            &mut len,
        )
    };
    let whole = len as usize >= size_of_val(&info);
    (rc == 0 && whole).then_some(info[libc::SK_MEMINFO_DROPS as usize])
}

fn set_int(socket: &UdpSocket, option: libc::c_int, value: libc::c_int) -> bool {
    set_int_at(socket, libc::SOL_SOCKET, option, value)
}

fn set_int_at(
    socket: &UdpSocket,
    level: libc::c_int,
    option: libc::c_int,
    value: libc::c_int,
) -> bool {
    // SAFETY: a valid socket and an int option of the right size.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            level,
            option,
            (&value as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        ) == 0
    }
}

/// Sets the socket's receive buffer (the kernel doubles and caps it; root may exceed
/// the cap with SO_RCVBUFFORCE, which is tried first).
pub fn set_receive_buffer(socket: &UdpSocket, bytes: usize) {
    let size = bytes.min(i32::MAX as usize) as libc::c_int;
    let _ = set_int(socket, libc::SO_RCVBUFFORCE, size) || set_int(socket, libc::SO_RCVBUF, size);
}

/// Sets the socket's send buffer, as [`set_receive_buffer`] does the receive buffer: how
/// many of its datagrams may wait in the device's queues before a send would block.
pub fn set_send_buffer(socket: &UdpSocket, bytes: usize) {
    let size = bytes.min(i32::MAX as usize) as libc::c_int;
    let _ = set_int(socket, libc::SO_SNDBUFFORCE, size) || set_int(socket, libc::SO_SNDBUF, size);
}

/// `UDP_SEGMENT` (linux/udp.h): send-side segmentation offload.
const UDP_SEGMENT: libc::c_int = 103;

/// Datagrams of a UDP GSO send at most: 64 KiB of payload in one buffer.
pub fn gso_segments_max(segment: usize) -> usize {
    (65_507 / segment.max(1)).clamp(1, 64)
}

/// Turns on UDP segmentation offload (`UDP_SEGMENT`, Linux 4.18): every send of a buffer
/// longer than `segment` bytes leaves as datagrams of `segment` bytes, cut by the kernel
/// (or the NIC) late on the path, so one system call and one trip through the stack
/// carry up to 64 KiB. `false` when the kernel has no UDP GSO (`segment` 0 turns it off).
pub fn set_segmentation(socket: &UdpSocket, segment: u16) -> bool {
    set_int_at(
        socket,
        libc::IPPROTO_UDP,
        UDP_SEGMENT,
        libc::c_int::from(segment),
    )
}

/// Lets the kernel hand this socket a segmented send (UDP GSO) whole, one buffer of
/// datagrams of one size, instead of cutting it into datagrams on the way in
/// (`UDP_GRO`, Linux 5.0). For a receiver that only counts ([`CountBatch`]) the cutting
/// is work for nothing, and it is done in the kernel's softirq by whichever thread moved
/// the packet: over a veth, the sender that ran the link's queue, often another flow's.
/// `false` when the kernel has no such option.
pub fn set_receive_coalescing(socket: &UdpSocket) -> bool {
    set_int_at(socket, libc::IPPROTO_UDP, libc::UDP_GRO, 1)
}

/// Counts what arrives on a socket without reading it, for a sink that only measures
/// what reached it: `recvmmsg` with `MSG_TRUNC` into one-byte buffers, so a buffer of
/// coalesced datagrams ([`set_receive_coalescing`]) costs what one datagram does, and
/// is counted by its segments.
pub struct CountBatch {
    bytes: Box<[u8; BATCH]>,
    controls: Box<[[u8; CONTROL_BYTES]; BATCH]>,
    iovecs: Box<[libc::iovec; BATCH]>,
    headers: Box<[libc::mmsghdr; BATCH]>,
}

impl Default for CountBatch {
    fn default() -> Self {
        CountBatch::new()
    }
}

impl CountBatch {
    /// Buffers for [`BATCH`] receives. Allocates.
    pub fn new() -> CountBatch {
        // SAFETY: all-zero is a valid value for these C structs (pointers are set
        // before every call).
        unsafe {
            CountBatch {
                bytes: Box::new([0; BATCH]),
                controls: Box::new([[0; CONTROL_BYTES]; BATCH]),
                iovecs: Box::new(zeroed()),
                headers: Box::new(zeroed()),
            }
        }
    }

    /// Waits until something arrives (or the socket's read timeout passes) and takes
    /// what is queued, up to [`BATCH`] buffers. Returns the datagrams and their payload
    /// bytes.
    pub fn recv(&mut self, socket: &UdpSocket) -> io::Result<(u64, u64)> {
        for i in 0..BATCH {
            self.iovecs[i] = libc::iovec {
                iov_base: (&mut self.bytes[i] as *mut u8).cast(),
                iov_len: 1,
            };
            let header = &mut self.headers[i].msg_hdr;
            header.msg_name = std::ptr::null_mut();
            header.msg_namelen = 0;
            header.msg_iov = &mut self.iovecs[i];
            header.msg_iovlen = 1;
            header.msg_control = self.controls[i].as_mut_ptr().cast();
            header.msg_controllen = CONTROL_BYTES as _;
            header.msg_flags = 0;
            self.headers[i].msg_len = 0;
        }
        // SAFETY: every header points at buffers owned by self, sized as declared.
        let n = unsafe {
            libc::recvmmsg(
                socket.as_raw_fd(),
                self.headers.as_mut_ptr(),
                BATCH as libc::c_uint,
                (libc::MSG_WAITFORONE | libc::MSG_TRUNC) as _,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => Ok((0, 0)),
                _ => Err(e),
            };
        }
        let (mut datagrams, mut bytes) = (0u64, 0u64);
        for header in &self.headers[..n as usize] {
            // With MSG_TRUNC: the whole length, not what was copied.
            let len = u64::from(header.msg_len);
            let mut segment = 0u64;
            // SAFETY: the kernel filled the control buffer up to msg_controllen; the
            // CMSG macros stay inside it.
            unsafe {
                let msg = &header.msg_hdr;
                let mut cmsg = libc::CMSG_FIRSTHDR(msg);
                while !cmsg.is_null() {
                    if (*cmsg).cmsg_level == libc::IPPROTO_UDP && (*cmsg).cmsg_type == libc::UDP_GRO
                    {
                        let size: libc::c_int =
                            std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
                        segment = u64::try_from(size).unwrap_or(0);
                    }
                    cmsg = libc::CMSG_NXTHDR(msg, cmsg);
                }
            }
            datagrams += if segment > 0 {
                len.div_ceil(segment).max(1)
            } else {
                1
            };
            bytes += len;
        }
        Ok((datagrams, bytes))
    }
}

/// Sets `SO_PRIORITY`, which a `tc` HTB qdisc reads as a class id (`0x10010` is 1:10).
/// Values above 6 need CAP_NET_ADMIN.
pub fn set_priority(socket: &UdpSocket, priority: u32) -> io::Result<()> {
    if set_int(socket, libc::SO_PRIORITY, priority as libc::c_int) {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// One received datagram.
#[derive(Clone, Copy, Debug)]
pub struct Datagram<'a> {
    /// Its bytes (at most [`MAX_DATAGRAM`]).
    pub bytes: &'a [u8],
    /// It was longer than [`MAX_DATAGRAM`] and cut.
    pub truncated: bool,
    /// Its sender.
    pub from: Option<SocketAddr>,
    /// Arrival on CLOCK_MONOTONIC: the kernel's timestamp mapped, or the time the batch
    /// was returned when the kernel gave none.
    pub arrival_ns: u64,
    /// `arrival_ns` is the kernel's receive timestamp.
    pub kernel_timestamp: bool,
    /// The socket's count of datagrams dropped on a full queue, when enabled
    /// ([`enable_drop_counter`]); the kernel sends it once it is above 0.
    pub kernel_drops: Option<u32>,
}

/// Pre-allocated buffers for `recvmmsg`.
pub struct RecvBatch {
    buffers: Box<[[u8; MAX_DATAGRAM]; BATCH]>,
    addresses: Box<[libc::sockaddr_storage; BATCH]>,
    controls: Box<[[u8; CONTROL_BYTES]; BATCH]>,
    iovecs: Box<[libc::iovec; BATCH]>,
    headers: Box<[libc::mmsghdr; BATCH]>,
    received: usize,
    returned_ns: u64,
    /// `CLOCK_REALTIME - CLOCK_MONOTONIC`, refreshed by the caller now and then.
    pub realtime_offset_ns: i64,
}

impl RecvBatch {
    /// Buffers for [`BATCH`] datagrams. Allocates.
    pub fn new() -> RecvBatch {
        // SAFETY: all-zero is a valid value for these C structs (pointers are set
        // before every call).
        unsafe {
            RecvBatch {
                buffers: Box::new([[0; MAX_DATAGRAM]; BATCH]),
                addresses: Box::new(zeroed()),
                controls: Box::new([[0; CONTROL_BYTES]; BATCH]),
                iovecs: Box::new(zeroed()),
                headers: Box::new(zeroed()),
                received: 0,
                returned_ns: 0,
                realtime_offset_ns: realtime_minus_monotonic_ns(),
            }
        }
    }

    /// Receives up to [`BATCH`] datagrams. `wait`: block until at least one arrives (or
    /// the socket's read timeout passes); otherwise `MSG_DONTWAIT`, returning 0 at once
    /// when none is queued. Returns how many arrived.
    pub fn recv(&mut self, socket: &UdpSocket, wait: bool) -> io::Result<usize> {
        for i in 0..BATCH {
            self.iovecs[i] = libc::iovec {
                iov_base: self.buffers[i].as_mut_ptr().cast(),
                iov_len: MAX_DATAGRAM,
            };
            let header = &mut self.headers[i].msg_hdr;
            header.msg_name = (&mut self.addresses[i] as *mut libc::sockaddr_storage).cast();
            header.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            header.msg_iov = &mut self.iovecs[i];
            header.msg_iovlen = 1;
            header.msg_control = self.controls[i].as_mut_ptr().cast();
            header.msg_controllen = CONTROL_BYTES as _;
            header.msg_flags = 0;
            self.headers[i].msg_len = 0;
        }
        let flags = if wait {
            libc::MSG_WAITFORONE
        } else {
            libc::MSG_DONTWAIT
        };
        // SAFETY: every header points at buffers owned by self, sized as declared.
        let n = unsafe {
            libc::recvmmsg(
                socket.as_raw_fd(),
                self.headers.as_mut_ptr(),
                BATCH as libc::c_uint,
                flags as _,
                std::ptr::null_mut(),
            )
        };
        self.returned_ns = monotonic_ns();
        if n < 0 {
            self.received = 0;
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(0),
                _ => Err(e),
            };
        }
        self.received = n as usize;
        Ok(self.received)
    }

    /// Datagram `i` of the last [`recv`](Self::recv).
    pub fn get(&self, i: usize) -> Option<Datagram<'_>> {
        if i >= self.received {
            return None;
        }
        let header = &self.headers[i];
        let len = header.msg_len as usize;
        let truncated = header.msg_hdr.msg_flags & libc::MSG_TRUNC != 0 || len > MAX_DATAGRAM;
        let mut arrival_ns = self.returned_ns;
        let mut kernel_timestamp = false;
        let mut kernel_drops = None;
        // SAFETY: the kernel filled the control buffer up to msg_controllen; the CMSG
        // macros stay inside it.
        unsafe {
            let msg = &header.msg_hdr;
            let mut cmsg = libc::CMSG_FIRSTHDR(msg);
            while !cmsg.is_null() {
                if (*cmsg).cmsg_level == libc::SOL_SOCKET
                    && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPNS
                {
                    let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
                    let wall = ts.tv_sec * 1_000_000_000 + ts.tv_nsec;
                    let mono = wall - self.realtime_offset_ns;
                    if mono > 0 {
                        arrival_ns = mono as u64;
                        kernel_timestamp = true;
                    }
                }
                if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SO_RXQ_OVFL
                {
                    kernel_drops = Some(std::ptr::read_unaligned(
                        libc::CMSG_DATA(cmsg).cast::<u32>(),
                    ));
                }
                cmsg = libc::CMSG_NXTHDR(msg, cmsg);
            }
        }
        Some(Datagram {
            bytes: &self.buffers[i][..len.min(MAX_DATAGRAM)],
            truncated,
            from: socket_addr(&self.addresses[i]),
            arrival_ns,
            kernel_timestamp,
            kernel_drops,
        })
    }
}

impl Default for RecvBatch {
    fn default() -> Self {
        RecvBatch::new()
    }
}

fn socket_addr(storage: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match storage.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says this storage holds a sockaddr_in.
            let a: &libc::sockaddr_in =
                unsafe { &*(storage as *const _ as *const libc::sockaddr_in) };
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)),
                u16::from_be(a.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says this storage holds a sockaddr_in6.
            let a: &libc::sockaddr_in6 =
                unsafe { &*(storage as *const _ as *const libc::sockaddr_in6) };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(a.sin6_addr.s6_addr),
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Sends one datagram without blocking (`MSG_DONTWAIT`); `Ok(false)` when the kernel's
/// queue was full (`EAGAIN`/`ENOBUFS`: the datagram is lost, as on a congested link) or
/// the port refused it. Real-time safe.
pub fn send_to(socket: &UdpSocket, bytes: &[u8], to: SocketAddr) -> io::Result<bool> {
    let (storage, len) = sockaddr_of(to);
    // SAFETY: a valid socket, a buffer of `bytes.len()` bytes, an address of `len` bytes.
    let n = unsafe {
        libc::sendto(
            socket.as_raw_fd(),
            bytes.as_ptr().cast(),
            bytes.len(),
            libc::MSG_DONTWAIT,
            (&storage as *const libc::sockaddr_storage).cast(),
            len,
        )
    };
    sent_or_full(n)
}

/// Sends `bytes` to `to` as datagrams of `segment` bytes (the last may be shorter) in one
/// system call, cut by the kernel late on the path (UDP GSO: a `UDP_SEGMENT` control
/// message; at most 64 segments and 64 KiB). `Ok(false)` when the queue is full, an
/// error (EIO, EINVAL) when this path cannot segment.
pub fn send_segmented_to(
    socket: &UdpSocket,
    bytes: &[u8],
    segment: u16,
    to: SocketAddr,
) -> io::Result<bool> {
    let (mut storage, len) = sockaddr_of(to);
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    // Room for one cmsg carrying a u16, aligned as the kernel wants.
    let mut control = [0u64; 4];
    // SAFETY: all-zero msghdr is valid; every pointer set below outlives the call.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_name = (&mut storage as *mut libc::sockaddr_storage).cast();
    msg.msg_namelen = len;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE is a pure computation.
    msg.msg_controllen = unsafe { libc::CMSG_SPACE(size_of::<u16>() as u32) } as _;
    // SAFETY: msg_control points at a zeroed buffer of at least msg_controllen bytes,
    // so the first header is inside it and its data has room for a u16.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::IPPROTO_UDP;
        (*cmsg).cmsg_type = UDP_SEGMENT;
        (*cmsg).cmsg_len = libc::CMSG_LEN(size_of::<u16>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<u16>(), segment);
    }
    // SAFETY: a valid socket and a fully initialised msghdr.
    let n = unsafe { libc::sendmsg(socket.as_raw_fd(), &msg, libc::MSG_DONTWAIT) };
    sent_or_full(n)
}

fn sent_or_full(n: isize) -> io::Result<bool> {
    if n >= 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EAGAIN) | Some(libc::ENOBUFS) | Some(libc::ECONNREFUSED) => Ok(false),
        _ => Err(e),
    }
}

fn sockaddr_of(to: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: all-zero is a valid sockaddr_storage; it is filled below for the family.
    let mut storage: libc::sockaddr_storage = unsafe { zeroed() };
    let len = match to {
        SocketAddr::V4(a) => {
            // SAFETY: sockaddr_storage is large and aligned enough for a sockaddr_in.
            let sin = unsafe { &mut *(&mut storage as *mut _ as *mut libc::sockaddr_in) };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = a.port().to_be();
            sin.sin_addr = libc::in_addr {
                s_addr: u32::from(*a.ip()).to_be(),
            };
            size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            // SAFETY: sockaddr_storage is large and aligned enough for a sockaddr_in6.
            let sin6 = unsafe { &mut *(&mut storage as *mut _ as *mut libc::sockaddr_in6) };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = a.port().to_be();
            sin6.sin6_flowinfo = a.flowinfo();
            sin6.sin6_addr = libc::in6_addr {
                s6_addr: a.ip().octets(),
            };
            sin6.sin6_scope_id = a.scope_id();
            size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

/// Sends `bytes` `count` times (at most 64) on a *connected* socket with one `sendmmsg`,
/// without blocking; returns how many the kernel took (0 when its queue is full).
/// For bulk streams, where a system call per datagram would cap the rate.
pub fn send_repeated(socket: &UdpSocket, bytes: &[u8], count: usize) -> io::Result<usize> {
    const MAX: usize = 64;
    let count = count.min(MAX);
    // SAFETY: all-zero iovec and mmsghdr are valid (null pointers, zero lengths).
    let mut iov: [libc::iovec; MAX] = unsafe { zeroed() };
    let mut msgs: [libc::mmsghdr; MAX] = unsafe { zeroed() };
    for i in 0..count {
        iov[i] = libc::iovec {
            iov_base: bytes.as_ptr() as *mut libc::c_void,
            iov_len: bytes.len(),
        };
        msgs[i].msg_hdr.msg_iov = &mut iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: `count` initialised headers, each pointing at one iovec of `bytes`, which
    // the kernel only reads.
    let n = unsafe {
        libc::sendmmsg(
            socket.as_raw_fd(),
            msgs.as_mut_ptr(),
            count as libc::c_uint,
            libc::MSG_DONTWAIT,
        )
    };
    if n >= 0 {
        return Ok(n as usize);
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EAGAIN) | Some(libc::ENOBUFS) | Some(libc::ECONNREFUSED) => Ok(0),
        _ => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (UdpSocket, UdpSocket) {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        (tx, rx)
    }

    /// Datagrams dropped on a full queue after the last one read are counted by the
    /// socket alone: no datagram brings their count.
    #[test]
    fn drops_after_the_last_datagram_read_are_counted() {
        let (tx, rx) = pair();
        set_int(&rx, libc::SO_RCVBUF, 4096);
        let to = rx.local_addr().unwrap();
        for _ in 0..200 {
            tx.send_to(&[0u8; 1000], to).unwrap();
        }
        let dropped = dropped_so_far(&rx).expect("SO_MEMINFO");
        let mut buf = [0u8; 2048];
        rx.set_nonblocking(true).unwrap();
        let mut queued = 0;
        while rx.recv(&mut buf).is_ok() {
            queued += 1;
        }
        assert!(dropped > 0, "{queued} queued");
        assert_eq!(dropped + queued, 200);
    }

    fn received(rx: &UdpSocket, n: usize) -> Vec<Vec<u8>> {
        let mut buf = [0u8; 2048];
        (0..n)
            .map(|_| {
                let got = rx.recv(&mut buf).expect("a datagram");
                buf[..got].to_vec()
            })
            .collect()
    }

    #[test]
    fn a_segmented_send_arrives_as_separate_datagrams() {
        let (tx, rx) = pair();
        let to = rx.local_addr().unwrap();
        // Three full segments and a short last one, each segment its own byte.
        let mut bytes = Vec::new();
        for (i, len) in [100usize, 100, 100, 40].into_iter().enumerate() {
            bytes.extend(std::iter::repeat_n(i as u8 + 1, len));
        }
        match send_segmented_to(&tx, &bytes, 100, to) {
            Ok(true) => {}
            Ok(false) => panic!("the queue was full"),
            Err(e) => {
                eprintln!("skipped: this kernel cannot segment UDP ({e})");
                return;
            }
        }
        let got = received(&rx, 4);
        let lens: Vec<usize> = got.iter().map(Vec::len).collect();
        assert_eq!(lens, [100, 100, 100, 40]);
        for (i, d) in got.iter().enumerate() {
            assert!(d.iter().all(|&b| b == i as u8 + 1), "datagram {i}");
        }
    }

    /// A counting receiver takes a segmented send whole when it coalesces, and counts
    /// the same datagrams and bytes as one that has the kernel cut it.
    #[test]
    fn a_counting_receiver_counts_a_coalesced_send_by_its_segments() {
        for coalesce in [true, false] {
            let (tx, rx) = pair();
            if coalesce && !set_receive_coalescing(&rx) {
                eprintln!("skipped: this kernel has no UDP_GRO");
                continue;
            }
            let to = rx.local_addr().unwrap();
            match send_segmented_to(&tx, &[3u8; 340], 100, to) {
                Ok(true) => {}
                Ok(false) => panic!("the queue was full"),
                Err(e) => {
                    eprintln!("skipped: this kernel cannot segment UDP ({e})");
                    return;
                }
            }
            assert!(send_to(&tx, &[4u8; 50], to).unwrap());
            let mut batch = CountBatch::new();
            let (mut datagrams, mut bytes, mut calls) = (0, 0, 0);
            while datagrams < 5 {
                let (d, b) = batch.recv(&rx).unwrap();
                assert!(d > 0, "nothing arrived in 2 s");
                datagrams += d;
                bytes += b;
                calls += 1;
            }
            assert_eq!((datagrams, bytes), (5, 390), "coalesced: {coalesce}");
            assert!(calls <= 5);
        }
    }

    #[test]
    fn the_segmentation_option_cuts_every_send_and_can_be_turned_off() {
        let (tx, rx) = pair();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        if !set_segmentation(&tx, 200) {
            eprintln!("skipped: this kernel has no UDP GSO");
            return;
        }
        assert_eq!(send_repeated(&tx, &[7u8; 500], 2).unwrap(), 2);
        let lens: Vec<usize> = received(&rx, 6).iter().map(Vec::len).collect();
        assert_eq!(lens, [200, 200, 100, 200, 200, 100]);
        assert!(set_segmentation(&tx, 0));
        assert_eq!(send_repeated(&tx, &[7u8; 500], 1).unwrap(), 1);
        assert_eq!(received(&rx, 1)[0].len(), 500);
        assert_eq!(gso_segments_max(1472), 44);
    }
}
