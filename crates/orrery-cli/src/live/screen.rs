//! The terminal side of the display: its size, and the [`Screen`] that erases the block it drew
//! and draws the next one; the only part that writes to the terminal.

use super::render::{Line, Size};
use std::io::Write;

/// The size of the terminal on standard output; 80x24 when it cannot be told (a pseudo-terminal
/// nobody sized reports 0x0).
pub fn terminal_size() -> Size {
    // SAFETY: TIOCGWINSZ only writes a `winsize` into the struct it is given.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let known = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    let or = |n: u16, fallback: usize| if known && n > 0 { usize::from(n) } else { fallback };
    Size { width: or(ws.ws_col, 80), height: or(ws.ws_row, 24) }
}

/// The terminal output of the display: what it drew last, to erase and redraw it.
pub struct Screen<W: Write> {
    out: W,
    colour: bool,
    /// Lines of the block on the terminal, the cursor on the line below them.
    drawn: usize,
    shown: Vec<String>,
    /// A write failed (a closed terminal): nothing more is written.
    broken: bool,
}

impl<W: Write> Screen<W> {
    pub fn new(out: W, colour: bool) -> Screen<W> {
        Screen { out, colour, drawn: 0, shown: Vec::new(), broken: false }
    }

    /// Erases the block, prints `above` for good, and draws `block` truncated to `width`; one
    /// write. Writes nothing when there is nothing new.
    pub fn draw(&mut self, above: &[Line], block: &[Line], width: usize) {
        let block: Vec<String> = block.iter().map(|l| l.paint(Some(width), self.colour)).collect();
        if self.broken || (above.is_empty() && block == self.shown) {
            return;
        }
        let mut text = String::from("\r");
        if self.drawn > 0 {
            text.push_str(&format!("\x1b[{}A", self.drawn));
        }
        text.push_str("\x1b[J");
        for line in above {
            text.push_str(&line.paint(None, self.colour));
            text.push('\n');
        }
        for line in &block {
            text.push_str(line);
            text.push('\n');
        }
        if self.out.write_all(text.as_bytes()).and_then(|()| self.out.flush()).is_err() {
            self.broken = true;
        }
        self.drawn = block.len();
        self.shown = block;
    }

    /// Erases the block (to ask a question, or at the end), printing `above` for good.
    pub fn clear(&mut self, above: &[Line]) {
        self.draw(above, &[], 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_screen_redraws_the_block_in_place_and_only_when_it_changed() {
        let mut screen = Screen::new(Vec::new(), false);
        let block = |n: u32| vec![Line::new().plain("header"), Line::new().plain(format!("  task {n}"))];
        screen.draw(&[], &block(1), 80);
        screen.draw(&[], &block(1), 80);
        screen.draw(&[Line::new().plain("FAILED     bp.x")], &block(2), 80);
        screen.clear(&[Line::new().plain("session    failed")]);
        let written = String::from_utf8(screen.out.clone()).unwrap();
        assert_eq!(
            written,
            concat!(
                "\r\x1b[Jheader\n  task 1\n",
                "\r\x1b[2A\x1b[JFAILED     bp.x\nheader\n  task 2\n",
                "\r\x1b[2A\x1b[Jsession    failed\n",
            ),
            "an unchanged frame is not written; the permanent line goes above the block"
        );
        assert_eq!(screen.drawn, 0, "the cursor is left on a clean line");
    }

    struct Closed;

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_terminal_stops_the_drawing_without_a_panic() {
        let mut screen = Screen::new(Closed, true);
        screen.draw(&[Line::new().plain("kept")], &[Line::new().plain("block")], 0);
        assert!(screen.broken);
        screen.clear(&[Line::new().plain("summary")]);
    }
}
