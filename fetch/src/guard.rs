//! What the fetcher refuses to fetch (server-side request forgery): URLs with user info, and
//! any connection to an address that is not public (loopback, private, link-local, unspecified
//! …) unless `Fetch.AllowPrivate` lists it. A URL is checked when it is submitted and at every
//! redirect hop (an IP address as host is checked there); every address libcurl is about to
//! connect to is checked by its open-socket callback, after DNS resolution and before a socket
//! exists — so a name that resolves (or is rebound) to 127.0.0.1 or 10.x is refused before any
//! byte is sent. Through a proxy (`crate::proxy`) the only socket is the proxy's, which the
//! callback lets be; the target's name is checked by `crate::lookup` instead.

use std::ffi::c_void;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use curl::easy::Easy2;

pub use focuser_formats::urls::non_public;

/// `Fetch.AllowPrivate`: the addresses that are fetched from although they are not public —
/// addresses and networks (`127.0.0.1`, `10.0.0.0/8`, `fd00::/8`), or `*` for every one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowedPrivate {
    every: bool,
    nets: Vec<(IpAddr, u8)>,
}

impl AllowedPrivate {
    /// Parses the entries, or says which one is not an address, a network or `*`.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<AllowedPrivate, String> {
        let mut allowed = AllowedPrivate::default();
        for entry in entries {
            let entry = entry.as_ref().trim();
            if entry == "*" {
                allowed.every = true;
                continue;
            }
            let bad = || format!("{entry:?} is not an address, address/prefix or *");
            let (addr, prefix) = entry.split_once('/').unwrap_or((entry, ""));
            let addr: IpAddr = addr.parse().map_err(|_| bad())?;
            let max = if addr.is_ipv4() { 32 } else { 128 };
            let prefix = match prefix {
                "" => max,
                p => p.parse().ok().filter(|p| *p <= max).ok_or_else(bad)?,
            };
            allowed.nets.push((addr, prefix));
        }
        Ok(allowed)
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        self.every
            || self
                .nets
                .iter()
                .any(|(net, prefix)| within(ip, *net, *prefix))
    }

    /// Why a connection to `ip` is refused: it is not public and not allowed.
    pub(crate) fn refuses(&self, ip: IpAddr) -> Option<&'static str> {
        non_public(ip).filter(|_| !self.contains(ip))
    }
}

/// Is `ip` in `net/prefix`?
fn within(ip: IpAddr, net: IpAddr, prefix: u8) -> bool {
    let (ip, net, bits) = match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => (u128::from(u32::from(a)), u128::from(u32::from(n)), 32),
        (IpAddr::V6(a), IpAddr::V6(n)) => (u128::from(a), u128::from(n), 128),
        _ => return false,
    };
    let shift = bits - u32::from(prefix);
    shift >= bits || (ip >> shift) == (net >> shift)
}

/// Why the fetcher does not fetch `url` at all, before any connection: user info, or an IP
/// address as host that is not public and not allowed.
pub(crate) fn refused_url(url: &url::Url, allowed: &AllowedPrivate) -> Option<String> {
    if !url.username().is_empty() || url.password().is_some() {
        return Some("user info in the URL".into());
    }
    let ip = match url.host()? {
        url::Host::Domain(_) => return None,
        url::Host::Ipv4(a) => IpAddr::V4(a),
        url::Host::Ipv6(a) => IpAddr::V6(a),
    };
    let kind = allowed.refuses(ip)?;
    Some(format!(
        "its host {ip} is not public ({kind}): not fetched, see Fetch.AllowPrivate"
    ))
}

/// An address the open-socket callback refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub addr: IpAddr,
    pub kind: &'static str,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "its address {} is not public ({}): not fetched, see Fetch.AllowPrivate",
            self.addr, self.kind
        )
    }
}

/// What one easy handle's open-socket callback knows: the addresses allowed, whether the
/// transfer goes through the proxy, and the last address it refused. Shared (`Arc`) between the
/// handle's collector and libcurl, which holds a pointer to it for as long as the handle lives.
#[derive(Debug, Default)]
pub(crate) struct SocketGuard {
    allowed: Arc<AllowedPrivate>,
    /// The transfer goes through `Fetch.Proxy`: its only socket is the proxy's.
    via_proxy: AtomicBool,
    refused: Mutex<Option<Refusal>>,
}

impl SocketGuard {
    pub fn new(allowed: Arc<AllowedPrivate>) -> SocketGuard {
        SocketGuard {
            allowed,
            via_proxy: AtomicBool::new(false),
            refused: Mutex::new(None),
        }
    }

    /// The address refused since the last [`install`], if any.
    pub fn take_refusal(&self) -> Option<Refusal> {
        self.refused.lock().ok().and_then(|mut r| r.take())
    }

