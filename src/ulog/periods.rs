//! Bounded summary of one topic's sampling periods: a sparse log-scaled histogram (for the median
//! period) and the few largest gaps with where they start (for `topic_stall`). Its size does not
//! grow with the number of samples.

/// Sub-buckets per power of two: about 1.5 % resolution on the median.
const SUB_BITS: u32 = 6;
/// Largest gaps remembered per topic.
pub const KEPT_GAPS: usize = 16;

/// One gap between consecutive samples of a topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gap {
    pub micros: u64,
    /// Timestamp, message number and offset of the sample before the gap.
    pub from_timestamp: u64,
    pub from_message: u64,
    pub from_offset: u64,
    /// Timestamp of the sample after it.
    pub to_timestamp: u64,
}

#[derive(Debug, Default, Clone)]
pub struct PeriodSummary {
    /// The buckets that hold a gap, in bucket order: how many gaps, and their sum (the median
    /// reports its bucket's mean, exact when the gaps in it are all equal, as in a steady topic).
    /// Sparse because a topic's gaps fill a few buckets around its period and a few far out: a
    /// table of every bucket up to a 10 s gap would be about 1,200 of them (19 KB per topic
    /// instance, 1.5 MB of a 0.43 MB log of 101 instances), nearly all empty, and each one
    /// allocated and touched.
    buckets: Vec<Bucket>,
    /// Where in `buckets` the last gap went: a steady topic's next gap mostly goes there too.
    last: usize,
    total: u64,
    /// Shortest gap still among the largest (0 until the list is full): the common case is a
    /// single comparison with it.
    shortest_kept: u64,
    largest: Vec<Gap>,
}

/// One histogram bucket that holds at least one gap.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    number: u32,
    count: u64,
    sum: u64,
}

fn bucket_of(v: u64) -> usize {
    if v < (1 << SUB_BITS) {
        return v as usize;
    }
    let exp = 63 - v.leading_zeros();
    let mantissa = (v >> (exp - SUB_BITS)) & ((1 << SUB_BITS) - 1);
    (((exp - SUB_BITS + 1) << SUB_BITS) as u64 + mantissa) as usize
}

/// Middle of a bucket's range.
#[cfg(test)]
fn bucket_value(b: usize) -> u64 {
    let b = b as u64;
    if b < (1 << SUB_BITS) {
        return b;
    }
    let exp = (b >> SUB_BITS) + u64::from(SUB_BITS) - 1;
    let mantissa = b & ((1 << SUB_BITS) - 1);
    let low = (1u64 << exp) | (mantissa << (exp - u64::from(SUB_BITS)));
    low + (1u64 << (exp - u64::from(SUB_BITS))) / 2
}

impl PeriodSummary {
    /// Records a positive gap.
    #[inline]
    pub fn add(&mut self, gap: Gap) {
        // At most 3,776 buckets (`bucket_of(u64::MAX)`), so the number fits a u32.
        let number = bucket_of(gap.micros) as u32;
        let at = match self.buckets.get(self.last) {
            Some(b) if b.number == number => self.last,
            _ => match self.buckets.binary_search_by_key(&number, |b| b.number) {
                Ok(at) => at,
                Err(at) => {
                    let empty = Bucket {
                        number,
                        count: 0,
                        sum: 0,
                    };
                    self.buckets.insert(at, empty);
                    at
                }
            },
        };
        self.last = at;
        let bucket = &mut self.buckets[at];
        bucket.count += 1;
        bucket.sum = bucket.sum.saturating_add(gap.micros);
        self.total += 1;
        if gap.micros <= self.shortest_kept {
            return;
        }
        // Keep the largest gaps, longest first.
        if self.largest.len() == KEPT_GAPS {
            self.largest.pop();
        }
        let at = self.largest.partition_point(|g| g.micros >= gap.micros);
        self.largest.insert(at, gap);
        if self.largest.len() == KEPT_GAPS {
            self.shortest_kept = self.largest[KEPT_GAPS - 1].micros;
        }
    }

