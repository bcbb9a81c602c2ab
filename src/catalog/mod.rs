//! The run catalog (issue 27): every ingested flight log as one run of a vehicle, in an SQLite
//! file, so that each ingest can say what changed since the vehicle's previous run and
//! `ulog runs` / `ulog changes` can list a vehicle's history. The catalog is a cache of the
//! ingest reports, never the only copy: everything it holds is read from a report, and
//! `ulog catalog rebuild` makes it again from the reports on disk.
//!
//! Pure (values in, values out): `params` (a parameter's value), `changes` (which parameters
//! differ, the document's wording), `labels` (what action values mean), `vehicle` (identity and
//! range names), `facts` (what a report gives the catalog), `manifest` (the sender's
//! `SHA256SUMS`). The file: `schema`
//! (tables and their version), `store` (the only module that touches SQLite), `lock` (who may
//! replace the file), `rebuild` (from the reports; a damaged catalog set aside).

pub mod changes;
pub mod facts;
pub mod labels;
pub mod lock;
pub mod manifest;
pub mod params;
pub mod rebuild;
pub mod schema;
pub mod store;
pub mod vehicle;