    /// Decides on one address libcurl is about to connect to.
    fn check(&self, addr: Option<SocketAddr>) -> Result<(), ()> {
        // Only IP sockets are ever asked for; anything else is refused.
        let Some(addr) = addr else { return Err(()) };
        if self.via_proxy.load(Ordering::Relaxed) {
            // The proxy's address: the operator named it (the target was checked by name).
            return Ok(());
        }
        let Some(kind) = self.allowed.refuses(addr.ip()) else {
            return Ok(());
        };
        if let Ok(mut r) = self.refused.lock() {
            *r = Some(Refusal {
                addr: addr.ip(),
                kind,
            });
        }
        Err(())
    }
}

/// Makes `guard` decide on every socket `easy` opens from now on; `via_proxy`: the transfer
/// goes through the proxy.
pub(crate) fn install<H>(
    easy: &mut Easy2<H>,
    guard: &Arc<SocketGuard>,
    via_proxy: bool,
) -> Result<(), curl::Error> {
    guard.take_refusal();
    guard.via_proxy.store(via_proxy, Ordering::Relaxed);
    let raw = easy.raw();
    let data = Arc::as_ptr(guard) as *mut c_void;
    let callback: curl_sys::curl_opensocket_callback = open_socket;
    // SAFETY: `raw` is the live handle of `easy`. The callback's data points into `guard`,
    // which the handle's own collector keeps alive (an `Arc` held for the handle's whole life,
    // and every use of the handle installs the guard again), and is only read through shared
    // references (immutable data and a mutex). libcurl calls the callback on the thread
    // driving the transfer, with a valid address for the duration of the call.
    #[allow(unsafe_code)]
    let codes = unsafe {
        [
            curl_sys::curl_easy_setopt(raw, curl_sys::CURLOPT_OPENSOCKETFUNCTION, callback),
            curl_sys::curl_easy_setopt(raw, curl_sys::CURLOPT_OPENSOCKETDATA, data),
        ]
    };
    match codes.into_iter().find(|c| *c != curl_sys::CURLE_OK) {
        Some(code) => Err(curl::Error::new(code)),
        None => Ok(()),
    }
}

/// libcurl's CURLOPT_OPENSOCKETFUNCTION: refuses (no socket: the connection attempt fails
/// with "could not connect") or opens the socket as the curl crate does (close-on-exec).
extern "C" fn open_socket(
    data: *mut c_void,
    _purpose: curl_sys::curlsocktype,
    address: *mut curl_sys::curl_sockaddr,
) -> curl_sys::curl_socket_t {
    if data.is_null() || address.is_null() {
        return curl_sys::CURL_SOCKET_BAD;
    }
    // SAFETY: see `install`: `data` is the guard, `address` libcurl's, both valid here.
    #[allow(unsafe_code)]
    let (guard, (family, socktype, protocol), addr) = unsafe {
        let a = &*address;
        (
            &*(data as *const SocketGuard),
            (a.family, a.socktype, a.protocol),
            socket_addr(address),
        )
    };
    if guard.check(addr).is_err() {
        return curl_sys::CURL_SOCKET_BAD;
    }
    match socket2::Socket::new(
        socket2::Domain::from(family),
        socket2::Type::from(socktype),
        Some(socket2::Protocol::from(protocol)),
    ) {
        Ok(socket) => std::os::fd::IntoRawFd::into_raw_fd(socket),
        Err(_) => curl_sys::CURL_SOCKET_BAD,
    }
}

