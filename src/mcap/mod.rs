//! The MCAP file that `sortie --format mcap` and `ulog export --format mcap` write: Foxglove's
//! container, through Foxglove's `mcap` crate. Messages go into zstd chunks as they come
//! (nothing is held but the chunk being filled), and the summary section at the end has the
//! statistics, the chunk index Foxglove seeks with, and the metadata index.
//!
//! Every channel carries JSON messages (`json`) with a JSON Schema (`jsonschema`), so Foxglove
//! plots every field; the log time of every message is UTC nanoseconds on the one axis the
//! caller chose (the flight log's anchor, or the sortie's).
//!
//! - [`foxglove`]: the JSON Schemas of the Foxglove types written (`foxglove.Log`,
//!   `foxglove.LocationFix`), written from Foxglove's public schema definitions;
//! - [`ground`]: the ground's receipts, `/ground/<sysid>/<msg>`;
//! - [`sortie`]: the sortie's timeline entries (`/sortie/entries`) and its anchors (metadata),
//!   and the whole sortie file;
//! - [`flight`]: the flight log's own channels, written on the ULog export's one walk over the
//!   log.

pub mod flight;
pub mod foxglove;
pub mod ground;
pub mod sortie;

use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

/// Why the MCAP file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum McapError {
    #[error("creating {path}: {source}")]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("writing {path}: {source}")]
    Write {
        path: PathBuf,
        source: mcap::McapError,
    },
    #[error("reading {path} at {at}: {source}")]
    Read {
        path: PathBuf,
        /// Where in the file: `line 12`, `byte 4096`.
        at: String,
        source: std::io::Error,
    },
}

/// What the file holds once finished.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Written {
    pub messages: u64,
    pub channels: usize,
    pub chunks: usize,
    /// Messages per topic.
    pub per_topic: BTreeMap<String, u64>,
}

/// One MCAP file being written.
pub struct McapOut {
    writer: mcap::Writer<BufWriter<File>>,
    path: PathBuf,
    topics: HashMap<u16, String>,
}

/// The ULog export's walk carries a failed MCAP write as its sink's error.
impl From<McapError> for crate::ulog::export::ExportError {
    fn from(e: McapError) -> Self {
        crate::ulog::export::ExportError::Sink(Box::new(e))
    }
}

impl McapOut {
    /// Creates (or replaces) `path`.
    pub fn create(path: &Path) -> Result<McapOut, McapError> {
        let file = File::create(path).map_err(|source| McapError::Create {
            path: path.to_path_buf(),
            source,
        })?;
        let options = mcap::WriteOptions::new()
            .compression(Some(mcap::Compression::Zstd))
            .profile("")
            .library(format!("foxborne-receiver {}", env!("CARGO_PKG_VERSION")));
        let writer = options
            .create(BufWriter::with_capacity(1 << 20, file))
            .map_err(|source| McapError::Write {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(McapOut {
            writer,
            path: path.to_path_buf(),
            topics: HashMap::new(),
        })
    }

    fn failed(&self, source: mcap::McapError) -> McapError {
        McapError::Write {
            path: self.path.clone(),
            source,
        }
    }

    /// The id of JSON Schema `schema` named `name` (the same name and content give the same
    /// id: the writer keeps one record of each).
    pub fn schema(&mut self, name: &str, schema: &Value) -> Result<u16, McapError> {
        let text = serde_json::to_vec(schema).expect("a JSON value serialises");
        self.writer
            .add_schema(name, "jsonschema", &text)
            .map_err(|e| self.failed(e))
    }

    /// A new channel of JSON messages on `topic` with schema `schema_id`.
    pub fn channel(
        &mut self,
        topic: &str,
        schema_id: u16,
        metadata: &BTreeMap<String, String>,
    ) -> Result<u16, McapError> {
        let id = self
            .writer
            .add_channel(schema_id, topic, "json", metadata)
            .map_err(|e| self.failed(e))?;
        self.topics.insert(id, topic.to_string());
        Ok(id)
    }

    /// One message. `log_time`: UTC nanoseconds (a time before 1970 is written as 0).
    pub fn write(
        &mut self,
        channel: u16,
        sequence: u32,
        log_time: i64,
        data: &[u8],
    ) -> Result<(), McapError> {
        let time = u64::try_from(log_time).unwrap_or(0);
        let header = mcap::records::MessageHeader {
            channel_id: channel,
            sequence,
            log_time: time,
            publish_time: time,
        };
        self.writer
            .write_to_known_channel(&header, data)
            .map_err(|e| self.failed(e))
    }

    /// A metadata record.
    pub fn metadata(
        &mut self,
        name: &str,
        metadata: BTreeMap<String, String>,
    ) -> Result<(), McapError> {
        let record = mcap::records::Metadata {
            name: name.to_string(),
            metadata,
        };
        self.writer
            .write_metadata(&record)
            .map_err(|e| self.failed(e))
    }

    /// Writes the summary section and closes the file.
    pub fn finish(mut self) -> Result<Written, McapError> {
        let summary = self.writer.finish().map_err(|e| self.failed(e))?;
        let mut written = Written {
            channels: summary.channels.len(),
            chunks: summary.chunk_indexes.len(),
            ..Written::default()
        };
        if let Some(stats) = &summary.stats {
            written.messages = stats.message_count;
            for (channel, n) in &stats.channel_message_counts {
                if let Some(topic) = self.topics.get(channel) {
                    written.per_topic.insert(topic.clone(), *n);
                }
            }
        }
        Ok(written)
    }
}

/// A JSON object's values as metadata strings (a string as it is, anything else as JSON).
pub fn metadata_of(object: &Value) -> BTreeMap<String, String> {
    object
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| {
            let text = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (k.clone(), text)
        })
        .collect()
}
