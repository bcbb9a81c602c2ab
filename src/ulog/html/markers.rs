//! What a marker on the shared time axis stands for, and its colour.

use crate::ulog::lane::LaneKind;

/// What a marker on the time axis stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerKind {
    Dropout,
    Warning,
    Error,
    Finding,
    /// The start or end of a ground gap (`--ground`).
    GroundGap,
    /// A PX4 event at notice or info level (warnings and errors are drawn as such).
    Event,
}

impl MarkerKind {
    pub(super) fn color(self) -> &'static str {
        match self {
            MarkerKind::Dropout => "#e67e22",
            MarkerKind::Warning => "#d4ac0d",
            MarkerKind::Error => "#c0392b",
            MarkerKind::Finding => "#8e44ad",
            MarkerKind::GroundGap => LaneKind::Gap.color(),
            MarkerKind::Event => "#16a085",
        }
    }
}

/// One event on the shared time axis.
#[derive(Debug, Clone)]
pub struct Marker {
    pub t: u64,
    pub kind: MarkerKind,
    pub text: String,
    pub message: u64,
    /// Written beside the marker on the first plot (failsafes, and events at error level or
    /// worse), not only on hover.
    pub label: Option<String>,
}
