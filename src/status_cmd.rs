//! `status`: asks a running daemon (its local HTTP port) and prints a table a person reads at a
//! glance: per vehicle and per link.

use anyhow::{bail, Context};
use serde_json::Value;
use std::fmt::Write;

pub fn run(addr: &str, json: bool) -> anyhow::Result<()> {
    let (code, body) = crate::http::get_blocking(addr, "/status").with_context(|| {
        format!(
            "no daemon answering on {addr} (is it running? `http.listen` in its config says where)"
        )
    })?;
    if code != 200 {
        bail!("{addr}/status answered HTTP {code}");
    }
    let status: Value =
        serde_json::from_str(&body).with_context(|| format!("{addr}/status is not JSON"))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&status)?);
    } else {
        print!("{}", render(&status));
    }
    Ok(())
}

fn opt_f(v: &Value, fmt: impl Fn(f64) -> String) -> String {
    v.as_f64().map(fmt).unwrap_or_else(|| "-".to_string())
}

fn table(rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        let _ = writeln!(out, "  {}", cells.join("  ").trim_end());
    }
    out
}

pub fn render(s: &Value) -> String {
    let mut out = String::new();
    let clock = match &s["clock"] {
        Value::Null => "clock status unknown".to_string(),
        c if c["synchronised"] == true => format!(
            "clock synchronised (max error {} ms)",
            c["max_error_us"].as_i64().unwrap_or(0) / 1000
        ),
        _ => "CLOCK NOT SYNCHRONISED".to_string(),
    };
    let _ = writeln!(
        out,
        "foxborne-receiver {} at {}, up since {}, {clock}",
        s["version"].as_str().unwrap_or("?"),
        s["utc"].as_str().unwrap_or("?"),
        s["started_utc"].as_str().unwrap_or("?")
    );
    let _ = writeln!(out, "\nVehicles");
    let mut rows = vec![[
        "SYSID",
        "NAME",
        "LINKS",
        "LAST HEARD (UTC)",
        "HB AGE",
        "OPEN GAP",
        "LAT P95",
        "LOSS",
    ]
    .map(String::from)
    .to_vec()];
    for v in s["vehicles"].as_array().into_iter().flatten() {
        let gap = match &v["open_gap"] {
            Value::Null => "-".to_string(),
            g => format!(
                "OPEN since {}",
                g["last_recv_utc"]
                    .as_str()
                    .map(|t| &t[11..23])
                    .unwrap_or("start")
            ),
        };
        rows.push(vec![
            v["sysid"].to_string(),
            v["name"].as_str().unwrap_or("-").to_string(),
            v["links"]
                .as_array()
                .map(|l| {
                    l.iter()
                        .filter_map(|x| x.as_str())
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .unwrap_or_default(),
            v["last_heard_utc"]
                .as_str()
                .map(|t| t[11..23].to_string())
                .unwrap_or_else(|| "never".into()),
            opt_f(&v["heartbeat_age_s"], |a| format!("{a:.1} s")),
            gap,
            match (v["latency_p95_ms"].as_f64(), v["clock_offset_ms"].as_f64()) {
                (Some(l), _) => format!("{l:.0} ms"),
                (None, Some(o)) => format!("clock off {:.1} s", o / 1000.0),
                _ => "-".into(),
            },
            opt_f(&v["loss_percent"], |l| format!("{l:.1} %")),
        ]);
    }
    out.push_str(&table(&rows));
    let _ = writeln!(out, "\nLinks");
    let mut rows = vec![["LINK", "STATE", "RECEIPTS", "RATE", "REJECTS", "DETAIL"]
        .map(String::from)
        .to_vec()];
    for l in s["links"].as_array().into_iter().flatten() {
        let rejects: u64 = l["rejects"]
            .as_object()
            .map(|m| m.values().filter_map(|v| v.as_u64()).sum())
            .unwrap_or(0);
        rows.push(vec![
            l["name"].as_str().unwrap_or("?").to_string(),
            match l["up"].as_bool() {
                Some(true) => "up".into(),
                Some(false) => "DOWN".into(),
                None => "listening".into(),
            },
            l["receipts"].to_string(),
            opt_f(&l["rate_per_s"], |r| format!("{r:.0}/s")),
            rejects.to_string(),
            l["detail"].as_str().unwrap_or("").to_string(),
        ]);
    }
    out.push_str(&table(&rows));
    let r = &s["receive_log"];
    let _ = writeln!(
        out,
        "\nReceive log: {} lines written, {} pending bytes, {} dropped, {} write errors",
        r["lines_written"], r["pending_bytes"], r["dropped_lines"], r["write_errors"]
    );
    out
}
