//! What a run shows while it works: a progress bar on a terminal, plain lines in a log.

use crate::run::Event;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;

/// A bar on a terminal; plain lines when stderr is a file or a pipe (CI logs).
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn new(rows: usize) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(rows as u64);
            let style = ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} rows  {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar.enable_steady_tick(std::time::Duration::from_millis(120));
            bar
        });
        Self { bar }
    }

    pub fn event(&mut self, e: Event<'_>) {
        let line = match e {
            Event::Shape {
                workload,
                shape,
                kernels,
            } => {
                if let Some(bar) = &self.bar {
                    bar.set_message(format!("{workload} {}", shape.label()));
                }
                format!("{workload} {}: {kernels} kernels", shape.label())
            }
            Event::Row { row, .. } => {
                if let Some(bar) = &self.bar {
                    bar.inc(1);
                }
                format!(
                    "  {:<18} {:?}{}",
                    row.id,
                    row.status,
                    row.median_ms()
                        .map(|ms| format!(" {ms:.3} ms"))
                        .unwrap_or_default()
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
