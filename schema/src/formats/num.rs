//! Numbers written into text formats without `fmt` (the master writes millions per cycle).

/// Appends `v` in decimal.
pub fn push_u64(out: &mut Vec<u8>, v: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut v = v;
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// Appends `v` in decimal, with a `-` if negative.
pub fn push_i64(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    push_u64(out, v.unsigned_abs());
}

/// Appends `v` as 16 lower-case hex digits.
pub fn push_hex16(out: &mut Vec<u8>, v: u64) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut digits = [0u8; 16];
    for (i, d) in digits.iter_mut().enumerate() {
        *d = HEX[((v >> (60 - 4 * i)) & 0xf) as usize];
    }
    out.extend_from_slice(&digits);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_text_as_fmt() {
        for v in [0u64, 1, 9, 10, 99, 100, 12345, u64::MAX, u64::MAX / 7] {
            let mut out = Vec::new();
            push_u64(&mut out, v);
            push_hex16(&mut out, v);
            assert_eq!(String::from_utf8(out).unwrap(), format!("{v}{v:016x}"));
        }
        for v in [0i64, -1, 7, -1700000000, i64::MIN, i64::MAX] {
            let mut out = Vec::new();
            push_i64(&mut out, v);
            assert_eq!(String::from_utf8(out).unwrap(), v.to_string());
        }
    }
}
