use focuser_multidoc::segment::{segment_with_features, Model, FEATURE_NAMES};
fn main() {
    let path = std::env::args().nth(1).unwrap_or_default();
    let show: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(usize::MAX);
    let body = std::fs::read(&path).unwrap_or_default();
    let d = focuser_multidoc::decode::decode(&body, None, 1 << 30);
    let Ok(d) = d else { return println!("{d:?}") };
    let (s, f) = segment_with_features(&d.text, &Model::DEFAULT);
    println!("{} blocks {:?}", s.blocks.len(), d.encoding);
    for (i, b) in s.blocks.iter().enumerate() {
        let t: String = b.text.chars().take(90).collect();
        println!(
            "{i:>4} {:.2} {:>5} {:<30} {}",
            b.weight,
            b.chars,
            b.path,
            t.replace('\n', " ")
        );
        if i == show {
            for (n, v) in FEATURE_NAMES.iter().zip(f[i]) {
                if v != 0.0 {
                    print!("{n}={v:.2} ");
                }
            }
            println!();
        }
    }
}
