//! The fuzz target's checks (focuser_multidoc::corpus) over its seeds, the fixture pages, and
//! damage made from them: every prefix of a page cut at many places, bytes flipped.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use focuser_multidoc::corpus::check_page;

fn files(dir: &Path) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    out.sort();
    out
}

#[test]
fn the_seeds_of_the_fuzz_target() {
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds/page");
    let seeds = files(&seeds);
    assert!(seeds.len() >= 5);
    for s in seeds {
        check_page(&s);
    }
}

#[test]
fn fixture_pages_cut_and_damaged() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut pages = files(&root.join("pages"));
    pages.extend(files(&root.join("decode")));
    for page in pages {
        for charset in [0u8, 1] {
            let mut data = vec![charset];
            data.extend_from_slice(&page);
            check_page(&data);
            // Cut anywhere (in a tag, an entity, a UTF-8 sequence), 20 places a page.
            let step = (data.len() / 20).max(1);
            for end in (1..data.len()).step_by(step) {
                check_page(&data[..end]);
            }
            // Flip some bytes.
            let mut damaged = data.clone();
            for i in (1..damaged.len()).step_by(97) {
                damaged[i] ^= 0xA5;
            }
            check_page(&damaged);
        }
    }
}
