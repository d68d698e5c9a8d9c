//! A progress bar on stderr with references per second and ETA; drawn only when stderr is a
//! terminal, so logs and CI output stay clean.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use xlat::sim::Progress;

/// Turns engine progress events into an indicatif bar.
pub struct Bar {
    bar: Option<ProgressBar>,
    enabled: bool,
}

impl Bar {
    /// A bar that draws only if `enabled` and stderr is a terminal.
    pub fn new(enabled: bool) -> Bar {
        Bar { bar: None, enabled: enabled && std::io::stderr().is_terminal() }
    }

    /// Handles one event.
    pub fn update(&mut self, event: Progress) {
        if !self.enabled {
            return;
        }
        match event {
            Progress::Start { workload, expected } => {
                let bar = match expected {
                    Some(n) => ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::stderr()).with_style(
                        ProgressStyle::with_template(
                            "{prefix:>12} [{bar:30}] {human_pos}/{human_len} refs  {per_sec}  ETA {eta}",
                        )
                        .expect("valid template")
                        .progress_chars("=> "),
                    ),
                    None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()).with_style(
                        ProgressStyle::with_template("{prefix:>12} {spinner} {human_pos} refs  {per_sec}  {elapsed}")
                            .expect("valid template"),
                    ),
                };
                bar.set_prefix(workload.to_string());
                self.bar = Some(bar);
            }
            Progress::Advance { refs } => {
                if let Some(bar) = &self.bar {
                    bar.set_position(refs);
                }
            }
            Progress::Finish => {
                if let Some(bar) = self.bar.take() {
                    bar.finish_and_clear();
                }
            }
        }
    }
}
