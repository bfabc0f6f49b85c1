//! Both sides of the handshake: HELLO → CHALLENGE → AUTH → WELCOME (or ERROR, then close).

use std::io::{Read, Write};

use focuser_formats::segment::Position;

use super::auth::{new_nonce, same_mac, Secret};
use super::frame::Fields;
use super::frame::{read_frame, write_frame, FrameError, FrameType};
use super::messages::{check_stream_name, code, nonce, ErrorMsg, Hello, Mode, Welcome};

#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    #[error("{0}")]
    Frame(#[from] FrameError),
    #[error("refused by the receiver (code {code}): {message}")]
    Refused { code: u16, message: String },
    #[error("unexpected {0:?} frame")]
    Unexpected(FrameType),
    #[error("authentication failed: {0}")]
    Auth(&'static str),
    #[error("bad stream name {name:?}: {reason}")]
    BadStream { name: String, reason: &'static str },
}

impl From<std::io::Error> for ProtoError {
    fn from(e: std::io::Error) -> Self {
        ProtoError::Frame(FrameError::Io(e))
    }
}

/// No handshake frame (nor an ERROR frame answering one) is longer: before a peer has proved
/// it knows the secret it cannot make the other side allocate more than this.
pub const HANDSHAKE_MAX_FRAME: usize = 4096;

/// Reads the next frame; an ERROR frame becomes [`ProtoError::Refused`].
pub fn expect(r: &mut impl Read, kind: FrameType, max: usize) -> Result<Vec<u8>, ProtoError> {
    let f = read_frame(r, max)?;
    if f.kind == FrameType::Error {
        let e = ErrorMsg::decode(&f.payload)?;
        return Err(ProtoError::Refused {
            code: e.code,
            message: e.message,
        });
    }
    if f.kind != kind {
        return Err(ProtoError::Unexpected(f.kind));
    }
    Ok(f.payload)
}

/// The sender's side. Returns where the receiver says the stream stands.
pub fn client<S: Read + Write>(
    s: &mut S,
    secret: &Secret,
    mode: Mode,
    stream: &str,
) -> Result<Position, ProtoError> {
    let max = HANDSHAKE_MAX_FRAME;
    let mine = new_nonce()?;
    let hello = Hello {
        mode,
        stream: stream.to_string(),
        nonce: mine,
    };
    write_frame(s, FrameType::Hello, &hello.encode())?;
    let payload = expect(s, FrameType::Challenge, max)?;
    let mut f = Fields::new(&payload, "CHALLENGE");
    let theirs = nonce(&mut f)?;
    f.end()?;
    write_frame(
        s,
        FrameType::Auth,
        &secret.client_mac(&theirs, &mine, stream),
    )?;
    let welcome = Welcome::decode(&expect(s, FrameType::Welcome, max)?)?;
    if !same_mac(&welcome.mac, &secret.server_mac(&theirs, &mine, stream)) {
        return Err(ProtoError::Auth("the receiver does not know the secret"));
    }
    Ok(welcome.last)
}

/// The receiver's side, up to the proof of the sender; the caller answers WELCOME (with where
/// the stream stands) through [`welcome`].
pub fn server<S: Read + Write>(s: &mut S, secret: &Secret) -> Result<Accepted, ProtoError> {
    let max = HANDSHAKE_MAX_FRAME;
    let payload = expect(s, FrameType::Hello, max)?;
    let hello = match Hello::decode(&payload) {
        Ok(h) => h,
        Err(e) => {
            refuse(s, code::PROTOCOL, &e.to_string());
            return Err(e.into());
        }
    };
    if let Err(reason) = check_stream_name(&hello.stream) {
        refuse(s, code::BAD_NAME, reason);
        return Err(ProtoError::BadStream {
            name: hello.stream,
            reason,
        });
    }
    let mine = new_nonce()?;
    write_frame(s, FrameType::Challenge, &mine)?;
    let payload = expect(s, FrameType::Auth, max)?;
    let mut f = Fields::new(&payload, "AUTH");
    let mac = nonce(&mut f)?;
    f.end()?;
    if !same_mac(&mac, &secret.client_mac(&mine, &hello.nonce, &hello.stream)) {
        refuse(s, code::AUTH, "authentication failed");
        return Err(ProtoError::Auth("the sender does not know the secret"));
    }
    Ok(Accepted {
        proof: secret.server_mac(&mine, &hello.nonce, &hello.stream),
        hello,
    })
}

/// A sender that proved it knows the secret.
pub struct Accepted {
    pub hello: Hello,
    proof: [u8; 32],
}

pub fn welcome<S: Write>(s: &mut S, a: &Accepted, last: Position) -> std::io::Result<()> {
    let w = Welcome { mac: a.proof, last };
    write_frame(s, FrameType::Welcome, &w.encode())
}

/// Sends an ERROR frame, best effort: the connection is closed after it anyway.
pub fn refuse<S: Write>(s: &mut S, code: u16, message: &str) {
    let e = ErrorMsg {
        code,
        message: message.to_string(),
    };
    let _ = write_frame(s, FrameType::Error, &e.encode());
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    fn pair(
        client_secret: &'static [u8],
        server_secret: &'static [u8],
    ) -> (Result<Position, String>, Result<String, String>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let secret = Secret::from_bytes(server_secret);
            match server(&mut s, &secret) {
                Ok(a) => {
                    welcome(
                        &mut s,
                        &a,
                        Position {
                            file_id: 4,
                            item_idx: 2,
                        },
                    )
                    .unwrap();
                    Ok(a.hello.stream)
                }
                Err(e) => Err(e.to_string()),
            }
        });
        let mut c = TcpStream::connect(addr).unwrap();
        let got = client(
            &mut c,
            &Secret::from_bytes(client_secret),
            Mode::Items,
            "n1.Index.0",
        )
        .map_err(|e| e.to_string());
        (got, t.join().unwrap())
    }

    #[test]
    fn the_same_secret_gets_in_and_a_wrong_one_is_refused() {
        let (c, s) = pair(b"0123456789abcdef", b"0123456789abcdef");
        assert_eq!(
            c.unwrap(),
            Position {
                file_id: 4,
                item_idx: 2
            }
        );
        assert_eq!(s.unwrap(), "n1.Index.0");
        let (c, s) = pair(b"0123456789abcdeX", b"0123456789abcdef");
        assert!(c.unwrap_err().contains("authentication failed"));
        assert!(s.unwrap_err().contains("does not know the secret"));
    }
}
