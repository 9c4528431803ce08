//! `--isolate-net`: a run's process in a network namespace of its own
//! (Linux `unshare(CLONE_NEWNET)`), where only loopback exists and the
//! run's server listens. A request that bypasses the proxy variables then
//! fails instead of reaching the network. Namespaces belong to threads:
//! the thread that calls [`isolate_this_thread`] binds the server's socket
//! and starts the process, which both stay in the namespace.

use std::io::Error;

/// Move the calling thread into a new network namespace and bring its
/// loopback interface up; the error says why it could not.
pub(crate) fn isolate_this_thread() -> Result<(), String> {
    // SAFETY: unshare, socket, ioctl and close with valid arguments; the
    // ifreq is zeroed and names "lo".
    unsafe {
        if libc::unshare(libc::CLONE_NEWNET) != 0 {
            return Err(format!(
                "cannot make a network namespace for the process: unshare(CLONE_NEWNET) failed ({}); it needs Linux and CAP_SYS_ADMIN (root, or a container that allows namespaces). Run without --isolate-net to rely on the proxy alone",
                Error::last_os_error()
            ));
        }
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
        if fd < 0 {
            return Err(format!(
                "cannot bring up loopback in the new network namespace: {}",
                Error::last_os_error()
            ));
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        req.ifr_name[0] = b'l' as libc::c_char;
        req.ifr_name[1] = b'o' as libc::c_char;
        let up = libc::ioctl(fd, libc::SIOCGIFFLAGS as _, &mut req) == 0 && {
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            libc::ioctl(fd, libc::SIOCSIFFLAGS as _, &req) == 0
        };
        let err = Error::last_os_error();
        libc::close(fd);
        if !up {
            return Err(format!(
                "cannot bring up loopback in the new network namespace: {err}"
            ));
        }
    }
    Ok(())
}
