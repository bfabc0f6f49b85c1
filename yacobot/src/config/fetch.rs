//! The `Fetch.*` keys: which downloader, and focuser-fetch's settings (docs/operations.md,
//! "yacobot: the fetcher"). Times are seconds, fractions allowed.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use focuser_daemon::config::restart_only;
use focuser_daemon::CommonConfig;
use focuser_fetch::{Proxy, ProxyAuth};
use serde::{Deserialize, Serialize};

/// `Fetch.Backend`: the libcurl fetcher, or pages read from a local mirror tree.
pub const CURL: &str = "curl";
pub const MIRROR: &str = "mirror";

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FetchConfig {
    /// `curl` (focuser-fetch) or `mirror` (`Fetch.MirrorDir/<host>/<path>`, a `wget --mirror`
    /// tree: replays and tests).
    #[serde(
        rename = "Backend",
        default = "default_backend",
        serialize_with = "restart_only"
    )]
    pub backend: String,
    #[serde(
        rename = "MirrorDir",
        default = "default_mirror_dir",
        serialize_with = "restart_only"
    )]
    pub mirror_dir: PathBuf,
    #[serde(rename = "Connections", default = "default_connections")]
    pub connections: u32,
    #[serde(rename = "PerHost", default = "one")]
    pub per_host: u32,
    #[serde(rename = "HostDelay", default = "one_f")]
    pub host_delay: f64,
    #[serde(rename = "MaxRedirects", default = "default_max_redirects")]
    pub max_redirects: u32,
    #[serde(rename = "ConnectTimeout", default = "default_connect_timeout")]
    pub connect_timeout: f64,
    #[serde(rename = "Timeout", default = "default_timeout")]
    pub timeout: f64,
    #[serde(rename = "MaxBytes", default = "default_max_bytes")]
    pub max_bytes: u64,
    #[serde(rename = "AllowedTypes", default = "default_allowed_types")]
    pub allowed_types: Vec<String>,
    #[serde(rename = "UserAgent", default = "default_user_agent")]
    pub user_agent: String,
    #[serde(rename = "RobotsTtl", default = "default_robots_ttl")]
    pub robots_ttl: f64,
    #[serde(rename = "RobotsRetry", default = "default_robots_retry")]
    pub robots_retry: f64,
    #[serde(rename = "RobotsCache", default = "default_robots_cache")]
    pub robots_cache: usize,
    #[serde(rename = "Retries", default = "default_retries")]
    pub retries: u32,
    /// Between two tries of one URL within one fetch (not `Crawl.RetryLater`).
    #[serde(rename = "RetryDelay", default = "default_retry_delay")]
    pub retry_delay: f64,
    #[serde(rename = "MaxRetryAfter", default = "default_max_retry_after")]
    pub max_retry_after: f64,
    /// Idle connections kept for reuse (libcurl's connection cache).
    #[serde(rename = "KeepAlive", default = "default_keep_alive")]
    pub keep_alive: usize,
    #[serde(rename = "Pending", default = "default_pending")]
    pub pending: usize,
    #[serde(rename = "Resolve", default)]
    pub resolve: Vec<String>,
    /// Addresses fetched from although not public (`127.0.0.1`, `10.0.0.0/8`, `*`): test
    /// setups. Other loopback, private, link-local … addresses fail with kind `refused`.
    #[serde(rename = "AllowPrivate", default)]
    pub allow_private: Vec<String>,
    /// `scheme://host:port` (http, https, socks5, socks5h) the crawl and the feeds fetch
    /// through; empty: none (the environment's `http_proxy` is never used).
    #[serde(rename = "Proxy", default)]
    pub proxy: String,
    /// `user:password` for the proxy, in a file group and others cannot read; read when a
    /// worker starts (never shown: the status page has the path only).
    #[serde(rename = "ProxyAuthFile", default, serialize_with = "restart_only")]
    pub proxy_auth_file: Option<PathBuf>,
    /// Hosts (and the names under them) and addresses fetched directly, not through the proxy.
    #[serde(rename = "NoProxy", default)]
    pub no_proxy: Vec<String>,
}

