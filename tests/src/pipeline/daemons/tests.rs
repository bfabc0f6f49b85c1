use super::super::test_plan;
use super::*;

fn line<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find(|l| {
        l.trim_start_matches(['#', ' '])
            .starts_with(&format!("{key} "))
    })
}

/// With bindings on, every node runs the path binder and ships its stubs store with a
/// reader of its own; only the crawl archive's reader honours yacobot's retention floor;
/// the crawlers start before the readers of their stores.
#[test]
fn the_path_binder_runs_and_only_the_archive_reader_has_the_floor() {
    let dir = tempfile::tempdir().unwrap();
    let plan = Plan {
        multidoc: true,
        bindings: true,
        ..test_plan(dir.path())
    };
    let all = instances(&plan);
    let text = |name: &str| {
        let i = all.iter().find(|i| i.name == name).unwrap();
        config_text(&plan, i).unwrap()
    };
    let yacobot = text("yacobot-yb2");
    assert!(line(&yacobot, "PathBinder.Enable").unwrap().contains("= 1"));
    assert!(line(&yacobot, "PathBinder.Interval")
        .unwrap()
        .contains("= 2"));
    let archive = text("reader-yb2");
    let floor = segments(&plan, 2).join("retention.floor");
    assert!(
        line(&archive, "Store.FloorFile")
            .unwrap()
            .contains(&format!("= {}", floor.display())),
        "{archive}"
    );
    for other in ["reader-vr-yb2", "reader-bind-yb2", "reader-stubs-yb2"] {
        let l = line(&text(other), "Store.FloorFile").unwrap().to_string();
        assert!(l.starts_with("# Store.FloorFile ="), "{other}: {l}");
    }
    let stubs = text("reader-stubs-yb2");
    let store = format!("= {}", stubs_store(&plan, 2).display());
    assert!(line(&stubs, "store_dir").unwrap().contains(&store));
    assert!(line(&stubs, "name").unwrap().contains("node2-stubs"));
    let adserver = format!("= 127.0.0.1:{}", plan.ports.adserver_listen);
    assert!(line(&stubs, "Index.0.Addresses")
        .unwrap()
        .contains(&adserver));
    let at = |name: &str| all.iter().position(|i| i.name == name).unwrap();
    assert!(at("yacobot-yb2") < at("reader-yb1"));
    assert!(at("reader-stubs-yb2") < at("master"));

    let off = Plan {
        bindings: false,
        ..plan
    };
    assert!(!instances(&off).iter().any(|i| i.kind == Kind::StubsSender));
    let i = instances(&off)
        .into_iter()
        .find(|i| i.name == "yacobot-yb1");
    let yacobot = config_text(&off, &i.unwrap()).unwrap();
    assert!(line(&yacobot, "PathBinder.Enable").unwrap().contains("= 0"));
}

/// A plan saved by an older build has no ports for the readers added since: its daemons are
/// listed without them (so that `run.sh` can stop that run), never a panic.
#[test]
fn a_plan_without_the_newer_readers_ports_lists_what_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let mut plan = Plan {
        multidoc: true,
        bindings: true,
        ..test_plan(dir.path())
    };
    plan.ports.stubs_senders.clear();
    let all = instances(&plan);
    assert!(all.iter().all(|i| i.kind != Kind::StubsSender));
    assert_eq!(
        all.iter()
            .filter(|i| i.kind == Kind::BindingsSender)
            .count(),
        plan.nodes
    );
}
