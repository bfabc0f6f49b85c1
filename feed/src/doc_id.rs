//! The doc id of a feed item in the segments (`vr_data.doc_id`): stable across runs and
//! machines, of the same family as a page's (docs/formats.md "Identifiers").

use md5::{Digest, Md5};

/// The 64-bit item id: the first 8 bytes, big-endian, of the MD5 of `vr:<res_id>:<keyword>`
/// (`res_id` in decimal, the keyword's UTF-8 bytes) — the URL id's function
/// (`focuser_formats::urls::url_id`) over a string no normalised URL can equal, since those
/// start with `http`.
pub fn item_id(res_id: u32, keyword: &str) -> u64 {
    let mut h = Md5::new();
    h.update(format!("vr:{res_id}:").as_bytes());
    h.update(keyword.as_bytes());
    let digest = h.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

/// The item's doc id: [`item_id`] as 16 lower-case hex digits, as a page's doc id is its URL
/// id's.
pub fn item_doc_id(res_id: u32, keyword: &str) -> String {
    format!("{:016x}", item_id(res_id, keyword))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_family_as_url_ids_and_fixed_values() {
        use focuser_formats::urls::{doc_id, url_id};
        for (res, key) in [(7, "abc"), (0, ""), (u32::MAX, "编号1")] {
            let s = format!("vr:{res}:{key}");
            assert_eq!(item_id(res, key), url_id(&s));
            assert_eq!(item_doc_id(res, key), doc_id(url_id(&s)));
        }
        // Computed elsewhere (Python's hashlib): the same on every machine, forever.
        assert_eq!(item_doc_id(7, "abc"), "62b1d82e2fadb064");
        assert_eq!(item_doc_id(u32::MAX, "编号1"), "fafe0da4a7222eb3");
        assert_ne!(item_doc_id(7, "abc"), item_doc_id(8, "abc"));
        assert_ne!(item_doc_id(1, "2:x"), item_doc_id(12, ":x"));
    }
}
