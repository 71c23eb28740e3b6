//! The socket options a driver set, read back from this process's own sockets: a
//! driver's tests check `send.buffer.bytes` / `receive.buffer.bytes` reached the
//! sockets it opened, with nothing in the driver's API to peek at them.

use std::net::SocketAddr;

/// `(SO_SNDBUF, SO_RCVBUF)` of every socket of this process connected to `peer`
/// (Linux: found through `/proc/self/fd`; empty elsewhere). Linux reports twice the
/// value set (its bookkeeping overhead, `socket(7)`).
#[must_use]
pub fn buffers_of_sockets_connected_to(peer: SocketAddr) -> Vec<(usize, usize)> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::BorrowedFd;
        let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for entry in dir.flatten() {
            let Some(fd) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok())
            else {
                continue;
            };
            let is_socket = std::fs::read_link(entry.path())
                .is_ok_and(|target| target.to_string_lossy().starts_with("socket:"));
            if !is_socket {
                continue;
            }
            // SAFETY: `fd` is open in this process for the duration of this loop
            // iteration as far as this thread can tell; a socket closed concurrently
            // only makes the queries below fail (EBADF), which is skipped. The borrow
            // never closes it.
            let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
            let sock = socket2::SockRef::from(&borrowed);
            let connected_to_peer = sock
                .peer_addr()
                .ok()
                .and_then(|a| a.as_socket())
                .is_some_and(|a| a == peer);
            if !connected_to_peer {
                continue;
            }
            if let (Ok(send), Ok(receive)) = (sock.send_buffer_size(), sock.recv_buffer_size()) {
                out.push((send, receive));
            }
        }
        out
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = peer;
        Vec::new()
    }
}
