//! Who may talk to a daemon: `allowdb` (hosts.allow: shell-glob patterns of peers' addresses
//! or names, one a line, `#` comments) and `pwfile` (`user:argon2-hash` lines, never plain
//! passwords, and never readable by others).

use std::io::Write;
use std::net::IpAddr;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;

#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    #[error("{path}: {error}")]
    Io { path: String, error: std::io::Error },
    #[error("{path}:{line}: {message}")]
    Line {
        path: String,
        line: usize,
        message: String,
    },
    #[error("{path}: {message}")]
    File { path: String, message: String },
}

/// The peers `allowdb` lets in, as the running config says: the list the status endpoint
/// checks, which a reload reads again ([`crate::Runtime::allowed_peers`]); or a list of its
/// own, for code that runs without a runtime (a benchmark, a test). A daemon's own listener
/// asks it at each connection.
#[derive(Clone)]
pub struct AllowedPeers(Peers);

#[derive(Clone)]
enum Peers {
    /// The list in force now, asked for at each check (a reload replaces it).
    Running(std::sync::Arc<dyn Fn() -> Option<AllowList> + Send + Sync>),
    Fixed(AllowList),
}

impl AllowedPeers {
    /// Peers checked against the list `current` gives at each check.
    pub(crate) fn running(
        current: impl Fn() -> Option<AllowList> + Send + Sync + 'static,
    ) -> AllowedPeers {
        AllowedPeers(Peers::Running(std::sync::Arc::new(current)))
    }

    pub fn allows(&self, peer: IpAddr) -> bool {
        match &self.0 {
            Peers::Running(current) => current().is_some_and(|l| l.allows(peer)),
            Peers::Fixed(list) => list.allows(peer),
        }
    }
}

impl From<AllowList> for AllowedPeers {
    fn from(list: AllowList) -> AllowedPeers {
        AllowedPeers(Peers::Fixed(list))
    }
}

/// Peers allowed to connect. Without an allowdb file only loopback peers are.
#[derive(Debug, Clone)]
pub struct AllowList {
    patterns: Vec<glob::Pattern>,
    by_name: bool,
    source: Option<PathBuf>,
}

impl AllowList {
    /// Loopback only: what a daemon allows when no `allowdb` is configured.
    pub fn loopback() -> AllowList {
        AllowList {
            patterns: Vec::new(),
            by_name: false,
            source: None,
        }
    }

    pub fn load(path: &Path) -> Result<AllowList, AccessError> {
        let text = std::fs::read_to_string(path).map_err(|error| AccessError::Io {
            path: path.display().to_string(),
            error,
        })?;
        Self::parse(&text, path)
    }

    fn parse(text: &str, path: &Path) -> Result<AllowList, AccessError> {
        let mut patterns = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let entry = line.split('#').next().unwrap_or("").trim();
            if entry.is_empty() {
                continue;
            }
            let pattern = glob::Pattern::new(entry).map_err(|e| AccessError::Line {
                path: path.display().to_string(),
                line: i + 1,
                message: format!("bad pattern {entry:?}: {e}"),
            })?;
            patterns.push(pattern);
        }
        let by_name = patterns
            .iter()
            .any(|p| p.as_str().chars().any(|c| c.is_ascii_alphabetic()));
        Ok(AllowList {
            patterns,
            by_name,
            source: Some(path.to_path_buf()),
        })
    }

    /// Whether `peer` may connect: its address matches a pattern, or (when some pattern has
    /// letters) its reverse-resolved name does.
    pub fn allows(&self, peer: IpAddr) -> bool {
        if self.source.is_none() {
            return peer.is_loopback();
        }
        let address = match peer {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(peer),
            v4 => v4,
        }
        .to_string();
        if self.patterns.iter().any(|p| p.matches(&address)) {
            return true;
        }
        if self.by_name {
            if let Ok(name) = dns_lookup::lookup_addr(&peer) {
                let name = name.to_ascii_lowercase();
                return self.patterns.iter().any(|p| p.matches(&name));
            }
        }
        false
    }
}

/// The users allowed to POST to the status endpoint.
#[derive(Debug, Clone, Default)]
pub struct PasswordFile {
    entries: Vec<(String, String)>,
}

/// Refuses a file that others may read: it holds password hashes.
fn check_private(path: &Path) -> Result<(), AccessError> {
    let meta = std::fs::metadata(path).map_err(|error| AccessError::Io {
        path: path.display().to_string(),
        error,
    })?;
    let mode = meta.permissions().mode();
    if mode & 0o007 != 0 {
        return Err(AccessError::File {
            path: path.display().to_string(),
            message: format!(
                "is accessible by others (mode {:o}); chmod o= it",
                mode & 0o777
            ),
        });
    }
    Ok(())
}

