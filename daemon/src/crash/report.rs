//! A crash report as the maintainer gets it: a short mail message (headers, a few lines).
//! The details (the backtrace) stay in the daemon's log; the mail says where to look.

/// The longest subject line's own text (the part after the daemon's name).
const MAX_SUBJECT: usize = 120;
/// The longest message body kept (a panic message can be anything).
const MAX_BODY: usize = 4000;

/// What happened, for one report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// One line: "panic in thread 'crawl' at src/x.rs:10:5", "exited: <error>".
    pub what: String,
    /// More lines for the body (the panic's message, the error's chain).
    pub detail: String,
}

/// Who sends the report (the same for every report of a process).
#[derive(Debug, Clone)]
pub(super) struct Sender {
    pub progname: String,
    pub host: String,
    pub pid: u32,
    pub maintainer: String,
    pub log: String,
}

impl Report {
    pub fn panic(thread: &str, location: &str, message: &str) -> Report {
        Report {
            what: format!("panic in thread '{thread}' at {location}"),
            detail: message.to_string(),
        }
    }

    /// A daemon whose main loop ended with an error: it stops.
    pub fn fatal(error: &str) -> Report {
        Report {
            what: "stopped on an error".into(),
            detail: error.to_string(),
        }
    }

    /// The mail message, ready for `sendmail -t`.
    pub(super) fn message(&self, from: &Sender, at: &str) -> String {
        let subject = one_line(&self.what, MAX_SUBJECT);
        let detail = clip(&self.detail, MAX_BODY);
        format!(
            "To: {to}\nSubject: focuser {name} on {host}: {subject}\nAuto-Submitted: auto-generated\n\
             Content-Type: text/plain; charset=utf-8\n\n\
             {name} (pid {pid}) on {host}, {at}:\n{what}\n\n{detail}\n\n{log}\n",
            to = from.maintainer,
            name = from.progname,
            host = from.host,
            pid = from.pid,
            what = one_line(&self.what, MAX_BODY),
            log = from.log,
        )
    }
}

/// `text` on one line, control characters shown as `\xHH` (it goes into a header), clipped.
fn one_line(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max));
    for c in text.chars() {
        if out.len() >= max {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.push_str(&format!("\\x{:02X}", u32::from(c) & 0xff));
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` cut at `max` bytes (on a character boundary); a line that is a lone `.` would end
/// the message for some mailers, so it gets a space.
fn clip(text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut out: String = text[..end]
        .lines()
        .map(|l| if l == "." { " ." } else { l })
        .collect::<Vec<_>>()
        .join("\n");
    if end < text.len() {
        out.push_str("\n[…]");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sender() -> Sender {
        Sender {
            progname: "yacobot".into(),
            host: "crawl1".into(),
            pid: 42,
            maintainer: "ops@example.org".into(),
            log: "The backtrace is in logs/yacobot.log.".into(),
        }
    }

    #[test]
    fn a_report_is_a_mail_with_one_recipient_and_a_one_line_subject() {
        let r = Report::panic("crawl", "src/x.rs:1:2", "boom\nBcc: everyone@example.org");
        let m = r.message(&sender(), "2026-11-26 10:00:00 UTC");
        let (head, body) = m.split_once("\n\n").unwrap();
        assert_eq!(
            head.lines().collect::<Vec<_>>(),
            [
                "To: ops@example.org",
                "Subject: focuser yacobot on crawl1: panic in thread 'crawl' at src/x.rs:1:2",
                "Auto-Submitted: auto-generated",
                "Content-Type: text/plain; charset=utf-8",
            ]
        );
        assert!(body.contains("yacobot (pid 42) on crawl1"));
        assert!(
            body.contains("boom\nBcc: everyone@example.org"),
            "in the body, harmless"
        );
    }

    #[test]
    fn control_characters_never_reach_the_headers() {
        let r = Report {
            what: "a\r\nBcc: x@y\u{1b}".into(),
            detail: String::new(),
        };
        let m = r.message(&sender(), "now");
        let subject = m.lines().nth(1).unwrap();
        assert_eq!(
            subject,
            "Subject: focuser yacobot on crawl1: a\\x0D\\x0ABcc: x@y\\x1B"
        );
        assert!(!m.lines().any(|l| l.starts_with("Bcc:")));
    }

    #[test]
    fn long_details_are_clipped_and_a_lone_dot_defused() {
        let r = Report::fatal(&format!("first\n.\n{}", "é".repeat(5000)));
        let m = r.message(&sender(), "now");
        assert!(m.contains("first\n .\n"));
        assert!(m.contains("[…]"));
        assert!(m.len() < MAX_BODY + 1000);
        let long = Report {
            what: "w".repeat(500),
            detail: String::new(),
        };
        let subject = long
            .message(&sender(), "now")
            .lines()
            .nth(1)
            .unwrap()
            .to_string();
        assert!(subject.chars().count() < MAX_SUBJECT + 50, "{subject}");
    }
}
