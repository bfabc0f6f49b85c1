//! Lower-case hex, the way MD5s are stored (`md5_sum`, `sitemap_md5`, `content_md5`).

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// `bytes` as lower-case hex digits.
pub fn encode(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(2 * bytes.len());
    for &b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}

/// The 16 bytes of an MD5 written as 32 hex digits (either case); `None` for anything else.
pub fn decode_md5(hex: &str) -> Option<[u8; 16]> {
    let b = hex.as_bytes();
    if b.len() != 32 {
        return None;
    }
    let nibble = |c: u8| char::from(c).to_digit(16).map(|d| d as u8);
    let mut out = [0; 16];
    for (i, o) in out.iter_mut().enumerate() {
        *o = nibble(b[2 * i])? << 4 | nibble(b[2 * i + 1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_refusals() {
        let md5 = [
            0x90, 0x01, 0x50, 0x98, 0x3c, 0xd2, 0x4f, 0xb0, 0xd6, 0x96, 0x3f, 0x7d, 0x28, 0xe1,
            0x7f, 0x72,
        ];
        assert_eq!(encode(&md5), "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(decode_md5("900150983cd24fb0d6963f7d28e17f72"), Some(md5));
        assert_eq!(decode_md5("900150983CD24FB0D6963F7D28E17F72"), Some(md5));
        assert_eq!(encode(&[]), "");
        for bad in [
            "",
            "90015098",
            "900150983cd24fb0d6963f7d28e17f7g",
            "é00150983cd24fb0d6963f7d28e17f7",
        ] {
            assert_eq!(decode_md5(bad), None, "{bad}");
        }
    }
}
