//! The progress display of a running phase: a bar on a terminal, a line every 10 s otherwise.

use std::io::IsTerminal as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::recorder::Recorder;

/// Whether a progress bar can be drawn.
pub fn bar_enabled(no_progress: bool) -> bool {
    !no_progress && std::io::stderr().is_terminal()
}

/// A live display of one phase, fed from its recorder.
pub struct Progress {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Progress {
    /// Starts displaying `label`; `bar` draws a bar, else a plain line goes to stderr every 10 s.
    pub fn start(
        bar: bool,
        label: &str,
        duration: Option<Duration>,
        count: Option<u64>,
        rec: Arc<Mutex<Recorder>>,
    ) -> Progress {
        let (stop, mut stopped) = watch::channel(false);
        let label = label.to_string();
        let task = tokio::spawn(async move {
            let start = rec
                .lock()
                .map(|r| r.start())
                .unwrap_or_else(|_| Instant::now());
            let pb = bar.then(|| {
                let (len, template) = match (count, duration) {
                    (Some(n), _) => (
                        n,
                        "{prefix:.bold} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}",
                    ),
                    (None, Some(d)) => (
                        d.as_secs().max(1),
                        "{prefix:.bold} [{elapsed_precise}] {wide_bar} {pos}/{len} s {msg}",
                    ),
                    (None, None) => (0, "{prefix:.bold} [{elapsed_precise}] {msg}"),
                };
                let pb = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
                if let Ok(style) = ProgressStyle::with_template(template) {
                    pb.set_style(style);
                }
                pb.set_prefix(label.clone());
                pb
            });
            let mut tick = tokio::time::interval(Duration::from_millis(250));
            let mut last_line = Instant::now();
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = stopped.changed() => break,
                }
                let now = Instant::now();
                let Ok(snap) = rec.lock().map(|r| r.snapshot(now)) else {
                    break;
                };
                let msg = format!(
                    "{} ok, {} errors, {}/s",
                    snap.ok, snap.errors, snap.last_second_ok
                );
                match &pb {
                    Some(pb) => {
                        let pos = match (count, duration) {
                            (Some(n), _) => snap.transactions.min(n),
                            (None, Some(d)) => now
                                .saturating_duration_since(start)
                                .as_secs()
                                .min(d.as_secs().max(1)),
                            (None, None) => 0,
                        };
                        pb.set_position(pos);
                        pb.set_message(msg);
                    }
                    None if now.saturating_duration_since(last_line) >= Duration::from_secs(10) => {
                        last_line = now;
                        eprintln!(
                            "    {label}: {:.0} s, {msg}",
                            now.saturating_duration_since(start).as_secs_f64()
                        );
                    }
                    None => {}
                }
            }
            if let Some(pb) = pb {
                pb.finish_and_clear();
            }
        });
        Progress { stop, task }
    }

    /// Stops the display.
    pub async fn finish(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}
