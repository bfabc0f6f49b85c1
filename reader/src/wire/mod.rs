//! The wire protocol between a sender and `reader --recv` (docs/formats.md, "Wire protocol").

pub mod auth;
pub mod batch;
pub mod frame;
pub mod handshake;
pub mod messages;

pub use auth::{new_nonce, same_mac, Secret, SecretError};
pub use batch::{Batch, BatchRef, WireItem, WireItemRef};
pub use frame::{
    decode_frame, encode_frame, read_frame, write_frame, Frame, FrameError, FrameType,
};
pub use messages::{check_file_name, check_stream_name, ErrorMsg, FileBegin, Hello, Mode, Welcome};