/// The IP address and port of libcurl's `curl_sockaddr` (`None` for another family).
///
/// # Safety
/// `a` points to libcurl's address: `addrlen` bytes of a socket address from its `addr` field
/// on (its storage is larger than the field's own type).
#[allow(unsafe_code)]
unsafe fn socket_addr(a: *const curl_sys::curl_sockaddr) -> Option<SocketAddr> {
    let (family, len) = ((*a).family, (*a).addrlen as usize);
    let at = std::ptr::addr_of!((*a).addr);
    match family {
        libc::AF_INET if len >= std::mem::size_of::<libc::sockaddr_in>() => {
            let sin = std::ptr::read_unaligned(at.cast::<libc::sockaddr_in>());
            let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
            Some(SocketAddr::V4(SocketAddrV4::new(
                ip,
                u16::from_be(sin.sin_port),
            )))
        }
        libc::AF_INET6 if len >= std::mem::size_of::<libc::sockaddr_in6>() => {
            let sin6 = std::ptr::read_unaligned(at.cast::<libc::sockaddr_in6>());
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(sin6.sin6_addr.s6_addr),
                u16::from_be(sin6.sin6_port),
                sin6.sin6_flowinfo,
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn kind(a: &str) -> Option<&'static str> {
        non_public(a.parse().unwrap())
    }

    #[test]
    fn addresses_that_are_not_public_are_named() {
        for (a, k) in [
            ("127.0.0.1", "loopback"),
            ("127.255.0.9", "loopback"),
            ("10.1.2.3", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("169.254.169.254", "link-local"),
            ("0.0.0.0", "unspecified (0.0.0.0/8)"),
            ("100.64.0.1", "shared (carrier-grade NAT)"),
            ("224.0.0.1", "multicast"),
            ("255.255.255.255", "reserved (or broadcast)"),
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:10.0.0.1", "private"),
            ("64:ff9b::a9fe:a9fe", "link-local"),
            ("2002:c0a8:0101::1", "private"),
            ("fd00::1", "unique local (private)"),
            ("fe80::1", "link-local"),
            ("ff02::1", "multicast"),
            ("2001:db8::1", "documentation"),
        ] {
            assert_eq!(kind(a), Some(k), "{a}");
        }
        for a in [
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "93.184.216.34",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "2002:0808:0808::1",
        ] {
            assert_eq!(kind(a), None, "{a}");
        }
    }

    #[test]
    fn allowed_private_addresses_are_parsed_and_matched() {
        let a = AllowedPrivate::parse(&["127.0.0.1", "10.0.0.0/8", "fd00::/8"]).unwrap();
        for ip in ["127.0.0.1", "10.200.3.4", "fd12::1"] {
            assert!(a.contains(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["127.0.0.2", "11.0.0.1", "::1", "fe80::1"] {
            assert!(!a.contains(ip.parse().unwrap()), "{ip}");
        }
        let every = AllowedPrivate::parse(&["*"]).unwrap();
        assert!(every.contains("169.254.169.254".parse().unwrap()));
        assert!(AllowedPrivate::parse(&["0.0.0.0/0"])
            .unwrap()
            .contains("10.1.1.1".parse().unwrap()));
        assert_eq!(
            AllowedPrivate::parse::<&str>(&[]).unwrap(),
            AllowedPrivate::default()
        );
        for bad in ["1", "yes", "10.0.0.0/33", "::1/129", "10.0.0.0/x", "a.test"] {
            let e = AllowedPrivate::parse(&[bad]).unwrap_err();
            assert!(e.contains(bad), "{e}");
        }
    }

    #[test]
    fn urls_with_user_info_or_a_private_ip_host_are_refused() {
        let none = AllowedPrivate::default();
        let loopback = AllowedPrivate::parse(&["127.0.0.0/8", "::1"]).unwrap();
        let refused = |u: &str, a: &AllowedPrivate| refused_url(&url::Url::parse(u).unwrap(), a);
        assert!(refused("http://a.ru/", &none).is_none());
        assert!(refused("http://8.8.8.8/", &none).is_none());
        for u in ["http://user@a.ru/", "http://u:p@a.ru/", "http://:p@a.ru/"] {
            assert_eq!(refused(u, &none).as_deref(), Some("user info in the URL"));
            assert_eq!(
                refused(u, &loopback).as_deref(),
                Some("user info in the URL")
            );
        }
        // However the address is written, it is the address that counts.
        for u in [
            "http://127.0.0.1/",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://[::1]:8080/",
            "http://[::ffff:7f00:1]/",
        ] {
            let why = refused(u, &none).unwrap();
            assert!(why.contains("is not public (loopback)"), "{u}: {why}");
        }
        assert!(refused("http://127.0.0.1/", &loopback).is_none());
        assert!(refused("http://[::1]/", &loopback).is_none());
        let why = refused("http://10.0.0.1/", &loopback).unwrap();
        assert_eq!(
            why,
            "its host 10.0.0.1 is not public (private): not fetched, see Fetch.AllowPrivate"
        );
    }

    #[test]
    fn the_guard_refuses_and_remembers_addresses_that_are_not_public() {
        let guard = SocketGuard::default();
        let at = |a: &str| Some(a.parse::<SocketAddr>().unwrap());
        assert_eq!(guard.check(at("93.184.216.34:80")), Ok(()));
        assert_eq!(guard.take_refusal(), None);
        assert_eq!(guard.check(at("[::1]:80")), Err(()));
        assert_eq!(guard.check(None), Err(()));
        let r = guard.take_refusal().unwrap();
        assert_eq!(
            r.to_string(),
            "its address ::1 is not public (loopback): not fetched, see Fetch.AllowPrivate"
        );
        let allowing = SocketGuard::new(Arc::new(AllowedPrivate::parse(&["10.0.0.0/8"]).unwrap()));
        assert_eq!(allowing.check(at("10.0.0.1:80")), Ok(()));
        assert_eq!(allowing.check(at("127.0.0.1:80")), Err(()));
        // Through the proxy, the socket is the proxy's, wherever it is.
        allowing.via_proxy.store(true, Ordering::Relaxed);
        assert_eq!(allowing.check(at("127.0.0.1:3128")), Ok(()));
    }
}
