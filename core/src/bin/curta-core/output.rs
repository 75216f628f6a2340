//! Standard output, which every report is written to. `println!` panics
//! when the reader has gone (`curta-core inspect A | head -1`): here a
//! closed pipe ends the process quietly, with success, since the reader
//! took all it wanted.

use std::io::{self, Write};

/// One line on standard output, as `println!` writes it.
macro_rules! outln {
    () => {
        $crate::output::line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::output::line(format_args!($($arg)*))
    };
}

/// Standard output, where a closed pipe ends the process with success.
pub struct Stdout(io::Stdout);

pub fn stdout() -> Stdout {
    Stdout(io::stdout())
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        quiet(self.0.write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        quiet(self.0.flush())
    }
}

/// Exits with success on a closed pipe; any other result is returned.
fn quiet<T>(result: io::Result<T>) -> io::Result<T> {
    match result {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => std::process::exit(0),
        other => other,
    }
}

/// Writes `args` and a newline; another failure than a closed pipe panics,
/// as `println!` does.
pub fn line(args: std::fmt::Arguments) {
    if let Err(e) = writeln!(stdout(), "{args}") {
        panic!("failed printing to stdout: {e}");
    }
}
