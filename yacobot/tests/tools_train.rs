//! `yacobot train` and `yacobot classify` through the real binary, as an operator runs them:
//! a corpus in both forms (lines, label folders) and its accuracy line, bad corpus lines,
//! classify's lines and its bad lines, and a damaged model refused with what is wrong with it
//! (docs/operations.md, "Page analysis tools").
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::tools::{accuracy, documents, fixture, run, text, train, yacobot};
use focuser_tests::output_with_input;

#[test]
fn train_reads_lines_and_label_folders_and_reports_its_accuracy() {
    let dir = tempfile::tempdir().unwrap();
    let t = train(dir.path());
    let stdout = text(&t.out.stdout);
    assert!(
        stdout.contains("corpus      80 documents from 1 source (0 skipped), 4 categories"),
        "{stdout}"
    );
    assert!(stdout.contains("catalog     6 nodes ("), "{stdout}");
    let (acc, held) = accuracy(&stdout);
    assert_eq!(held, 8, "every 10th of 80: {stdout}");
    assert!(acc >= 0.75, "{stdout}");
    assert!(t.model.is_file());
    assert!(!dir.path().join(".test.model.tmp").exists());

    // The same documents as files under label folders, some of them pages; no catalog: the
    // folders make it.
    let folders = dir.path().join("folders");
    for (i, (label, doc)) in documents().iter().enumerate() {
        let folder = folders.join(label.replace(" > ", "/"));
        std::fs::create_dir_all(&folder).unwrap();
        if i % 3 == 0 {
            let page =
                format!("<html><body><nav><a href=/>Home</a></nav><p>{doc}</p></body></html>");
            std::fs::write(folder.join(format!("{i:03}.html")), page).unwrap();
        } else {
            std::fs::write(folder.join(format!("{i:03}.txt")), doc).unwrap();
        }
    }
    let model2 = dir.path().join("folders.model");
    let out = run(&[
        "train",
        folders.to_str().unwrap(),
        "--holdout",
        "20",
        "-o",
        model2.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("80 documents from 1 source (0 skipped)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("catalog     6 nodes made from the labels"),
        "{stdout}"
    );
    let (acc, held) = accuracy(&stdout);
    assert_eq!(held, 16, "every 5th of 80: {stdout}");
    assert!(acc >= 0.75, "{stdout}");

    // Bad lines are named, counted and passed over; the model is still written, and the exit
    // status says that not every document was good.
    let bad = dir.path().join("bad.tsv");
    let mut lines = std::fs::read(&t.corpus).unwrap();
    lines.extend_from_slice(b"no tab on this line\nAstrology\tstars and planets\n\xff\n");
    std::fs::write(&bad, lines).unwrap();
    let model3 = dir.path().join("bad.model");
    let out = run(&[
        "train",
        bad.to_str().unwrap(),
        "--catalog",
        t.catalog.to_str().unwrap(),
        "-o",
        model3.to_str().unwrap(),
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("bad.tsv line 81: corpus line 81: expected a label"),
        "{stderr}"
    );
    assert!(
        stderr.contains("bad.tsv line 82: label \"Astrology\" is neither"),
        "{stderr}"
    );
    assert!(stderr.contains("bad.tsv line 83: not UTF-8"), "{stderr}");
    assert!(text(&out.stdout).contains("80 documents from 1 source (3 skipped)"));
    assert!(model3.is_file());
}

#[test]
fn classify_prints_a_path_per_line_and_names_bad_lines() {
    let dir = tempfile::tempdir().unwrap();
    let t = train(dir.path());
    let model = t.model.to_str().unwrap();
    let input = "a\tThe rocket launch from the nasa pad put the satellite in orbit.\n\
                 b\tMix the flour, butter and sugar and bake the dough in the oven.\n\
                 \n\
                 no tab here\n\
                 c\tThe striker scored a late goal and the team won the cup.\r\n\
                 \t empty id\n\
                 d\tzzz qqq\n";
    let out = output_with_input(
        yacobot().args(["classify", "--model", model]),
        input.as_bytes(),
        Duration::from_secs(60),
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let lines: Vec<(&str, &str)> = stdout
        .lines()
        .map(|l| l.split_once('\t').unwrap())
        .collect();
    let ids: Vec<&str> = lines.iter().map(|l| l.0).collect();
    assert_eq!(ids, ["a", "b", "c", "d"], "{stdout}");
    assert!(lines[0].1.starts_with("Science (") && lines[0].1.contains(") > Space ("));
    assert!(lines[1].1.starts_with("Food ("), "{stdout}");
    assert!(lines[2].1.starts_with("Sport ("), "{stdout}");
    assert_eq!(lines[3].1, "", "no known word: no category");
    assert!(
        stderr.contains("stdin line 4: expected an id, a tab and the text"),
        "{stderr}"
    );
    assert!(stderr.contains("stdin line 6: empty id"), "{stderr}");
    assert!(stderr.contains("2 bad inputs"), "{stderr}");

    let out = output_with_input(
        yacobot().args(["classify", "--model", model, "--depth", "1"]),
        b"a\tThe rocket launch put the satellite in orbit around the moon.\n",
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let got = text(&out.stdout);
    assert!(
        got.starts_with("a\tScience (") && !got.contains(">"),
        "{got}"
    );
}

#[test]
fn a_damaged_model_is_refused_with_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let t = train(dir.path());
    let good = std::fs::read(&t.model).unwrap();
    let cases: [(&str, Vec<u8>, &str); 3] = [
        (
            "flipped.model",
            {
                let mut b = good.clone();
                let at = b.len() / 2;
                b[at] ^= 0x40;
                b
            },
            "model file damaged: checksum",
        ),
        (
            "short.model",
            good[..good.len() - 10].to_vec(),
            "model file truncated",
        ),
        (
            "page.model",
            b"<html>not a model</html>".to_vec(),
            "not a focuser model file",
        ),
    ];
    for (name, bytes, says) in cases {
        let file = dir.path().join(name);
        std::fs::write(&file, bytes).unwrap();
        let out = output_with_input(
            yacobot().args(["classify", "--model", file.to_str().unwrap()]),
            b"a\tthe rocket\n",
            Duration::from_secs(60),
        );
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert!(
            stderr.contains(name) && stderr.contains(says),
            "{name}: {stderr}"
        );
        assert!(out.stdout.is_empty());
        let page = fixture("readability-001.html");
        let out = run(&["analyze", &page, "--model", file.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1));
        assert!(text(&out.stderr).contains(says), "{}", text(&out.stderr));
    }
}
