//! Fetching through a proxy: `Fetch.Proxy` (`http://`, `https://`, `socks5://` or `socks5h://`
//! `host:port`), its credentials (`Fetch.ProxyAuthFile`: the caller reads the file, this crate
//! does no file I/O) and `Fetch.NoProxy`, the hosts fetched directly.
//!
//! The address guard with a proxy: libcurl connects only to the proxy, which the operator named,
//! so the open-socket callback lets that connection be (whatever its address); the target's own
//! name is resolved by the fetcher before any transfer to it starts, and refused when one of its
//! addresses is not public (`crate::lookup`).

use std::fmt;

/// `Fetch.Proxy`, checked: `scheme://host:port` and nothing else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proxy {
    url: String,
}

impl Proxy {
    /// The proxy of a `Fetch.Proxy` value, or why it is not one. The reason never repeats the
    /// value (a mistyped one may hold a password).
    pub fn parse(text: &str) -> Result<Proxy, String> {
        const FORM: &str = "write scheme://host:port (http, https, socks5 or socks5h)";
        let url = url::Url::parse(text.trim()).map_err(|e| format!("not a URL ({e}); {FORM}"))?;
        let scheme = url.scheme();
        if !matches!(scheme, "http" | "https" | "socks5" | "socks5h") {
            return Err(format!("scheme {scheme:?} is not a proxy's; {FORM}"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err("user info in the URL: put the credentials in Fetch.ProxyAuthFile".into());
        }
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| format!("no host; {FORM}"))?;
        let port = url.port().ok_or_else(|| format!("no port; {FORM}"))?;
        if !matches!(url.path(), "" | "/") || url.query().is_some() || url.fragment().is_some() {
            return Err(format!("a path, query or fragment; {FORM}"));
        }
        Ok(Proxy {
            url: format!("{scheme}://{host}:{port}"),
        })
    }

    /// `scheme://host:port`, as libcurl takes it (and as logs name the proxy).
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl fmt::Display for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.url)
    }
}

/// The proxy's credentials. Never shown: `{:?}` prints `ProxyAuth(<hidden>)`.
#[derive(Clone, PartialEq, Eq)]
pub struct ProxyAuth {
    user: String,
    password: String,
}

impl fmt::Debug for ProxyAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProxyAuth(<hidden>)")
    }
}

/// Why a credentials file was refused: its line (when one is at fault) and the reason, which
/// never quotes the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthFileError {
    pub line: Option<usize>,
    pub reason: &'static str,
}

impl fmt::Display for AuthFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {}", self.reason),
            None => f.write_str(self.reason),
        }
    }
}

impl ProxyAuth {
    pub fn new(user: &str, password: &str) -> ProxyAuth {
        ProxyAuth {
            user: user.to_string(),
            password: password.to_string(),
        }
    }

    /// A credentials file's text: one `user:password` line (the password is what follows the
    /// first colon), blank lines and `#` comments aside; whitespace around the line is not
    /// part of it.
    pub fn parse(text: &str) -> Result<ProxyAuth, AuthFileError> {
        let mut found = None;
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |reason| {
                Err(AuthFileError {
                    line: Some(i + 1),
                    reason,
                })
            };
            if found.is_some() {
                return bad("a second user:password line (one is read)");
            }
            let Some((user, password)) = line.split_once(':') else {
                return bad("expected user:password");
            };
            if user.is_empty() || password.is_empty() {
                return bad("empty user or password");
            }
            if line.chars().any(char::is_control) {
                return bad("a control character");
            }
            found = Some(ProxyAuth::new(user, password));
        }
        found.ok_or(AuthFileError {
            line: None,
            reason: "no user:password line",
        })
    }

    pub(crate) fn user(&self) -> &str {
        &self.user
    }

    pub(crate) fn password(&self) -> &str {
        &self.password
    }
}

/// `Fetch.NoProxy`: hosts fetched directly (through the open-socket guard) although a proxy is
/// set. A name stands for itself and every name under it (`example.com`, or `.example.com`,
/// takes `a.example.com`); an IP address for itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct NoProxy {
    names: Vec<String>,
}

impl NoProxy {
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<NoProxy, String> {
        let mut names = Vec::new();
        for entry in entries {
            let raw = entry.as_ref().trim();
            let bare = raw
                .trim_start_matches('.')
                .trim_start_matches('[')
                .trim_end_matches(']');
            // As the URL parser writes hosts: lower case, IPv6 in brackets.
            let host = match bare.contains(':') {
                true => url::Host::parse(&format!("[{bare}]")),
                false => url::Host::parse(bare),
            };
            match host {
                Ok(h) if !bare.is_empty() && !bare.contains('*') => names.push(h.to_string()),
                _ => return Err(format!("{raw:?} is not a host name or an IP address")),
            }
        }
        Ok(NoProxy { names })
    }

    /// Is `url` fetched directly?
    pub fn matches(&self, url: &url::Url) -> bool {
        let Some(host) = url.host() else { return false };
        let host = host.to_string();
        self.names.iter().any(|n| {
            host == *n
                || host
                    .strip_suffix(n.as_str())
                    .is_some_and(|p| p.ends_with('.'))
        })
    }
}

