//! What a run produced: measurements (with their histograms), triggers, events and
//! series, written as they come and read back.

use super::db::vals;
use super::error::StoreError;
use super::handle::Store;
use super::text::{json_text, parse_json};
use crate::hist::{LatencyHistogram, StoredHistogram, Summary};
use crate::id::RunId;
use crate::model::{Event, Measurement, MeasurementRecord, Series, TriggerRow};
use serde_json::Value;

impl Store {
    /// Stores a measurement.
    pub fn add_measurement(&self, run_id: RunId, m: &Measurement) -> Result<i64, StoreError> {
        let stored = m.histogram.as_ref().map(LatencyHistogram::to_stored);
        let exact = stored.as_ref().map(|s| {
            json_text(&serde_json::json!({
                "count": s.count, "min": s.min, "max": s.max,
                "sum": s.sum.to_string(), "sum_sq": s.sum_sq.to_string(),
            }))
        });
        let s = m.summary.as_ref();
        let stat = |f: fn(&Summary) -> f64| s.map(f);
        self.db.insert(
            "INSERT INTO measurement (run_id, probe, metric, unit, method, count, min, mean, stdev,
                p50, p90, p99, p999, p9999, max, clamped, overflows, deadline, misses, histogram,
                histogram_bound, histogram_exact, detail)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                ?18, ?19, ?20, ?21, ?22, ?23)",
            vals![
                run_id,
                &m.probe,
                &m.metric,
                &m.unit,
                &m.method,
                m.count() as i64,
                stat(|s| s.min),
                stat(|s| s.mean),
                stat(|s| s.stdev),
                stat(|s| s.p50),
                stat(|s| s.p90),
                stat(|s| s.p99),
                stat(|s| s.p999),
                stat(|s| s.p9999),
                stat(|s| s.max),
                s.is_some_and(|s| s.clamped_at.is_some()),
                m.overflows() as i64,
                m.deadline,
                m.misses.map(|v| v as i64),
                stored.as_ref().map(|s| s.v2.clone()),
                stored.as_ref().map(|s| s.bound as i64),
                exact,
                json_text(&m.detail),
            ],
        )
    }

    /// Stores measurements in place of any earlier ones of the same metrics in the run,
    /// in one transaction: how a run's checkpoints are kept up to date while it goes on
    /// (a reader, or a crash, sees one checkpoint whole, never a mix of two).
    pub fn replace_measurements(
        &self,
        run_id: RunId,
        ms: &[Measurement],
    ) -> Result<(), StoreError> {
        self.db.tx(|| {
            for m in ms {
                self.db.execute(
                    "DELETE FROM measurement WHERE run_id = ?1 AND metric = ?2",
                    vals![run_id, &m.metric],
                )?;
                self.add_measurement(run_id, m)?;
            }
            Ok(())
        })
    }

    /// Stores events in one transaction.
    pub fn add_events(&self, run_id: RunId, events: &[Event]) -> Result<(), StoreError> {
        self.db.tx(|| {
            for e in events {
                self.db.execute(
                    "INSERT INTO event (run_id, mono_ns, kind, detail) VALUES (?1, ?2, ?3, ?4)",
                    vals![run_id, e.mono_ns as i64, &e.kind, json_text(&e.detail)],
                )?;
            }
            Ok(())
        })
    }

    /// Stores trigger rows in one transaction.
    pub fn add_triggers(&self, run_id: RunId, rows: &[TriggerRow]) -> Result<(), StoreError> {
        self.db.tx(|| {
            for t in rows {
                self.db.execute(
                "INSERT INTO trigger (run_id, seq, source, trigger_ns, note_frame, offset_frames,
                    cycle, dac_ns, latency_ns, wait_ns, lateness_ns, buffer_ns, late, missed,
                    measured_ns, underruns_before, timing)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                    ?17)",
                vals![
                    run_id,
                    t.seq as i64,
                    &t.source,
                    t.trigger_ns as i64,
                    t.note_frame as i64,
                    t.offset_frames,
                    t.cycle as i64,
                    t.dac_ns.map(|d| d as i64),
                    t.latency_ns,
                    t.wait_ns,
                    t.lateness_ns,
                    t.buffer_ns,
                    t.late,
                    t.missed,
                    t.measured_ns,
                    t.underruns_before as i64,
                    &t.timing,
                ])?;
            }
            Ok(())
        })
    }

    /// A run's trigger rows, in trigger order.
    ///
    /// A file from before schema 5 (read as it is) has no `timing` column: its rows read
    /// as `unchecked`.
    pub fn triggers(&self, run_id: RunId) -> Result<Vec<TriggerRow>, StoreError> {
        let timing = if self.schema_version()? >= 5 {
            "timing"
        } else {
            "'unchecked'"
        };
        let rows = self.db.query(
            &format!(
            "SELECT seq, source, trigger_ns, note_frame, offset_frames, cycle, dac_ns, latency_ns,
                wait_ns, lateness_ns, buffer_ns, late, missed, measured_ns, underruns_before,
                {timing}
             FROM trigger WHERE run_id = ?1 ORDER BY seq"
        ),
            vals![run_id],
        )?;
        rows.iter()
            .map(|r| {
                Ok(TriggerRow {
                    seq: r.get::<i64>(0)? as u64,
                    source: r.get(1)?,
                    trigger_ns: r.get::<i64>(2)? as u64,
                    note_frame: r.get::<i64>(3)? as u64,
                    offset_frames: r.get(4)?,
                    cycle: r.get::<i64>(5)? as u64,
                    dac_ns: r.get::<Option<i64>>(6)?.map(|d| d as u64),
                    latency_ns: r.get(7)?,
                    wait_ns: r.get(8)?,
                    lateness_ns: r.get(9)?,
                    buffer_ns: r.get(10)?,
                    late: r.get(11)?,
                    missed: r.get(12)?,
                    measured_ns: r.get(13)?,
                    underruns_before: r.get::<i64>(14)? as u64,
                    timing: r.get(15)?,
                })
            })
            .collect()
    }

    /// Stores a series.
    pub fn add_series(&self, run_id: RunId, series: &Series) -> Result<(), StoreError> {
        self.db.execute(
            "INSERT INTO series (run_id, name, unit, columns, rows) VALUES (?1, ?2, ?3, ?4, ?5)",
            vals![
                run_id,
                &series.name,
                &series.unit,
                json_text(&serde_json::to_value(&series.columns).expect("strings serialise")),
                json_text(&serde_json::to_value(&series.rows).expect("numbers serialise")),
            ],
        )?;
        Ok(())
    }

    /// A run's measurements, in the order stored.
    pub fn measurements(&self, run_id: RunId) -> Result<Vec<MeasurementRecord>, StoreError> {
        let rows = self.db.query(
            "SELECT id, run_id, probe, metric, unit, method, count, min, mean, stdev, p50, p90, p99,
                p999, p9999, max, clamped, deadline, misses, histogram, histogram_bound,
                histogram_exact, detail, overflows
             FROM measurement WHERE run_id = ?1 ORDER BY id",
            vals![run_id],
        )?;
        let rows = rows.iter().map(|r| {
            let blob: Option<Vec<u8>> = r.get(19)?;
            let bound: Option<i64> = r.get(20)?;
            let exact: Option<String> = r.get(21)?;
            let clamped: bool = r.get(16)?;
            let count = r.get::<i64>(6)? as u64;
            // A row without samples has NULL statistics: no summary.
            let summary = match (count, r.get::<Option<f64>>(7)?) {
                (1.., Some(min)) => Some(Summary {
                    count,
                    min,
                    mean: r.get(8)?,
                    stdev: r.get(9)?,
                    p50: r.get(10)?,
                    p90: r.get(11)?,
                    p99: r.get(12)?,
                    p999: r.get(13)?,
                    p9999: r.get(14)?,
                    max: r.get(15)?,
                    clamped_at: bound.filter(|_| clamped).map(|b| b as f64),
                }),
                _ => None,
            };
            let overflows: i64 = r.get(23)?;
            Ok::<_, StoreError>((
                r.get::<i64>(0)?,
                r.get::<RunId>(1)?,
                Measurement {
                    probe: r.get(2)?,
                    metric: r.get(3)?,
                    unit: r.get(4)?,
                    method: r.get(5)?,
                    summary,
                    histogram: None,
                    deadline: r.get(17)?,
                    misses: r.get::<Option<i64>>(18)?.map(|v| v as u64),
                    detail: parse_json(&r.get::<String>(22)?),
                },
                blob.zip(bound)
                    .map(|(b, bound)| (b, bound, exact, overflows)),
            ))
        });
        let mut out = Vec::new();
        for row in rows {
            let (id, run_id, mut m, hist) = row?;
            if let Some((v2, bound, exact, overflows)) = hist {
                let exact = exact.map(|e| parse_json(&e)).unwrap_or(Value::Null);
                let num = |k: &str| exact[k].as_u64().unwrap_or(0);
                let big = |k: &str| {
                    exact[k]
                        .as_str()
                        .and_then(|s| s.parse::<u128>().ok())
                        .unwrap_or(0)
                };
                let stored = StoredHistogram {
                    v2,
                    bound: bound as u64,
                    overflows: overflows as u64,
                    count: num("count"),
                    min: num("min"),
                    max: num("max"),
                    sum: big("sum"),
                    sum_sq: big("sum_sq"),
                };
                m.histogram = Some(
                    LatencyHistogram::from_stored(&stored)
                        .map_err(|e| StoreError::Corrupt(format!("measurement {id}: {e}")))?,
                );
            }
            out.push(MeasurementRecord {
                id,
                run_id,
                measurement: m,
            });
        }
        Ok(out)
    }

    /// A run's events in time order; at most `limit` when given.
    pub fn events(&self, run_id: RunId, limit: Option<usize>) -> Result<Vec<Event>, StoreError> {
        self.read_events(run_id, None, limit)
    }

    /// A run's events of one kind in time order; at most `limit` when given (a kind
    /// that floods, such as overflows, cannot crowd out the others).
    pub fn events_of_kind(
        &self,
        run_id: RunId,
        kind: &str,
        limit: Option<usize>,
    ) -> Result<Vec<Event>, StoreError> {
        self.read_events(run_id, Some(kind), limit)
    }

    /// A run's events, of one kind when given, in time order, at most `limit`.
    fn read_events(
        &self,
        run_id: RunId,
        kind: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Vec<Event>, StoreError> {
        let sql = format!(
            "SELECT mono_ns, kind, detail FROM event WHERE run_id = ?1 {}ORDER BY mono_ns, id {}",
            if kind.is_some() { "AND kind = ?2 " } else { "" },
            limit.map_or(String::new(), |l| format!("LIMIT {l}"))
        );
        let rows = match kind {
            Some(k) => self.db.query(&sql, vals![run_id, k])?,
            None => self.db.query(&sql, vals![run_id])?,
        };
        rows.iter()
            .map(|r| {
                Ok(Event {
                    mono_ns: r.get::<i64>(0)? as u64,
                    kind: r.get(1)?,
                    detail: parse_json(&r.get::<String>(2)?),
                })
            })
            .collect()
    }

    /// Number of events of each kind in a run.
    pub fn event_counts(&self, run_id: RunId) -> Result<Vec<(String, u64)>, StoreError> {
        let rows = self.db.query(
            "SELECT kind, count(*) FROM event WHERE run_id = ?1 GROUP BY kind ORDER BY kind",
            vals![run_id],
        )?;
        rows.iter()
            .map(|r| Ok((r.get(0)?, r.get::<i64>(1)? as u64)))
            .collect()
    }

    /// A run's series.
    pub fn series(&self, run_id: RunId) -> Result<Vec<Series>, StoreError> {
        let rows = self.db.query(
            "SELECT name, unit, columns, rows FROM series WHERE run_id = ?1 ORDER BY id",
            vals![run_id],
        )?;
        let rows = rows.iter().map(|r| {
            Ok::<_, StoreError>((
                r.get::<String>(0)?,
                r.get::<String>(1)?,
                r.get::<String>(2)?,
                r.get::<String>(3)?,
            ))
        });
        let mut out = Vec::new();
        for row in rows {
            let (name, unit, columns, data) = row?;
            out.push(Series {
                name,
                unit,
                columns: serde_json::from_str(&columns)
                    .map_err(|e| StoreError::Corrupt(e.to_string()))?,
                rows: crate::model::nulls_to_nan(
                    serde_json::from_str(&data).map_err(|e| StoreError::Corrupt(e.to_string()))?,
                ),
            });
        }
        Ok(out)
    }
}