    /// Number of gaps recorded.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// The lower median gap in microseconds (of an even number of gaps, the smaller middle
    /// one; reported as the mean of its bucket: within about 1.5 %), if any gap was recorded.
    pub fn median(&self) -> Option<u64> {
        if self.total == 0 {
            return None;
        }
        let target = self.total.div_ceil(2);
        let mut seen = 0;
        for bucket in &self.buckets {
            seen += bucket.count;
            if seen >= target {
                return Some(bucket.sum / bucket.count);
            }
        }
        None
    }

    /// The largest gaps, longest first.
    pub fn largest(&self) -> &[Gap] {
        &self.largest
    }

    /// Gaps at least `threshold` long, counted from the histogram (bucket precision).
    pub fn count_at_least(&self, threshold: u64) -> u64 {
        let from = bucket_of(threshold) as u32;
        let first = self.buckets.partition_point(|b| b.number < from);
        self.buckets[first..].iter().map(|b| b.count).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gap(micros: u64) -> Gap {
        Gap {
            micros,
            from_timestamp: 0,
            from_message: 0,
            from_offset: 0,
            to_timestamp: micros,
        }
    }

    #[test]
    fn median_is_close_and_largest_are_kept() {
        let mut p = PeriodSummary::default();
        for i in 0..1000u64 {
            p.add(gap(10_000 + (i % 7)));
        }
        p.add(gap(5_000_000));
        let m = p.median().unwrap();
        assert_eq!(m, 10_002, "bucket mean of 10,000..10,006");
        assert!((9_850..=10_150).contains(&m), "median {m}");
        assert_eq!(p.largest()[0].micros, 5_000_000);
        assert_eq!(p.count_at_least(50_000), 1);
        assert_eq!(bucket_value(bucket_of(5)), 5);
    }

    /// The sparse buckets answer as a table of every bucket would, whatever order the gaps
    /// come in: gaps of a steady topic, jitter, and stalls spread over many powers of two.
    #[test]
    fn sparse_buckets_answer_as_a_dense_table_would() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..50 {
            let mut sparse = PeriodSummary::default();
            let mut dense: Vec<(u64, u64)> = Vec::new();
            for _ in 0..2_000 {
                let r = next();
                let micros = match r % 10 {
                    0 => 1 + (r >> 8) % (1 << ((r >> 4) % 40)),
                    1 | 2 => 20_000 + (r >> 8) % 3_000,
                    _ => 10_000 + (r >> 8) % (50 * round + 1),
                };
                sparse.add(gap(micros));
                let b = bucket_of(micros);
                if dense.len() <= b {
                    dense.resize(b + 1, (0, 0));
                }
                dense[b].0 += 1;
                dense[b].1 += micros;
            }
            let total: u64 = dense.iter().map(|(n, _)| n).sum();
            let mut seen = 0;
            let median = dense.iter().find_map(|(n, sum)| {
                seen += n;
                (seen >= total.div_ceil(2)).then(|| sum / n)
            });
            assert_eq!(sparse.median(), median, "round {round}");
            let thresholds = [
                0,
                1,
                63,
                64,
                9_999,
                10_000,
                25_000,
                1 << 20,
                1 << 39,
                u64::MAX,
            ];
            for at_least in thresholds {
                let want: u64 = dense.iter().skip(bucket_of(at_least)).map(|(n, _)| n).sum();
                assert_eq!(
                    sparse.count_at_least(at_least),
                    want,
                    "round {round}, {at_least}"
                );
            }
        }
    }

    #[test]
    fn the_median_is_the_lower_median() {
        let mut p = PeriodSummary::default();
        for micros in [10, 20, 30, 40] {
            p.add(gap(micros));
        }
        assert_eq!(p.median(), Some(20), "the smaller of the two middle gaps");
        p.add(gap(50));
        assert_eq!(p.median(), Some(30));
    }
}
