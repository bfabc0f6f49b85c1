//! Looking at a page the way a person would: headless Chromium (Debian's `chromium`, installed
//! by `scripts/test.sh`) loads it, and we get a screenshot or the text of the page after load.
//!
//! Every run gets a fresh profile directory, no network services of its own (sync, component
//! updates, QUIC), and a time limit after which Chromium and all its children are killed.
//!
//! ```no_run
//! let png = std::env::temp_dir().join("status.png");
//! let shot = focuser_tests::browser::screenshot("http://127.0.0.1:8101/", &png).unwrap();
//! assert_eq!((shot.width, shot.height), focuser_tests::browser::WINDOW);
//! let text = focuser_tests::browser::rendered_text("http://127.0.0.1:8101/").unwrap();
//! assert!(text.contains("database up"));
//! ```

use std::collections::HashSet;
use std::fmt;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// Where Debian installs it; `FOCUSER_CHROMIUM` names another binary.
pub const CHROMIUM: &str = "/usr/bin/chromium";
/// The window (and so the screenshot) size unless [`Chromium::window`] says otherwise.
pub const WINDOW: (u32, u32) = (1280, 1000);
/// How long one Chromium run may take before it is killed.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// Why a page could not be looked at.
#[derive(Debug)]
pub enum BrowserError {
    /// No Chromium binary where one was expected.
    NotInstalled(PathBuf),
    /// Chromium could not be started, or its output not read.
    Io(String, std::io::Error),
    /// It ran past the time limit and was killed.
    Timeout {
        url: String,
        after: Duration,
        stderr: String,
    },
    /// It exited with an error, or produced nothing.
    Failed {
        url: String,
        status: ExitStatus,
        why: String,
        stderr: String,
    },
    /// The screenshot is not a PNG we can read.
    BadPng(PathBuf, String),
}

impl fmt::Display for BrowserError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BrowserError::NotInstalled(p) => write!(
                f,
                "{} is not there: install Debian's chromium (scripts/test.sh does: \
                 apt-get install --no-install-recommends chromium) or set FOCUSER_CHROMIUM",
                p.display()
            ),
            BrowserError::Io(what, e) => write!(f, "{what}: {e}"),
            BrowserError::Timeout { url, after, stderr } => write!(
                f,
                "chromium did not finish loading {url} within {after:?} and was killed; \
                 its last words:\n{stderr}"
            ),
            BrowserError::Failed {
                url,
                status,
                why,
                stderr,
            } => write!(
                f,
                "chromium failed on {url} ({status}): {why}; its last words:\n{stderr}"
            ),
            BrowserError::BadPng(p, e) => write!(f, "{}: not a readable PNG: {e}", p.display()),
        }
    }
}

impl std::error::Error for BrowserError {}

/// A headless Chromium.
#[derive(Debug, Clone)]
pub struct Chromium {
    binary: PathBuf,
    timeout: Duration,
    window: (u32, u32),
}

/// What a screenshot holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Screenshot {
    pub path: PathBuf,
    pub width: u32,
    pub height: u32,
    pub bytes: u64,
    /// Distinct colours in the image (counted up to 4096): a blank page has one.
    pub colours: usize,
}

/// The output of one Chromium run.
struct Run {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Chromium {
    /// `FOCUSER_CHROMIUM` or [`CHROMIUM`], if it is there.
    pub fn find() -> Result<Chromium, BrowserError> {
        let binary = std::env::var_os("FOCUSER_CHROMIUM")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(CHROMIUM));
        Chromium::at(&binary)
    }

    /// The Chromium at `binary`, if it is there.
    pub fn at(binary: &Path) -> Result<Chromium, BrowserError> {
        if !binary.is_file() {
            return Err(BrowserError::NotInstalled(binary.to_path_buf()));
        }
        Ok(Chromium {
            binary: binary.to_path_buf(),
            timeout: TIMEOUT,
            window: WINDOW,
        })
    }

    pub fn timeout(mut self, timeout: Duration) -> Chromium {
        self.timeout = timeout;
        self
    }

    pub fn window(mut self, width: u32, height: u32) -> Chromium {
        self.window = (width, height);
        self
    }