/// libcurl's code for a SOCKS proxy's failure (CURLE_PROXY, 7.73).
const CURLE_PROXY: u32 = 97;
/// libcurl's code for a proxy name that does not resolve.
const CURLE_COULDNT_RESOLVE_PROXY: u32 = 5;

/// A transfer through `proxy` that failed because of the proxy: why, and whether another try
/// could help (an unreachable proxy, a SOCKS failure or a 5xx to CONNECT may pass; a 407 or a
/// CONNECT denied will not).
pub(crate) fn failure(
    proxy: &Proxy,
    result: &Result<(), curl::Error>,
    status: Option<u16>,
    connect_code: Option<u16>,
) -> Option<(String, bool)> {
    const AUTH: &str = "Proxy Authentication Required: see Fetch.ProxyAuthFile";
    if let Some(code) = connect_code.filter(|c| !(200..=299).contains(c)) {
        let why = match code {
            407 => format!("the proxy {proxy} answered CONNECT with 407 {AUTH}"),
            _ => format!("the proxy {proxy} answered CONNECT with {code}"),
        };
        return Some((why, code >= 500));
    }
    match (result, status) {
        (Err(e), _) if e.code() == CURLE_COULDNT_RESOLVE_PROXY => Some((
            format!("the proxy {proxy}: its name does not resolve: {e}"),
            true,
        )),
        (Err(e), _) if e.is_couldnt_connect() => {
            Some((format!("the proxy {proxy} cannot be reached: {e}"), true))
        }
        (Err(e), _) if e.code() == CURLE_PROXY => {
            Some((format!("the proxy {proxy} failed: {e}"), true))
        }
        (Ok(()), Some(407)) => Some((format!("the proxy {proxy} answered 407 {AUTH}"), false)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn proxies_are_scheme_host_and_port() {
        for (text, url) in [
            ("http://proxy.test:3128", "http://proxy.test:3128"),
            ("http://Proxy.Test:3128/", "http://proxy.test:3128"),
            (" https://10.0.0.1:3129 ", "https://10.0.0.1:3129"),
            ("socks5://[::1]:1080", "socks5://[::1]:1080"),
            ("socks5h://p.test:1080", "socks5h://p.test:1080"),
        ] {
            assert_eq!(Proxy::parse(text).unwrap().url(), url, "{text}");
        }
        for (text, why) in [
            ("ftp://p.test:21", "scheme \"ftp\" is not a proxy's"),
            ("socks4://p.test:1080", "scheme \"socks4\""),
            ("p.test:3128", "scheme \"p.test\""),
            ("proxy", "not a URL"),
            ("http://p.test", "no port"),
            ("http://p.test:3128/x", "a path"),
            ("http://u:secret@p.test:3128", "user info in the URL"),
        ] {
            let e = Proxy::parse(text).unwrap_err();
            assert!(e.contains(why), "{text}: {e}");
            assert!(!e.contains("secret") && !e.contains(text), "{e}");
        }
    }

    #[test]
    fn credentials_are_one_line_and_never_shown() {
        let a = ProxyAuth::parse("# the spider proxy\n\n  crawler:pa:ss word \n").unwrap();
        assert_eq!((a.user(), a.password()), ("crawler", "pa:ss word"));
        assert_eq!(format!("{a:?}"), "ProxyAuth(<hidden>)");
        for (text, line, reason) in [
            ("", None, "no user:password line"),
            ("# only\n", None, "no user:password line"),
            ("\nsecret\n", Some(2), "expected user:password"),
            (":secret\n", Some(1), "empty user or password"),
            ("user:\n", Some(1), "empty user or password"),
            (
                "a:secret\nb:secret\n",
                Some(2),
                "a second user:password line",
            ),
            ("a:sec\u{7}ret\n", Some(1), "a control character"),
        ] {
            let e = ProxyAuth::parse(text).unwrap_err();
            assert_eq!(e.line, line, "{text:?}");
            assert!(e.reason.starts_with(reason), "{text:?}: {e}");
            assert!(!e.to_string().contains("secret"), "{e}");
        }
    }

    #[test]
    fn no_proxy_takes_names_below_and_addresses() {
        let n = NoProxy::parse(&["Example.com", ".b.test", "10.0.0.1", "[::1]"]).unwrap();
        let direct = |u: &str| n.matches(&url::Url::parse(u).unwrap());
        for u in [
            "http://example.com/",
            "http://a.example.com:8080/x",
            "https://x.b.test/",
            "http://b.test/",
            "http://10.0.0.1/",
            "http://[::1]:81/",
        ] {
            assert!(direct(u), "{u}");
        }
        for u in [
            "http://notexample.com/",
            "http://example.com.evil/",
            "http://10.0.0.2/",
        ] {
            assert!(!direct(u), "{u}");
        }
        for bad in ["", "*", "a/b", "http://x", "u@h"] {
            assert!(NoProxy::parse(&[bad]).is_err(), "{bad:?}");
        }
    }
}