fn default_backend() -> String {
    CURL.into()
}
fn default_mirror_dir() -> PathBuf {
    PathBuf::from("mirror")
}
fn default_connections() -> u32 {
    64
}
fn one() -> u32 {
    1
}
fn one_f() -> f64 {
    1.0
}
fn default_max_redirects() -> u32 {
    5
}
fn default_connect_timeout() -> f64 {
    10.0
}
fn default_timeout() -> f64 {
    60.0
}
fn default_max_bytes() -> u64 {
    4 << 20
}
fn default_allowed_types() -> Vec<String> {
    ["text/html", "application/xhtml+xml"]
        .map(String::from)
        .to_vec()
}
fn default_user_agent() -> String {
    "yacobot/1.0".into()
}
fn default_robots_ttl() -> f64 {
    86400.0
}
fn default_robots_retry() -> f64 {
    600.0
}
fn default_robots_cache() -> usize {
    100_000
}
fn default_retries() -> u32 {
    3
}
fn default_retry_delay() -> f64 {
    5.0
}
fn default_max_retry_after() -> f64 {
    600.0
}
fn default_pending() -> usize {
    4096
}
fn default_keep_alive() -> usize {
    1024
}

impl Default for FetchConfig {
    fn default() -> Self {
        FetchConfig {
            backend: default_backend(),
            mirror_dir: default_mirror_dir(),
            connections: default_connections(),
            per_host: one(),
            host_delay: one_f(),
            max_redirects: default_max_redirects(),
            connect_timeout: default_connect_timeout(),
            timeout: default_timeout(),
            max_bytes: default_max_bytes(),
            allowed_types: default_allowed_types(),
            user_agent: default_user_agent(),
            robots_ttl: default_robots_ttl(),
            robots_retry: default_robots_retry(),
            robots_cache: default_robots_cache(),
            retries: default_retries(),
            retry_delay: default_retry_delay(),
            max_retry_after: default_max_retry_after(),
            keep_alive: default_keep_alive(),
            pending: default_pending(),
            resolve: Vec::new(),
            allow_private: Vec::new(),
            proxy: String::new(),
            proxy_auth_file: None,
            no_proxy: Vec::new(),
        }
    }
}

/// A credentials file is a line: anything longer is not one.
const MAX_AUTH_FILE: u64 = 4096;

/// A number of seconds as a duration, or why it is not one.
fn seconds(key: &str, v: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(v)
        .map_err(|_| format!("Fetch.{key}: {v}: must be a number of seconds, 0 or more"))
}

impl FetchConfig {
    /// focuser-fetch's settings, checked; the error names the key.
    pub fn fetcher(&self) -> Result<focuser_fetch::FetchConfig, String> {
        let cfg = focuser_fetch::FetchConfig {
            connections: self.connections as usize,
            per_host: self.per_host as usize,
            host_delay: seconds("HostDelay", self.host_delay)?,
            max_redirects: self.max_redirects,
            connect_timeout: seconds("ConnectTimeout", self.connect_timeout)?,
            timeout: seconds("Timeout", self.timeout)?,
            max_bytes: self.max_bytes,
            allowed_types: self.allowed_types.clone(),
            user_agent: self.user_agent.clone(),
            robots_ttl: seconds("RobotsTtl", self.robots_ttl)?,
            robots_retry: seconds("RobotsRetry", self.robots_retry)?,
            robots_cache: self.robots_cache,
            retries: self.retries,
            retry_delay: seconds("RetryDelay", self.retry_delay)?,
            max_retry_after: seconds("MaxRetryAfter", self.max_retry_after)?,
            keep_alive: self.keep_alive,
            pending: self.pending,
            resolve: self.resolve.clone(),
            allow_private: self.allow_private.clone(),
            proxy: self.proxy.clone(),
            // Read from its file when a worker starts (`proxy_auth`).
            proxy_auth: None,
            no_proxy: self.no_proxy.clone(),
            host_politeness: Default::default(),
        };
        cfg.validate().map_err(|e| e.to_string())?;
        Ok(cfg)
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.backend != CURL && self.backend != MIRROR {
            return Err(format!(
                "Fetch.Backend: {:?}: `curl` or `mirror`",
                self.backend
            ));
        }
        // Named first, so that the error points at the key's line.
        if !self.proxy.trim().is_empty() {
            Proxy::parse(&self.proxy).map_err(|e| format!("Fetch.Proxy: {e}"))?;
        } else if self.proxy_auth_file.is_some() {
            return Err("Fetch.ProxyAuthFile: set, but Fetch.Proxy is not".into());
        }
        self.fetcher().map(|_| ())
    }

