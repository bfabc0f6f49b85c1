//! The names of the files the master makes after an input (its reject file, its set-aside copy
//! and reason): printable, and short enough that they and their temporaries always fit in a
//! directory entry (docs/formats.md).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use focuser_formats::reflog;

/// The longest name the master gives a file: NAME_MAX (255 bytes on every Linux file system)
/// less the `.` and `.tmp` of its temporary.
pub const MAX_NAME: usize = 250;

/// `base` followed by `suffix`, or, when that is longer than [`MAX_NAME`], `base` cut at a
/// character boundary, `~` and 16 hex digits of the XXH3-64 of the whole of `base`, then
/// `suffix`: two long names that share their beginning still get names of their own.
pub fn fitted(base: &str, suffix: &str) -> String {
    if base.len() + suffix.len() <= MAX_NAME {
        return format!("{base}{suffix}");
    }
    let hash = xxhash_rust::xxh3::xxh3_64(base.as_bytes());
    let mut keep = MAX_NAME.saturating_sub(suffix.len() + 17).min(base.len());
    while !base.is_char_boundary(keep) {
        keep -= 1;
    }
    format!("{}~{hash:016x}{suffix}", &base[..keep])
}

/// A file name as the master writes and logs it: [`reflog::escape`]d, so that a name with
/// control characters or bytes that are not UTF-8 is printable (and such a name differs from
/// its escaped form, which is how [`journaled`] tells them apart).
pub fn printable(name: &OsStr) -> String {
    reflog::escape(name.as_bytes())
}

/// The last component of `path`, printable.
pub fn file_name(path: &Path) -> String {
    path.file_name().map(printable).unwrap_or_default()
}

/// Whether `name` can be named in the journal and the master's own names as it is: valid
/// UTF-8 without control characters or backslashes, and a name of its own.
pub fn journaled(name: &OsStr) -> bool {
    name.to_str().is_some_and(|n| printable(name) == n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_with_their_temporaries_and_stay_apart() {
        assert_eq!(fitted("r1.log", ".rej"), "r1.log.rej");
        let long = format!("r{}.log", "x".repeat(245));
        let fit = fitted(&long, ".rej");
        assert_eq!(fit.len(), MAX_NAME);
        assert!(fit.starts_with("rxxx") && fit.ends_with(".rej"), "{fit}");
        assert_ne!(fitted(&format!("{long}2"), ".rej"), fit);
        // A cut never splits a character.
        let cyrillic = "ж".repeat(200);
        let fit = fitted(&cyrillic, ".why");
        assert!(fit.len() <= MAX_NAME && fit.ends_with(".why"), "{fit}");
        assert!(fitted(&"a".repeat(MAX_NAME), "").len() <= MAX_NAME);
    }

    #[test]
    fn names_that_need_escaping_are_not_journaled() {
        assert!(journaled(OsStr::new("reflog-001.log")));
        assert!(journaled(OsStr::new("пример.log")));
        for bad in [&b"a\nb"[..], b"a\xff", b"a\\b", b"\x1b[2J"] {
            assert!(!journaled(OsStr::from_bytes(bad)), "{bad:?}");
        }
        assert_eq!(
            printable(OsStr::from_bytes(b"two\nlines\xff")),
            "two\\x0alines\\xff"
        );
    }
}
