//! Scratch files of one cycle (input partitions, forwarded URLs): records of `N` numbers
//! followed by length-prefixed byte strings, little-endian. Only this process writes and
//! reads them, within one cycle (a crash discards them), so they carry no version or
//! checksum.

use std::io::{Read, Write};

pub fn write<const N: usize>(
    w: &mut impl Write,
    numbers: [u64; N],
    strings: &[&[u8]],
) -> std::io::Result<()> {
    for n in numbers {
        w.write_all(&n.to_le_bytes())?;
    }
    for s in strings {
        w.write_all(&(s.len() as u32).to_le_bytes())?;
        w.write_all(s)?;
    }
    Ok(())
}

/// The next record, `None` at the end of the file.
pub fn read<const N: usize, const S: usize>(
    r: &mut impl Read,
) -> std::io::Result<Option<([u64; N], [String; S])>> {
    let mut numbers = [0u64; N];
    let mut word = [0u8; 8];
    // The end of the file may come only between records.
    let mut got = 0;
    while got < word.len() {
        match r.read(&mut word[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    for (i, n) in numbers.iter_mut().enumerate() {
        if i > 0 {
            r.read_exact(&mut word)?;
        }
        *n = u64::from_le_bytes(word);
    }
    let mut strings: [String; S] = std::array::from_fn(|_| String::new());
    for s in strings.iter_mut() {
        let mut len = [0u8; 4];
        r.read_exact(&mut len)?;
        let mut bytes = vec![0u8; u32::from_le_bytes(len) as usize];
        r.read_exact(&mut bytes)?;
        *s = String::from_utf8(bytes)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    }
    Ok(Some((numbers, strings)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trip() {
        let mut buf = Vec::new();
        super::write(&mut buf, [1, u64::MAX, 7], &[b"tag", b"http://a/"]).unwrap();
        super::write(&mut buf, [2, 0, 0], &[b"", b"x"]).unwrap();
        let mut r = &buf[..];
        assert_eq!(
            super::read::<3, 2>(&mut r).unwrap(),
            Some((
                [1, u64::MAX, 7],
                ["tag".to_string(), "http://a/".to_string()]
            ))
        );
        assert_eq!(
            super::read::<3, 2>(&mut r).unwrap(),
            Some(([2, 0, 0], [String::new(), "x".to_string()]))
        );
        assert_eq!(super::read::<3, 2>(&mut r).unwrap(), None);
        let mut torn = &buf[..5];
        assert!(super::read::<3, 2>(&mut torn).is_err());
    }
}
