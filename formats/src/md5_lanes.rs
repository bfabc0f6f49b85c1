//! MD5 of several messages side by side, one per lane.
//!
//! One MD5 is a chain of 64 dependent steps per block: a core runs it at a fraction of its
//! width. Eight messages hashed in step, each state word eight lanes of one AVX2 register,
//! take about a quarter of the time of eight one after the other (where the processor has no
//! AVX2, the lanes are arrays). The master hashes every URL new to it this way, a batch at a
//! time. Checked against the `md-5` crate by property tests.

/// Messages hashed side by side.
pub const LANES: usize = 8;

type Lanes = [u32; LANES];

/// Per step, its additive constant: floor(abs(sin(i + 1)) * 2^32) (RFC 1321).
#[rustfmt::skip]
const K: [u32; 64] = [
    0xd76a_a478, 0xe8c7_b756, 0x2420_70db, 0xc1bd_ceee, 0xf57c_0faf, 0x4787_c62a, 0xa830_4613,
    0xfd46_9501, 0x6980_98d8, 0x8b44_f7af, 0xffff_5bb1, 0x895c_d7be, 0x6b90_1122, 0xfd98_7193,
    0xa679_438e, 0x49b4_0821, 0xf61e_2562, 0xc040_b340, 0x265e_5a51, 0xe9b6_c7aa, 0xd62f_105d,
    0x0244_1453, 0xd8a1_e681, 0xe7d3_fbc8, 0x21e1_cde6, 0xc337_07d6, 0xf4d5_0d87, 0x455a_14ed,
    0xa9e3_e905, 0xfcef_a3f8, 0x676f_02d9, 0x8d2a_4c8a, 0xfffa_3942, 0x8771_f681, 0x6d9d_6122,
    0xfde5_380c, 0xa4be_ea44, 0x4bde_cfa9, 0xf6bb_4b60, 0xbebf_bc70, 0x289b_7ec6, 0xeaa1_27fa,
    0xd4ef_3085, 0x0488_1d05, 0xd9d4_d039, 0xe6db_99e5, 0x1fa2_7cf8, 0xc4ac_5665, 0xf429_2244,
    0x432a_ff97, 0xab94_23a7, 0xfc93_a039, 0x655b_59c3, 0x8f0c_cc92, 0xffef_f47d, 0x8584_5dd1,
    0x6fa8_7e4f, 0xfe2c_e6e0, 0xa301_4314, 0x4e08_11a1, 0xf753_7e82, 0xbd3a_f235, 0x2ad7_d2bb,
    0xeb86_d391,
];
/// Per round, the rotations of its steps in turn.
const SHIFT: [[u32; 4]; 4] = [
    [7, 12, 17, 22],
    [5, 9, 14, 20],
    [4, 11, 16, 23],
    [6, 10, 15, 21],
];
const INIT: [u32; 4] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];

/// The first 8 bytes of the MD5 of each message, as a big-endian `u64` (what
/// [`crate::urls::url_id`] is), written to `out` (as long as `messages`).
pub fn md5_prefixes<M: AsRef<[u8]>>(messages: &[M], out: &mut [u64]) {
    debug_assert_eq!(messages.len(), out.len());
    for (group, out) in messages.chunks(LANES).zip(out.chunks_mut(LANES)) {
        let state = digest_group(group);
        for (l, o) in out.iter_mut().enumerate() {
            let (a, b) = (state[0][l].to_le_bytes(), state[1][l].to_le_bytes());
            let mut first = [0u8; 8];
            first[..4].copy_from_slice(&a);
            first[4..].copy_from_slice(&b);
            *o = u64::from_be_bytes(first);
        }
    }
}

/// The MD5 state after each of up to [`LANES`] messages (lanes past the group's end: junk).
fn digest_group<M: AsRef<[u8]>>(group: &[M]) -> [Lanes; 4] {
    // Blocks after padding: the message, 0x80, zeros, the 8-byte bit length.
    let blocks: [usize; LANES] =
        std::array::from_fn(|l| group.get(l).map_or(0, |m| (m.as_ref().len() + 8) / 64 + 1));
    let most = blocks.iter().copied().max().unwrap_or(0);
    let mut h: [Lanes; 4] = std::array::from_fn(|i| [INIT[i]; LANES]);
    let mut words = [[0u32; LANES]; 16];
    for j in 0..most {
        for (l, message) in group.iter().map(AsRef::as_ref).enumerate() {
            let start = j * 64;
            let whole;
            let block = match message.get(start..start + 64) {
                Some(block) => block,
                None => {
                    whole = padded_tail(message, j);
                    &whole[..]
                }
            };
            for (word, bytes) in words.iter_mut().zip(block.chunks_exact(4)) {
                word[l] = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            }
        }
        let next = compress(&h, &words);
        // A lane whose message has no block `j` keeps its state.
        for l in (0..LANES).filter(|&l| j < blocks[l]) {
            for (hi, ni) in h.iter_mut().zip(&next) {
                hi[l] = ni[l];
            }
        }
    }
    h
}