    /// `Fetch.ProxyAuthFile`'s credentials (none without one). The file must be a regular file
    /// that group and others cannot read (like the reader's secret); an error names it (and
    /// the line at fault), never its text.
    pub fn proxy_auth(&self, common: &CommonConfig) -> Result<Option<ProxyAuth>, String> {
        let Some(file) = &self.proxy_auth_file else {
            return Ok(None);
        };
        let path = common.path(file);
        let at =
            |e: &dyn std::fmt::Display| format!("Fetch.ProxyAuthFile: {}: {e}", path.display());
        let f = std::fs::File::open(&path).map_err(|e| at(&e))?;
        let meta = f.metadata().map_err(|e| at(&e))?;
        if !meta.is_file() {
            return Err(at(&"not a regular file"));
        }
        let mode = meta.permissions().mode();
        if mode & 0o077 != 0 {
            let why = format!(
                "readable by group or others (mode {:o}); chmod 600 it",
                mode & 0o777
            );
            return Err(at(&why));
        }
        let mut bytes = Vec::new();
        f.take(MAX_AUTH_FILE + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| at(&e))?;
        if bytes.len() as u64 > MAX_AUTH_FILE {
            return Err(at(&format!("longer than {MAX_AUTH_FILE} bytes")));
        }
        let text = String::from_utf8(bytes).map_err(|_| at(&"not UTF-8 text"))?;
        match ProxyAuth::parse(&text) {
            Ok(auth) => Ok(Some(auth)),
            Err(e) => Err(match e.line {
                Some(line) => format!(
                    "Fetch.ProxyAuthFile: {}:{line}: {}",
                    path.display(),
                    e.reason
                ),
                None => at(&e.reason),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn defaults_are_focuser_fetch_defaults() {
        let f = FetchConfig::default().fetcher().unwrap();
        assert_eq!(f, focuser_fetch::FetchConfig::default());
    }

    #[test]
    fn bad_values_name_their_key() {
        let bad = |f: FetchConfig| f.validate().unwrap_err();
        let ok = FetchConfig::default();
        assert!(bad(FetchConfig {
            host_delay: -1.0,
            ..ok.clone()
        })
        .contains("Fetch.HostDelay"));
        assert!(bad(FetchConfig {
            timeout: f64::NAN,
            ..ok.clone()
        })
        .contains("Fetch.Timeout"));
        assert!(bad(FetchConfig {
            per_host: 0,
            ..ok.clone()
        })
        .contains("Fetch.PerHost"));
        assert!(bad(FetchConfig {
            resolve: vec!["a.test".into()],
            ..ok.clone()
        })
        .contains("Fetch.Resolve"));
        assert!(bad(FetchConfig {
            backend: "wget".into(),
            ..ok.clone()
        })
        .contains("Fetch.Backend"));
        assert!(bad(FetchConfig {
            proxy: "ftp://p.test:21".into(),
            ..ok.clone()
        })
        .starts_with("Fetch.Proxy: scheme \"ftp\""));
        assert!(bad(FetchConfig {
            proxy_auth_file: Some("conf/proxy.auth".into()),
            ..ok.clone()
        })
        .starts_with("Fetch.ProxyAuthFile: set, but Fetch.Proxy is not"));
        assert!(bad(FetchConfig {
            proxy: "http://p.test:3128".into(),
            no_proxy: vec!["a/b".into()],
            ..ok
        })
        .contains("Fetch.NoProxy"));
    }

    #[test]
    fn the_proxy_credentials_come_from_a_private_file() {
        let dir = tempfile::tempdir().unwrap();
        let common: CommonConfig = serde_json::from_value(serde_json::json!({
            "rootdir": dir.path()
        }))
        .unwrap();
        let cfg = FetchConfig {
            proxy: "http://p.test:3128".into(),
            proxy_auth_file: Some("proxy.auth".into()),
            ..FetchConfig::default()
        };
        let file = dir.path().join("proxy.auth");
        let write = |text: &str, mode: u32| {
            std::fs::write(&file, text).unwrap();
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        write(
            "# spider proxy
crawler:s3cret
",
            0o600,
        );
        let auth = cfg.proxy_auth(&common).unwrap().unwrap();
        assert_eq!(auth, ProxyAuth::new("crawler", "s3cret"));
        let shown = file.display().to_string();
        for (text, mode, why) in [
            (
                "crawler:s3cret
",
                0o644,
                format!("{shown}: readable by group or others (mode 644); chmod 600 it"),
            ),
            (
                "crawler:s3cret
",
                0o640,
                format!("{shown}: readable by group or others (mode 640)"),
            ),
            (
                "
s3cret
",
                0o600,
                format!("{shown}:2: expected user:password"),
            ),
            (
                "# none
",
                0o400,
                format!("{shown}: no user:password line"),
            ),
        ] {
            write(text, mode);
            let e = cfg.proxy_auth(&common).unwrap_err();
            assert!(e.starts_with(&format!("Fetch.ProxyAuthFile: {why}")), "{e}");
            assert!(!e.contains("s3cret"), "{e}");
        }
        std::fs::remove_file(&file).unwrap();
        assert!(cfg
            .proxy_auth(&common)
            .unwrap_err()
            .contains("No such file"));
        assert_eq!(FetchConfig::default().proxy_auth(&common).unwrap(), None);
    }
}
