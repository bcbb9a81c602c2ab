//! Headless Chromium for the browser tests: where it is, a screenshot of a page, and the PNG it
//! writes decoded to pixels (to check a page is not blank and has its colours).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Debian's `chromium` (or `$FOXBORNE_CHROMIUM`). A test that calls this is
/// `#[cfg_attr(foxborne_no_browser, ignore = ...)]`, so here a missing one is a failure.
pub fn chromium() -> PathBuf {
    std::env::var_os("FOXBORNE_CHROMIUM")
        .map(PathBuf::from)
        .into_iter()
        .chain(["/usr/bin/chromium", "/usr/bin/chromium-browser"].map(PathBuf::from))
        .find(|c| c.is_file())
        .expect("no chromium (apt-get install chromium, or set FOXBORNE_CHROMIUM)")
}

/// Decodes an 8-bit RGB or RGBA PNG (as Chromium writes screenshots) into RGB pixels.
pub fn decode_png(png: &[u8]) -> (usize, usize, Vec<[u8; 3]>) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let (mut width, mut height, mut channels) = (0usize, 0usize, 0usize);
    let mut idat = Vec::new();
    let mut at = 8;
    while at + 8 <= png.len() {
        let len = u32::from_be_bytes(png[at..at + 4].try_into().unwrap()) as usize;
        let kind = &png[at + 4..at + 8];
        let data = &png[at + 8..at + 8 + len];
        match kind {
            b"IHDR" => {
                width = u32::from_be_bytes(data[..4].try_into().unwrap()) as usize;
                height = u32::from_be_bytes(data[4..8].try_into().unwrap()) as usize;
                assert_eq!(data[8], 8, "bit depth");
                channels = match data[9] {
                    2 => 3,
                    6 => 4,
                    other => panic!("colour type {other}"),
                };
                assert_eq!(data[12], 0, "interlaced PNG");
            }
            b"IDAT" => idat.extend_from_slice(data),
            b"IEND" => break,
            _ => {}
        }
        at += 12 + len;
    }
    let raw = miniz_oxide::inflate::decompress_to_vec_zlib(&idat).expect("zlib data");
    let stride = width * channels;
    let mut prev = vec![0u8; stride];
    let mut pixels = Vec::with_capacity(width * height);
    for y in 0..height {
        let row = &raw[y * (stride + 1)..(y + 1) * (stride + 1)];
        let (filter, src) = (row[0], &row[1..]);
        let mut cur = vec![0u8; stride];
        for i in 0..stride {
            let a = if i >= channels { cur[i - channels] } else { 0 };
            let b = prev[i];
            let c = if i >= channels { prev[i - channels] } else { 0 };
            let predicted = match filter {
                0 => 0,
                1 => a,
                2 => b,
                3 => ((u16::from(a) + u16::from(b)) / 2) as u8,
                4 => {
                    let p = i16::from(a) + i16::from(b) - i16::from(c);
                    let (pa, pb, pc) = (
                        (p - i16::from(a)).abs(),
                        (p - i16::from(b)).abs(),
                        (p - i16::from(c)).abs(),
                    );
                    if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    }
                }
                other => panic!("PNG filter {other}"),
            };
            cur[i] = src[i].wrapping_add(predicted);
        }
        for px in cur.chunks(channels) {
            pixels.push([px[0], px[1], px[2]]);
        }
        prev = cur;
    }
    (width, height, pixels)
}

/// A screenshot of `html` at `size` (width, height) into `shot`, nothing fetched from anywhere.
pub fn screenshot(
    browser: &Path,
    html: &Path,
    shot: &Path,
    profile: &Path,
    size: (u32, u32),
) -> Output {
    Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("--window-size={},{}", size.0, size.1))
        .arg(format!("file://{}", html.display()))
        .output()
        .unwrap()
}