/// One block of every lane, with AVX2 where the processor has it.
fn compress(h: &[Lanes; 4], m: &[Lanes; 16]) -> [Lanes; 4] {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor has AVX2, checked just above (the result is cached by std).
        #[allow(unsafe_code)]
        return unsafe { avx2::compress(h, m) };
    }
    portable::compress(h, m)
}

/// Block `j` of `message` once padded, where the message does not fill it (past its last
/// block: zeros, unused).
fn padded_tail(message: &[u8], j: usize) -> [u8; 64] {
    let mut block = [0u8; 64];
    let start = j * 64;
    if start < message.len() {
        let body = &message[start..message.len().min(start + 64)];
        block[..body.len()].copy_from_slice(body);
    }
    if (start..start + 64).contains(&message.len()) {
        block[message.len() - start] = 0x80;
    }
    let last = (message.len() + 8) / 64;
    if j == last {
        let bits = (message.len() as u64).wrapping_mul(8);
        block[56..].copy_from_slice(&bits.to_le_bytes());
    }
    block
}

/// Eight lanes as arrays: what compilers for any processor can run.
mod portable {
    use super::{Lanes, K, LANES, SHIFT};

    /// One block of every lane: the state after it.
    pub(super) fn compress(h: &[Lanes; 4], m: &[Lanes; 16]) -> [Lanes; 4] {
        let [mut a, mut b, mut c, mut d] = *h;
        // The 64 steps written out, so that every index, constant and rotation is fixed and each
        // step's lane loop is a few vector instructions.
        macro_rules! steps {
            ($f:ident, $round:literal, $($i:literal)*) => {$(
                let g = match $round {
                    0 => $i,
                    1 => (5 * $i + 1) % 16,
                    2 => (3 * $i + 5) % 16,
                    _ => (7 * $i) % 16,
                };
                let next = step(&a, &b, &c, &d, &m[g], K[$i], SHIFT[$round][$i % 4], $f);
                a = d;
                d = c;
                c = b;
                b = next;
            )*};
        }
        steps!(f0, 0, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
        steps!(f1, 1, 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
        steps!(f2, 2, 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47);
        steps!(f3, 3, 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63);
        let mut out = *h;
        for (o, x) in out.iter_mut().zip([a, b, c, d]) {
            for l in 0..LANES {
                o[l] = o[l].wrapping_add(x[l]);
            }
        }
        out
    }

    fn f0(b: u32, c: u32, d: u32) -> u32 {
        (b & c) | (!b & d)
    }
    fn f1(b: u32, c: u32, d: u32) -> u32 {
        (d & b) | (!d & c)
    }
    fn f2(b: u32, c: u32, d: u32) -> u32 {
        b ^ c ^ d
    }
    fn f3(b: u32, c: u32, d: u32) -> u32 {
        c ^ (b | !d)
    }

    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn step(
        a: &Lanes,
        b: &Lanes,
        c: &Lanes,
        d: &Lanes,
        m: &Lanes,
        k: u32,
        s: u32,
        f: fn(u32, u32, u32) -> u32,
    ) -> Lanes {
        std::array::from_fn(|l| {
            let sum = a[l]
                .wrapping_add(f(b[l], c[l], d[l]))
                .wrapping_add(k)
                .wrapping_add(m[l]);
            b[l].wrapping_add(sum.rotate_left(s))
        })
    }
}

/// Eight lanes in one 256-bit register.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{Lanes, K, SHIFT};
    use std::arch::x86_64::*;

    /// [`super::portable::compress`], one instruction per operation for all eight lanes.
    #[target_feature(enable = "avx2")]
    pub(super) fn compress(h: &[Lanes; 4], m: &[Lanes; 16]) -> [Lanes; 4] {
        macro_rules! load {
            ($x:expr) => {{
                let x = $x;
                _mm256_setr_epi32(
                    x[0] as i32,
                    x[1] as i32,
                    x[2] as i32,
                    x[3] as i32,
                    x[4] as i32,
                    x[5] as i32,
                    x[6] as i32,
                    x[7] as i32,
                )
            }};
        }
        let m: [__m256i; 16] = [
            load!(m[0]),
            load!(m[1]),
            load!(m[2]),
            load!(m[3]),
            load!(m[4]),
            load!(m[5]),
            load!(m[6]),
            load!(m[7]),
            load!(m[8]),
            load!(m[9]),
            load!(m[10]),
            load!(m[11]),
            load!(m[12]),
            load!(m[13]),
            load!(m[14]),
            load!(m[15]),
        ];
        let start = [load!(h[0]), load!(h[1]), load!(h[2]), load!(h[3])];
        let [mut a, mut b, mut c, mut d] = start;
        let ones = _mm256_set1_epi32(-1);
        macro_rules! steps {
            ($round:literal, $($i:literal)*) => {$(
                let f = match $round {
                    0 => _mm256_or_si256(_mm256_and_si256(b, c), _mm256_andnot_si256(b, d)),
                    1 => _mm256_or_si256(_mm256_and_si256(d, b), _mm256_andnot_si256(d, c)),
                    2 => _mm256_xor_si256(_mm256_xor_si256(b, c), d),
                    _ => _mm256_xor_si256(c, _mm256_or_si256(b, _mm256_xor_si256(d, ones))),
                };
                let g = match $round {
                    0 => $i,
                    1 => (5 * $i + 1) % 16,
                    2 => (3 * $i + 5) % 16,
                    _ => (7 * $i) % 16,
                };
                let sum = _mm256_add_epi32(
                    _mm256_add_epi32(a, f),
                    _mm256_add_epi32(_mm256_set1_epi32(K[$i] as i32), m[g]),
                );
                let rotated = _mm256_or_si256(
                    _mm256_slli_epi32::<{ SHIFT[$round][$i % 4] as i32 }>(sum),
                    _mm256_srli_epi32::<{ 32 - SHIFT[$round][$i % 4] as i32 }>(sum),
                );
                a = d;
                d = c;
                c = b;
                b = _mm256_add_epi32(b, rotated);
            )*};
        }
        steps!(0, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
        steps!(1, 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
        steps!(2, 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47);
        steps!(3, 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63);
        let mut out = [[0u32; 8]; 4];
        for (o, (x, s)) in out.iter_mut().zip([a, b, c, d].into_iter().zip(start)) {
            let v = _mm256_add_epi32(x, s);
            *o = [
                _mm256_extract_epi32::<0>(v) as u32,
                _mm256_extract_epi32::<1>(v) as u32,
                _mm256_extract_epi32::<2>(v) as u32,
                _mm256_extract_epi32::<3>(v) as u32,
                _mm256_extract_epi32::<4>(v) as u32,
                _mm256_extract_epi32::<5>(v) as u32,
                _mm256_extract_epi32::<6>(v) as u32,
                _mm256_extract_epi32::<7>(v) as u32,
            ];
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use md5::{Digest, Md5};
    use proptest::prelude::*;

    fn one(m: &[u8]) -> u64 {
        let d = Md5::digest(m);
        u64::from_be_bytes(d[..8].try_into().unwrap())
    }

    #[test]
    fn every_length_across_block_boundaries() {
        let text: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
        let messages: Vec<&[u8]> = (0..=300).map(|n| &text[..n]).collect();
        let mut out = vec![0; messages.len()];
        md5_prefixes(&messages, &mut out);
        for (m, got) in messages.iter().zip(&out) {
            assert_eq!(*got, one(m), "length {}", m.len());
        }
    }

    #[test]
    fn the_rfc_1321_examples() {
        let messages: [&[u8]; 3] = [b"", b"abc", b"message digest"];
        let mut out = [0; 3];
        md5_prefixes(&messages, &mut out);
        assert_eq!(
            out,
            [
                0xd41d_8cd9_8f00_b204,
                0x9001_5098_3cd2_4fb0,
                0xf96b_697d_7cb7_938d
            ]
        );
    }

    proptest! {
        /// The arrays version, which processors without AVX2 run, against the one this machine
        /// runs (the tests against `md-5` cover the arrays version itself where it is the one).
        #[test]
        fn portable_agrees_with_the_dispatched_compress(words in prop::array::uniform16(prop::array::uniform8(any::<u32>())), h in prop::array::uniform4(prop::array::uniform8(any::<u32>()))) {
            prop_assert_eq!(portable::compress(&h, &words), compress(&h, &words));
        }

        #[test]
        fn agrees_with_md5_one_at_a_time(messages in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..200), 0..20)) {
            let refs: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
            let mut out = vec![0; refs.len()];
            md5_prefixes(&refs, &mut out);
            for (m, got) in refs.iter().zip(&out) {
                prop_assert_eq!(*got, one(m));
            }
        }
    }
}
