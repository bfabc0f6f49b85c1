//! Numbers written into text formats without `fmt` (the master writes millions per cycle).

/// The two digits of every number below 100.
const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Appends `v` in decimal (two digits per division).
pub fn push_u64(out: &mut Vec<u8>, v: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut v = v;
    while v >= 100 {
        let pair = 2 * (v % 100) as usize;
        v /= 100;
        i -= 2;
        digits[i..i + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if v >= 10 {
        let pair = 2 * v as usize;
        i -= 2;
        digits[i..i + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        i -= 1;
        digits[i] = b'0' + v as u8;
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
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut values = vec![
            0u64,
            1,
            9,
            10,
            11,
            99,
            100,
            101,
            999,
            1000,
            12345,
            u64::MAX,
            u64::MAX / 7,
        ];
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(x >> (x % 64));
        }
        for v in values {
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
