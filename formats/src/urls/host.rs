//! What a URL's host is, for deciding whether to forward or fetch it (SSRF): a DNS name, a
//! public IP address, or an address of this machine or of a private network. The master
//! refuses URLs by [`host_kind`] of their host; a fetcher applies [`ip_kind`] to each address a
//! name resolves to as well. Specified in docs/formats.md.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The kind of a URL host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostKind {
    /// A DNS name: what it resolves to is the fetcher's to check.
    Name,
    /// A globally routable IP address (an IP literal).
    PublicIp,
    /// This machine: 127.0.0.0/8, `::1`, `localhost` and names ending in `.localhost`.
    Loopback,
    /// An address that is not globally routable: private networks, link-local, unspecified,
    /// shared (CGN), documentation, benchmarking, multicast and reserved ranges.
    Private,
    /// Not a host at all (the WHATWG host parser refuses it).
    Invalid,
}

impl HostKind {
    /// Loopback or private: an address inside the operator's own networks.
    pub fn is_internal(self) -> bool {
        matches!(self, HostKind::Loopback | HostKind::Private)
    }
}

/// The kind of `host`, as a URL carries it (`a.ru`, `10.0.0.1`, `[::1]`) or in any form the
/// WHATWG host parser reads as an address (`2130706433`, `0x7f.1`, `%31%32%37.1`, full-width
/// digits): those are addresses too. A trailing dot changes nothing (`localhost.`).
pub fn host_kind(host: &str) -> HostKind {
    // Most hosts are lower-case DNS names: classified without the parser's IDNA pass.
    if plain_name(host) {
        return name_kind(host);
    }
    let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']'));
    if let Some(Ok(v6)) = bare.map(str::parse::<Ipv6Addr>) {
        return ip_kind(IpAddr::V6(v6));
    }
    match url::Host::parse(host) {
        Ok(url::Host::Ipv4(a)) => ip_kind(IpAddr::V4(a)),
        Ok(url::Host::Ipv6(a)) => ip_kind(IpAddr::V6(a)),
        Ok(url::Host::Domain(d)) => name_kind(&d),
        Err(_) => HostKind::Invalid,
    }
}

/// The host of a normalised URL (a WHATWG serialisation, whose authority ends at the first
/// `/`), and whether the URL carries user info: `http://u:p@[::1]:81/x` → `(true, "[::1]")`.
pub fn host_of(normalized: &str) -> (bool, &str) {
    let rest = normalized
        .split_once("://")
        .map_or(normalized, |(_, rest)| rest);
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let (userinfo, host_port) = match authority.rfind('@') {
        Some(at) => (true, &authority[at + 1..]),
        None => (false, authority),
    };
    let host = match host_port.find(']') {
        Some(end) if host_port.starts_with('[') => &host_port[..=end],
        _ => host_port.split(':').next().unwrap_or(host_port),
    };
    (userinfo, host)
}

/// A lower-case ASCII DNS name that the host parser would not read as an IPv4 address: its
/// last label (less a trailing dot) is neither all digits nor `0x` and hex digits.
fn plain_name(host: &str) -> bool {
    if host.is_empty()
        || !host
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    {
        return false;
    }
    let trimmed = host.strip_suffix('.').unwrap_or(host);
    let last = trimmed.rsplit('.').next().unwrap_or("");
    let number = !last.is_empty() && last.bytes().all(|b| b.is_ascii_digit());
    let hex = last
        .strip_prefix("0x")
        .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
    !last.is_empty() && !number && !hex && !last.starts_with("xn--")
}

/// `localhost` and its subdomains are this machine whatever DNS says (RFC 6761).
fn name_kind(name: &str) -> HostKind {
    let name = name.strip_suffix('.').unwrap_or(name);
    if name.eq_ignore_ascii_case("localhost")
        || name.len() > 10 && name[name.len() - 10..].eq_ignore_ascii_case(".localhost")
    {
        HostKind::Loopback
    } else {
        HostKind::Name
    }
}

