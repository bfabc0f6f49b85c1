//! The decoded text as quick-xml reads it: counts lines for error positions and caps how
//! much one XML event may take, which is what bounds quick-xml's event buffer.

use std::io::{self, BufRead, Read};

/// The marker error of an event longer than the cap.
#[derive(Debug, thiserror::Error)]
#[error("a tag or text run longer than {0} bytes")]
pub(crate) struct EventTooLong(pub usize);

pub(crate) struct Tracked<R> {
    inner: R,
    /// Bytes of UTF-8 text consumed by the parser.
    consumed: u64,
    /// Where the current event began.
    window_start: u64,
    /// Newlines before the window, and where the last of them was.
    lines_before: u64,
    last_newline_before: Option<u64>,
    /// Offsets of the newlines in the window (bounded by the cap).
    newlines: Vec<u64>,
    cap: usize,
}

impl<R: BufRead> Tracked<R> {
    pub fn new(inner: R, cap: usize) -> Self {
        Tracked {
            inner,
            consumed: 0,
            window_start: 0,
            lines_before: 0,
            last_newline_before: None,
            newlines: Vec::new(),
            cap,
        }
    }

    /// Called before each event: the cap counts from here.
    pub fn next_event(&mut self) {
        if let Some(&last) = self.newlines.last() {
            self.last_newline_before = Some(last);
        }
        self.lines_before += self.newlines.len() as u64;
        self.newlines.clear();
        self.window_start = self.consumed;
    }

    /// 1-based line and column (in bytes) of an offset in the current event or after it.
    pub fn line_col(&self, offset: u64) -> (u64, u64) {
        let offset = offset.max(self.window_start);
        let inside = self.newlines.partition_point(|&n| n < offset);
        let last = match inside {
            0 => self.last_newline_before,
            k => Some(self.newlines[k - 1]),
        };
        let line = self.lines_before + inside as u64 + 1;
        (line, last.map_or(offset + 1, |n| offset - n))
    }

    /// Where the current event began.
    pub fn event_start(&self) -> u64 {
        self.window_start
    }
}

impl<R: BufRead> BufRead for Tracked<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        // Never more than the event may still take, so quick-xml's buffer stays within it.
        let used = (self.consumed - self.window_start) as usize;
        if used >= self.cap {
            return Err(io::Error::other(EventTooLong(self.cap)));
        }
        let room = self.cap - used;
        let buf = self.inner.fill_buf()?;
        Ok(&buf[..buf.len().min(room)])
    }

    fn consume(&mut self, amt: usize) {
        // The bytes consumed are the first `amt` of the buffer last filled, which a second
        // fill_buf returns without reading.
        if let Ok(buf) = self.inner.fill_buf() {
            let base = self.consumed;
            let taken = &buf[..amt.min(buf.len())];
            self.newlines
                .extend(memchr::memchr_iter(b'\n', taken).map(|i| base + i as u64));
        }
        self.consumed += amt as u64;
        self.inner.consume(amt);
    }
}

impl<R: BufRead> Read for Tracked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        crate::encoding::read_buffered(self, buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_across_events_and_the_cap() {
        let text = b"ab\ncd\nef\ngh";
        let mut t = Tracked::new(&text[..], 5);
        t.next_event();
        // Never more than the cap at once.
        assert_eq!(t.fill_buf().unwrap().len(), 5);
        t.consume(4);
        assert_eq!(t.line_col(0), (1, 1));
        assert_eq!(t.line_col(3), (2, 1));
        assert_eq!(t.line_col(4), (2, 2));
        t.consume(1);
        let e = t.fill_buf().unwrap_err();
        assert!(e.get_ref().unwrap().is::<EventTooLong>());
        t.next_event();
        assert_eq!(t.line_col(5), (2, 3));
        t.consume(3);
        assert_eq!(t.line_col(8), (3, 3));
        t.next_event();
        t.consume(3);
        assert_eq!(t.line_col(9), (4, 1));
        assert_eq!(t.line_col(11), (4, 3));
    }
}