    /// Loads `url` and writes what the window shows to `png`.
    pub fn screenshot(&self, url: &str, png: &Path) -> Result<Screenshot, BrowserError> {
        let _ = std::fs::remove_file(png);
        let run = self.run(
            url,
            &[
                format!("--screenshot={}", png.display()),
                format!("--window-size={},{}", self.window.0, self.window.1),
                "--hide-scrollbars".into(),
            ],
        )?;
        if !png.is_file() {
            return Err(BrowserError::Failed {
                url: url.into(),
                status: run.status,
                why: format!(
                    "it wrote no screenshot to {}{}",
                    png.display(),
                    load_failure(&run.stderr)
                ),
                stderr: run.stderr,
            });
        }
        inspect_png(png)
    }

    /// The page's DOM after load, as Chromium serialises it (`--dump-dom`).
    pub fn dom(&self, url: &str) -> Result<String, BrowserError> {
        let run = self.run(url, &["--dump-dom".into()])?;
        if !run.stdout.contains("<html") {
            return Err(BrowserError::Failed {
                url: url.into(),
                status: run.status,
                why: format!("it printed no document{}", load_failure(&run.stderr)),
                stderr: run.stderr,
            });
        }
        Ok(run.stdout)
    }

    /// The text of the page after load: [`text_of`] its DOM.
    pub fn rendered_text(&self, url: &str) -> Result<String, BrowserError> {
        self.dom(url).map(|d| text_of(&d))
    }

    fn run(&self, url: &str, extra: &[String]) -> Result<Run, BrowserError> {
        let io = |what: &str| {
            let what = what.to_string();
            move |e| BrowserError::Io(what, e)
        };
        let scratch = tempfile::tempdir().map_err(io("a temporary directory"))?;
        let profile = scratch.path().join("profile");
        let (out_path, err_path) = (scratch.path().join("out"), scratch.path().join("err"));
        let out = File::create(&out_path).map_err(io("chromium's output file"))?;
        let err = File::create(&err_path).map_err(io("chromium's error file"))?;
        let mut command = Command::new(&self.binary);
        command
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(extra)
            .arg(url)
            .env("HOME", scratch.path())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        // Its own process group, so that a timeout kills every helper process it started.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command
            .spawn()
            .map_err(io(&format!("cannot start {}", self.binary.display())))?;
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().map_err(io("waiting for chromium"))? {
                break status;
            }
            if started.elapsed() > self.timeout {
                let group = Pid::from_raw(child.id() as i32);
                let _ = killpg(group, Signal::SIGKILL);
                let _ = child.wait();
                return Err(BrowserError::Timeout {
                    url: url.into(),
                    after: self.timeout,
                    stderr: tail(&err_path),
                });
            }
            std::thread::sleep(Duration::from_millis(25));
        };
        let stdout = std::fs::read_to_string(&out_path).map_err(io("chromium's output"))?;
        let stderr = tail(&err_path);
        if !status.success() {
            return Err(BrowserError::Failed {
                url: url.into(),
                status,
                why: "it exited with an error".into(),
                stderr,
            });
        }
        Ok(Run {
            status,
            stdout,
            stderr,
        })
    }
}

/// Chromium's reason when the page did not load (`net::ERR_CONNECTION_REFUSED`), if it gave one.
fn load_failure(stderr: &str) -> String {
    stderr
        .lines()
        .filter_map(|l| l.split_once("Page load failed: "))
        .map(|(_, why)| format!(" (page load failed: {why})"))
        .next_back()
        .unwrap_or_default()
}