/// The kind of an IP address: [`HostKind::PublicIp`], [`HostKind::Loopback`] or
/// [`HostKind::Private`]. IPv6 addresses that carry an IPv4 one (mapped, compatible, NAT64,
/// 6to4) are what that IPv4 address is.
pub fn ip_kind(ip: IpAddr) -> HostKind {
    match non_public(ip) {
        None => HostKind::PublicIp,
        Some("loopback") => HostKind::Loopback,
        Some(_) => HostKind::Private,
    }
}

/// The name of the range that makes `ip` not a public address (`"loopback"`, `"private"`,
/// `"link-local"`, …), or `None` for a public one. The one classifier of addresses: the
/// master's URL checks ([`ip_kind`]) and the fetcher's check of every address it connects to.
pub fn non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(a) => non_public_v4(a),
        IpAddr::V6(a) => non_public_v6(a),
    }
}

fn non_public_v4(a: Ipv4Addr) -> Option<&'static str> {
    Some(match a.octets() {
        [0, ..] => "unspecified (0.0.0.0/8)",
        [127, ..] => "loopback",
        [10, ..] | [172, 16..=31, ..] | [192, 168, ..] => "private",
        [169, 254, ..] => "link-local",
        [100, 64..=127, ..] => "shared (carrier-grade NAT)",
        [192, 0, 0, _] => "IETF protocol assignments",
        [192, 0, 2, _] | [198, 51, 100, _] | [203, 0, 113, _] => "documentation",
        [198, 18..=19, ..] => "benchmarking",
        [224..=239, ..] => "multicast",
        [240..=255, ..] => "reserved (or broadcast)",
        _ => return None,
    })
}