impl PasswordFile {
    pub fn load(path: &Path) -> Result<PasswordFile, AccessError> {
        check_private(path)?;
        let text = std::fs::read_to_string(path).map_err(|error| AccessError::Io {
            path: path.display().to_string(),
            error,
        })?;
        let mut entries = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |message: &str| AccessError::Line {
                path: path.display().to_string(),
                line: i + 1,
                message: message.to_string(),
            };
            let (user, hash) = line
                .split_once(':')
                .ok_or_else(|| bad("expected user:hash"))?;
            if user.is_empty() {
                return Err(bad("empty user name"));
            }
            PasswordHash::new(hash)
                .map_err(|_| bad("not a password hash (write it with `passwd`)"))?;
            entries.push((user.to_string(), hash.to_string()));
        }
        Ok(PasswordFile { entries })
    }

    /// Whether `password` is `user`'s. An unknown user costs the same work as a known one, so
    /// timing does not tell which user names exist.
    pub fn verify(&self, user: &str, password: &str) -> bool {
        let known = self
            .entries
            .iter()
            .find(|(u, _)| u == user)
            .map(|(_, h)| h.as_str());
        let hash = match known {
            Some(h) => h,
            None => dummy_hash(),
        };
        let matches = PasswordHash::new(hash)
            .map(|parsed| {
                Argon2::default()
                    .verify_password(password.as_bytes(), &parsed)
                    .is_ok()
            })
            .unwrap_or(false);
        matches && known.is_some()
    }
}

/// The hash of a random password nobody knows, verified against for unknown users.
fn dummy_hash() -> &'static str {
    static DUMMY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DUMMY.get_or_init(|| {
        let secret = SaltString::generate(&mut OsRng);
        hash_password(secret.as_str()).unwrap_or_default()
    })
}

/// A salted argon2id hash of `password`, in PHC string form.
pub fn hash_password(password: &str) -> Result<String, String> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

/// Sets `user`'s password in the pwfile at `path`, creating it (mode 0600) if needed. The
/// file is replaced atomically: written to a temporary name, synced, renamed.
pub fn set_password(path: &Path, user: &str, password: &str) -> Result<(), AccessError> {
    let name = path.display().to_string();
    if user.is_empty() || user.contains(':') || user.contains('\n') {
        return Err(AccessError::File {
            path: name,
            message: format!("bad user name {user:?}"),
        });
    }
    let existing = match std::fs::read_to_string(path) {
        Ok(text) => {
            check_private(path)?;
            text
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(error) => return Err(AccessError::Io { path: name, error }),
    };
    let hash = hash_password(password).map_err(|message| AccessError::File {
        path: name.clone(),
        message,
    })?;
    let mut out = String::new();
    let mut replaced = false;
    for line in existing.lines() {
        if line.split_once(':').map(|(u, _)| u) == Some(user) {
            out.push_str(&format!("{user}:{hash}\n"));
            replaced = true;
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    if !replaced {
        out.push_str(&format!("{user}:{hash}\n"));
    }
    write_private_atomically(path, out.as_bytes())
}

fn write_private_atomically(path: &Path, bytes: &[u8]) -> Result<(), AccessError> {
    let io = |error| AccessError::Io {
        path: path.display().to_string(),
        error,
    };
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.tmp{}",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("pwfile"),
        std::process::id()
    ));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io)?;
    file.write_all(bytes).map_err(io)?;
    file.sync_all().map_err(io)?;
    drop(file);
    std::fs::rename(&tmp, path).map_err(io)?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_addresses_and_bad_lines_are_named() {
        let list = AllowList::parse(
            "# local\n127.0.0.1\n10.1.*   # office\n\n",
            Path::new("hosts.allow"),
        )
        .unwrap();
        assert!(list.allows("127.0.0.1".parse().unwrap()));
        assert!(list.allows("10.1.2.3".parse().unwrap()));
        assert!(list.allows("::ffff:10.1.9.9".parse().unwrap()));
        assert!(!list.allows("127.0.0.2".parse().unwrap()));
        assert!(!list.allows("10.2.0.1".parse().unwrap()));
        let e = AllowList::parse("127.0.0.1\n[oops\n", Path::new("hosts.allow")).unwrap_err();
        assert!(
            e.to_string().starts_with("hosts.allow:2: bad pattern"),
            "{e}"
        );
        let loopback = AllowList::loopback();
        assert!(
            loopback.allows("127.0.0.5".parse().unwrap())
                && loopback.allows("::1".parse().unwrap())
        );
        assert!(!loopback.allows("192.0.2.1".parse().unwrap()));
    }

    #[test]
    fn passwords_are_hashed_verified_and_the_file_kept_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("focuser.passwd");
        set_password(&path, "ops", "s3cret").unwrap();
        set_password(&path, "bob", "other").unwrap();
        set_password(&path, "ops", "n3w").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            !text.contains("s3cret") && !text.contains("n3w"),
            "no plain passwords: {text}"
        );
        assert_eq!(text.lines().count(), 2);
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let pw = PasswordFile::load(&path).unwrap();
        assert!(pw.verify("ops", "n3w"));
        assert!(!pw.verify("ops", "s3cret"));
        assert!(!pw.verify("nobody", "n3w"));
        assert!(pw.verify("bob", "other"));

        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = PasswordFile::load(&path).unwrap_err().to_string();
        assert!(e.contains("accessible by others"), "{e}");

        std::fs::write(&path, "ops:plaintext\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let e = PasswordFile::load(&path).unwrap_err().to_string();
        assert!(e.contains(":1: not a password hash"), "{e}");
    }
}