/// The last 20 lines of a file, for error messages.
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// Size and colours of a PNG file.
pub fn inspect_png(path: &Path) -> Result<Screenshot, BrowserError> {
    let bad = |e: String| BrowserError::BadPng(path.to_path_buf(), e);
    let bytes = std::fs::metadata(path)
        .map_err(|e| bad(e.to_string()))?
        .len();
    let file = File::open(path).map_err(|e| bad(e.to_string()))?;
    let mut decoder = png::Decoder::new(BufReader::new(file));
    decoder.set_transformations(png::Transformations::EXPAND);
    let mut reader = decoder.read_info().map_err(|e| bad(e.to_string()))?;
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| bad("image too large".into()))?;
    let mut buf = vec![0; size];
    let info = reader
        .next_frame(&mut buf)
        .map_err(|e| bad(e.to_string()))?;
    let pixel = info.color_type.samples() * (info.bit_depth as usize).div_ceil(8);
    let mut colours = HashSet::new();
    for p in buf[..info.buffer_size().min(buf.len())].chunks_exact(pixel.max(1)) {
        if colours.len() >= 4096 {
            break;
        }
        colours.insert(p.to_vec());
    }
    Ok(Screenshot {
        path: path.to_path_buf(),
        width: info.width,
        height: info.height,
        bytes,
        colours: colours.len(),
    })
}

/// The text a reader sees in a DOM serialised by Chromium: without `<head>`, `<style>`,
/// `<script>` and comments, every tag a word break, whitespace collapsed to single spaces,
/// entities decoded. Chromium's serialiser writes text with only `&amp;`, `&lt;`, `&gt;` and
/// `&nbsp;`, so decoding those (and numeric references) is exact.
pub fn text_of(dom: &str) -> String {
    let mut text = String::with_capacity(dom.len() / 2);
    let mut rest = dom;
    while let Some(open) = rest.find('<') {
        text.push_str(&rest[..open]);
        text.push(' ');
        rest = &rest[open..];
        let head: String = rest
            .chars()
            .take(8)
            .collect::<String>()
            .to_ascii_lowercase();
        let skip_to = if head.starts_with("<!--") {
            Some("-->")
        } else if head.starts_with("<head") && !head.starts_with("<header") {
            Some("</head>")
        } else if head.starts_with("<style") {
            Some("</style>")
        } else if head.starts_with("<script") {
            Some("</script>")
        } else {
            None
        };
        let end = match skip_to {
            Some(closing) => rest
                .to_ascii_lowercase()
                .find(closing)
                .map(|i| i + closing.len()),
            None => rest.find('>').map(|i| i + 1),
        };
        rest = &rest[end.unwrap_or(rest.len())..];
    }
    text.push_str(rest);
    decode_entities(&text)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn decode_entities(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let entity = rest
            .find(';')
            .filter(|&end| end <= 10)
            .and_then(|end| Some((entity_char(&rest[1..end])?, end)));
        match entity {
            Some((c, end)) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn entity_char(name: &str) -> Option<char> {
    match name {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        "nbsp" => Some(' '),
        _ => {
            let n = name.strip_prefix('#')?;
            let code = match n.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => n.parse().ok()?,
            };
            char::from_u32(code)
        }
    }
}

/// [`Chromium::screenshot`] with the default window and time limit.
pub fn screenshot(url: &str, png: &Path) -> Result<Screenshot, BrowserError> {
    Chromium::find()?.screenshot(url, png)
}

/// [`Chromium::rendered_text`] with the default time limit.
pub fn rendered_text(url: &str) -> Result<String, BrowserError> {
    Chromium::find()?.rendered_text(url)
}

/// [`Chromium::dom`] with the default time limit.
pub fn dom(url: &str) -> Result<String, BrowserError> {
    Chromium::find()?.dom(url)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn text_of_drops_markup_and_decodes_entities() {
        let dom = "<html><head><title>t</title><style>b{}</style></head><body>\
                   <header><h1>testd</h1></header><!-- c --><div class=\"card\"><div>queue</div>\
                   <div>12<span> URLs</span></div></div><p>&lt;script&gt;alert(\"x\")&lt;/script&gt; \
                   &amp; 'q'&nbsp;&#38;&#x3C;</p><script>var x = '<b>';</script>tail &bogus; & end</body></html>";
        assert_eq!(
            text_of(dom),
            "testd queue 12 URLs <script>alert(\"x\")</script> & 'q' &< tail &bogus; & end"
        );
    }

    #[test]
    fn text_of_survives_broken_markup() {
        assert_eq!(text_of("a <b unclosed"), "a");
        assert_eq!(text_of("<style>never closed"), "");
        assert_eq!(
            text_of("ü <i>é</i> &#xZZ; &#99999999;"),
            "ü é &#xZZ; &#99999999;"
        );
    }
}