fn non_public_v6(a: Ipv6Addr) -> Option<&'static str> {
    let embedded = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    Some(match a.segments() {
        [0, 0, 0, 0, 0, 0, 0, 0] => "unspecified",
        [0, 0, 0, 0, 0, 0, 0, 1] => "loopback",
        // IPv4-mapped, IPv4-compatible and NAT64 addresses reach the IPv4 address they hold;
        // 6to4 carries it in bits 16..48.
        [0, 0, 0, 0, 0, 0xffff, hi, lo]
        | [0, 0, 0, 0, 0, 0, hi, lo]
        | [0x64, 0xff9b, 0, 0, 0, 0, hi, lo]
        | [0x2002, hi, lo, ..] => return non_public_v4(embedded(hi, lo)),
        [0x64, 0xff9b, 1, ..] => "local-use NAT64",
        [0x100, 0, 0, 0, ..] => "discard-only",
        [0x2001, 0xdb8, ..] => "documentation",
        [0x2001, x, ..] if x < 0x200 => "IETF protocol assignments (Teredo)",
        [x, ..] if x & 0xfff0 == 0x3ff0 => "documentation (3fff::/20)",
        [x, ..] if x & 0xfe00 == 0xfc00 => "unique local (private)",
        [x, ..] if x & 0xffc0 == 0xfe80 => "link-local",
        [x, ..] if x & 0xffc0 == 0xfec0 => "site-local (private)",
        [x, ..] if x & 0xff00 == 0xff00 => "multicast",
        [0, ..] => "reserved (::/16)",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_addresses_and_their_odd_spellings() {
        use HostKind::*;
        for (host, kind) in [
            ("a.ru", Name),
            ("www.xn--e1afmkfd.xn--p1ai", Name),
            ("пример.рф", Name),
            ("a-1.example.", Name),
            ("1a.example", Name),
            ("0xg.example", Name),
            ("localhost", Loopback),
            ("LOCALHOST.", Loopback),
            ("x.localhost", Loopback),
            ("a.b.localhost.", Loopback),
            ("notlocalhost", Name),
            ("localhost.ru", Name),
            ("127.0.0.1", Loopback),
            ("127.1.2.3", Loopback),
            ("2130706433", Loopback),
            ("0x7f.1", Loopback),
            ("0X7F.0.0.1", Loopback),
            ("0177.0.0.1", Loopback),
            ("127.0.0.1.", Loopback),
            ("%31%32%37.0.0.1", Loopback),
            ("１２７.０.０.１", Loopback),
            ("[::1]", Loopback),
            ("[0:0:0:0:0:0:0:1]", Loopback),
            ("[::ffff:127.0.0.1]", Loopback),
            ("[::ffff:7f00:1]", Loopback),
            ("[::127.0.0.1]", Loopback),
            ("[64:ff9b::7f00:1]", Loopback),
            ("[2002:7f00:1::]", Loopback),
            ("0.0.0.0", Private),
            ("0", Private),
            ("10.1.2.3", Private),
            ("167772161", Private),
            ("172.16.0.1", Private),
            ("172.31.255.255", Private),
            ("192.168.1.1", Private),
            ("169.254.169.254", Private),
            ("100.64.0.1", Private),
            ("198.18.0.1", Private),
            ("192.0.2.1", Private),
            ("224.0.0.1", Private),
            ("255.255.255.255", Private),
            ("[::]", Private),
            ("[fe80::1]", Private),
            ("[fd00::1]", Private),
            ("[fc00::]", Private),
            ("[ff02::1]", Private),
            ("[2001:db8::1]", Private),
            ("[::ffff:10.0.0.1]", Private),
            ("[::ffff:169.254.169.254]", Private),
            ("8.8.8.8", PublicIp),
            ("172.32.0.1", PublicIp),
            ("100.128.0.1", PublicIp),
            ("134744072", PublicIp),
            ("[2606:4700::1111]", PublicIp),
            ("[::ffff:8.8.8.8]", PublicIp),
            ("[2002:808:808::]", PublicIp),
            ("", Invalid),
            ("a b", Invalid),
            ("[::1", Invalid),
            ("256.1.1.1", Invalid),
            ("<script>", Invalid),
        ] {
            assert_eq!(host_kind(host), kind, "{host}");
        }
        assert!(Loopback.is_internal() && Private.is_internal());
        assert!(!PublicIp.is_internal() && !Name.is_internal());
    }

    #[test]
    fn addresses_as_a_resolver_returns_them() {
        assert_eq!(ip_kind("127.0.0.53".parse().unwrap()), HostKind::Loopback);
        assert_eq!(ip_kind("10.0.0.1".parse().unwrap()), HostKind::Private);
        assert_eq!(ip_kind("fe80::1".parse().unwrap()), HostKind::Private);
        assert_eq!(
            ip_kind("93.184.216.34".parse().unwrap()),
            HostKind::PublicIp
        );
        assert_eq!(ip_kind("2a00:1450::1".parse().unwrap()), HostKind::PublicIp);
    }

    #[test]
    fn the_host_of_a_normalised_url() {
        for (url, found) in [
            ("http://a.ru/", (false, "a.ru")),
            ("https://a.ru:8443/p?q=@x", (false, "a.ru")),
            ("http://u:p@[::1]:81/x", (true, "[::1]")),
            ("http://u@127.0.0.1/", (true, "127.0.0.1")),
            ("http://%40:@a.ru/", (true, "a.ru")),
            ("http://[fe80::1]/", (false, "[fe80::1]")),
        ] {
            assert_eq!(host_of(url), found, "{url}");
        }
    }

    /// Every host a normalised URL can carry is classified as the parser reads it.
    #[test]
    fn the_plain_name_shortcut_agrees_with_the_parser() {
        for host in [
            "a.ru",
            "0x1.ru",
            "a.0x1",
            "a.123",
            "a.1b",
            "1.2.3.4",
            "a..b",
            "xn--p1ai",
            "x.xn--p1ai",
            "0xff",
            "a.0xfg",
        ] {
            let by_parser = match url::Host::parse(host) {
                Ok(url::Host::Domain(d)) => name_kind(&d),
                Ok(url::Host::Ipv4(a)) => ip_kind(IpAddr::V4(a)),
                Ok(url::Host::Ipv6(a)) => ip_kind(IpAddr::V6(a)),
                Err(_) => HostKind::Invalid,
            };
            if plain_name(host) {
                assert_eq!(by_parser, HostKind::Name, "{host}");
            }
            assert_eq!(host_kind(host), by_parser, "{host}");
        }
    }
}
