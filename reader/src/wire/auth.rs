//! The handshake's proofs: HMAC-SHA256 over both nonces and the stream name, keyed with the
//! shared secret, which itself never travels.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::messages::{MAC_LEN, NONCE_LEN};

type HmacSha256 = Hmac<Sha256>;

/// The shared secret, read from a file that must not be readable by others.
#[derive(Clone)]
pub struct Secret(Vec<u8>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<hidden>)")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{0}: readable by group or others; chmod 600 it")]
    Exposed(String),
    #[error("{0}: shorter than 16 bytes")]
    Short(String),
}

impl Secret {
    pub fn load(path: &std::path::Path) -> Result<Secret, SecretError> {
        use std::os::unix::fs::PermissionsExt;
        let shown = path.display().to_string();
        let io = |source| SecretError::Io {
            path: shown.clone(),
            source,
        };
        let meta = std::fs::metadata(path).map_err(io)?;
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(SecretError::Exposed(shown));
        }
        let text = std::fs::read(path).map_err(io)?;
        let secret = text.trim_ascii().to_vec();
        if secret.len() < 16 {
            return Err(SecretError::Short(shown));
        }
        Ok(Secret(secret))
    }

    pub fn from_bytes(b: &[u8]) -> Secret {
        Secret(b.to_vec())
    }

    /// The sender's proof: HMAC(secret, "focuser client" ‖ server nonce ‖ client nonce ‖ stream).
    pub fn client_mac(
        &self,
        server: &[u8; NONCE_LEN],
        client: &[u8; NONCE_LEN],
        stream: &str,
    ) -> [u8; MAC_LEN] {
        self.mac(b"focuser client", server, client, stream)
    }

    /// The receiver's proof, over the nonces in the other order.
    pub fn server_mac(
        &self,
        server: &[u8; NONCE_LEN],
        client: &[u8; NONCE_LEN],
        stream: &str,
    ) -> [u8; MAC_LEN] {
        self.mac(b"focuser server", client, server, stream)
    }

    fn mac(&self, label: &[u8], a: &[u8], b: &[u8], stream: &str) -> [u8; MAC_LEN] {
        // HMAC takes keys of any length: new_from_slice cannot fail.
        let mut m = match HmacSha256::new_from_slice(&self.0) {
            Ok(m) => m,
            Err(_) => return [0u8; MAC_LEN],
        };
        m.update(label);
        m.update(a);
        m.update(b);
        m.update(stream.as_bytes());
        m.finalize().into_bytes().into()
    }
}

/// Compares two MACs in constant time.
pub fn same_mac(a: &[u8; MAC_LEN], b: &[u8; MAC_LEN]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

pub fn new_nonce() -> std::io::Result<[u8; NONCE_LEN]> {
    let mut n = [0u8; NONCE_LEN];
    getrandom::getrandom(&mut n).map_err(std::io::Error::other)?;
    Ok(n)
}
