//! One sortie on one clock: the ground's record (receive logs, `.tlog` files, the receiver's
//! events) and the vehicle's flight log put on one UTC timeline with honest bounds.
//!
//! Pure, like the monitors and the ULog reader: receipts, events and flight-log records come in
//! as values, anchors and timeline entries go out; nothing here reads a clock or a file. The
//! `sortie` verb (`crate::cmd::sortie`) is the shell that reads the files and prints.
//!
//! - [`anchor`]: where the vehicle's boot instant lies in UTC (GPS, the `boot_time_utc_us`
//!   information key, the ground's SYSTEM_TIME receipts), each with its bound, and the
//!   cross-check between them;
//! - [`ground`]: what a ground record says (gaps from the same detector `analyze` runs, links,
//!   receiver drops, latency, the receiver's clock), on the record's own clock;
//! - [`gaps`]: the one call into `analyze`'s replay that the gap findings come from;
//! - [`air`]: what the flight log's samples say (arming, modes, failsafes, takeoff and landing,
//!   PX4's view of its links, commands received), on the boot clock;
//! - [`reported`]: what the ingest report adds (logged messages, PX4's decoded events, the
//!   findings: topic stalls, dropouts and the flight rules'), and the failsafes worded by the
//!   `failsafe_entered` rule;
//! - [`px4`]: PX4's numbers in words (navigation states, arming states, commands);
//! - [`timeline`]: both sides on one axis, and what the flight log shows inside each ground gap;
//! - [`entry`]: the timeline's entries and their citations;
//! - [`axis`]: the same placement for a great many stamps at once (the MCAP file's log times);
//! - [`table`]: the timeline as text for a terminal;
//! - [`lane`]: the ground entries as the report's ground lane (`ulog report --ground`).
//!
//! The method, the bounds and a worked example are in `docs/sortie.md`.

pub mod air;
pub mod anchor;
pub mod axis;
pub mod entry;
pub mod gaps;
pub mod ground;
pub mod lane;
pub mod px4;
pub mod reported;
pub mod table;
pub mod timeline;
