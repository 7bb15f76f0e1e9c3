//! What a run shows while it works: a progress bar on a terminal, plain lines in a log.

use crate::run::Event;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::Path;
use std::time::Instant;

/// The last lines of a run: its folder, every file in it (unless the run is quiet), its page.
pub fn print_run_folder(dir: &Path, verbosity: Verbosity) {
    println!("\nRun folder: {}", dir.display());
    let files = crate::runs::list_files(dir);
    match verbosity {
        Verbosity::Quiet => {}
        Verbosity::Normal => println!("  {} (--verbose lists every file)", folder_summary(&files)),
        Verbosity::Verbose => {
            for f in &files {
                if let Some(name) = f.file_name() {
                    println!("  {}", name.to_string_lossy());
                }
            }
        }
    }
    let index = dir.join(crate::report::html::INDEX);
    if index.is_file() {
        println!("Open in a browser: {}", index.display());
    }
}

/// What a run folder holds, in one line: its files by kind (a sweep writes a chart in two
/// formats per shape, and a hundred file names would bury the line that matters, the page).
fn folder_summary(files: &[std::path::PathBuf]) -> String {
    let count = |ext: &str| {
        files
            .iter()
            .filter(|f| f.extension().is_some_and(|e| e == ext))
            .count()
    };
    let mut parts: Vec<String> = files
        .iter()
        .filter(|f| {
            !matches!(
                f.extension().and_then(|e| e.to_str()),
                Some("md" | "csv" | "svg" | "png")
            )
        })
        .filter_map(|f| {
            let name = f.file_name()?.to_string_lossy().into_owned();
            Some(if f.is_dir() { format!("{name}/") } else { name })
        })
        .collect();
    for (exts, what) in [(["md", "csv"], "tables"), (["png", "svg"], "charts")] {
        let n: Vec<usize> = exts.iter().map(|e| count(e)).collect();
        if n.iter().sum::<usize>() > 0 {
            parts.push(format!(
                "{} {what} ({})",
                n.iter().sum::<usize>(),
                exts.iter()
                    .zip(&n)
                    .filter(|(_, n)| **n > 0)
                    .map(|(e, n)| format!("{n} .{e}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    parts.join(", ")
}

/// A plain-text table, columns two spaces apart and padded to their widest cell (the header's
/// included): left-aligned, or right-aligned where `right(column)` says so (figures). Lines
/// end without trailing spaces.
pub fn aligned(head: &[String], rows: &[Vec<String>], right: impl Fn(usize) -> bool) -> String {
    let mut width: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let l = cells
            .iter()
            .zip(&width)
            .enumerate()
            .map(|(i, (c, w))| match right(i) {
                true => format!("{c:>w$}"),
                false => format!("{c:<w$}"),
            })
            .collect::<Vec<_>>()
            .join("  ");
        format!("{}\n", l.trim_end())
    };
    let mut s = line(head);
    for r in rows {
        s.push_str(&line(r));
    }
    s
}

/// How much a run prints while it works.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Verbosity {
    /// The run folder and the rows that failed, nothing else.
    Quiet,
    /// A progress bar (a line per shape in a log) and the tables.
    #[default]
    Normal,
    /// A line per row as it finishes, too.
    Verbose,
}

impl Verbosity {
    pub fn from_flags(quiet: bool, verbose: bool) -> Self {
        match (quiet, verbose) {
            (true, _) => Self::Quiet,
            (_, true) => Self::Verbose,
            _ => Self::Normal,
        }
    }
}

/// A bar on a terminal; plain lines when stderr is a file or a pipe (CI logs).
pub struct Progress {
    bar: Option<ProgressBar>,
    verbosity: Verbosity,
    /// Width of the kernel column of the row lines.
    width: usize,
    /// When the current shape and the last row began: a log says how long each took, which
    /// is what a time budget on a GPU machine is planned from.
    shape_start: Instant,
    row_start: Instant,
    shape_label: String,
}

impl Progress {
    /// Progress over `rows` rows.
    pub fn new(rows: usize, verbosity: Verbosity) -> Self {
        let terminal = std::io::stderr().is_terminal() && verbosity != Verbosity::Quiet;
        let bar = terminal.then(|| {
            let bar = ProgressBar::new(rows as u64);
            let style = ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} rows  {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar.enable_steady_tick(std::time::Duration::from_millis(120));
            bar
        });
        Self {
            bar,
            verbosity,
            width: 24,
            shape_start: Instant::now(),
            row_start: Instant::now(),
            shape_label: String::new(),
        }
    }

    pub fn event(&mut self, e: Event<'_>) {
        let line = match e {
            _ if self.verbosity == Verbosity::Quiet => return,
            Event::Shape {
                workload,
                shape,
                kernels,
            } => {
                self.shape_start = Instant::now();
                self.row_start = self.shape_start;
                self.shape_label = format!("{workload} {}", shape.label());
                if let Some(bar) = &self.bar {
                    bar.set_message(format!("{workload} {}", shape.label()));
                }
                if self.bar.is_some() && self.verbosity == Verbosity::Normal {
                    return;
                }
                format!(
                    "{workload} {}: {}",
                    shape.label(),
                    crate::report::table::count(kernels, "kernel")
                )
            }
            // A terminal's bar shows the time; a log gets a line per shape.
            Event::ShapeDone { .. } if self.bar.is_some() => return,
            Event::ShapeDone { .. } => format!(
                "{} done in {:.1} s",
                self.shape_label,
                self.shape_start.elapsed().as_secs_f64()
            ),
            Event::Reference { label } => {
                let took = std::mem::replace(&mut self.row_start, Instant::now()).elapsed();
                if self.verbosity != Verbosity::Verbose {
                    return;
                }
                format!(
                    "  inputs and reference: {label}  ({:.1} s)",
                    took.as_secs_f64()
                )
            }
            Event::Row { row, .. } => {
                let took = std::mem::replace(&mut self.row_start, Instant::now()).elapsed();
                if let Some(bar) = &self.bar {
                    bar.inc(1);
                }
                // Without --verbose only the rows that did not pass get a line.
                let notable = matches!(
                    row.status,
                    crate::results::Status::Failed | crate::results::Status::Error
                );
                if self.verbosity == Verbosity::Normal && !notable {
                    return;
                }
                let width = self.width.max(row.id.chars().count());
                // The row's median, and the wall time it took to check and time it.
                format!(
                    "  {:<width$}  {:<5}{}  ({:.1} s)",
                    row.id,
                    crate::report::table::status_word(row.status),
                    row.median_ms()
                        .map(|ms| format!(" {ms:>10.3} ms"))
                        .unwrap_or_default(),
                    took.as_secs_f64()
                )
            }
        };
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Sends this process's standard output and error to /dev/null until dropped: criterion
/// prints its own report of every row there ("Benchmarking ...", its statistics), which the
/// lab's progress bar and tables replace. Does nothing if the descriptors cannot be changed.
pub struct Muted {
    saved: Vec<(i32, i32)>,
}

impl Muted {
    pub fn new() -> Self {
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        let mut saved = Vec::new();
        // SAFETY: plain descriptor calls; a descriptor that cannot be redirected is left as
        // it was.
        unsafe {
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
            if null >= 0 {
                for fd in [libc::STDOUT_FILENO, libc::STDERR_FILENO] {
                    let copy = libc::dup(fd);
                    if copy >= 0 && libc::dup2(null, fd) >= 0 {
                        saved.push((fd, copy));
                    } else if copy >= 0 {
                        libc::close(copy);
                    }
                }
                libc::close(null);
            }
        }
        Self { saved }
    }
}

impl Default for Muted {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Muted {
    fn drop(&mut self) {
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        for &(fd, copy) in &self.saved {
            // SAFETY: `copy` is the duplicate of `fd` made in `new`.
            unsafe {
                libc::dup2(copy, fd);
                libc::close(copy);
            }
        }
    }
}
