//! mClock packet scheduling: reservations, weights and limits for the flows sharing one
//! link (Gulati, Merchant, Varman, "mClock: Handling Throughput Variability for
//! Hypervisor IO Scheduling", OSDI 2010), with the paper's IO requests replaced by
//! packets whose cost is their size in bits.
//!
//! A network service thread keeps one queue of pending packets per flow (an audio
//! stream, an abusive bulk stream, …) and sends one packet at a time onto a link paced at
//! its rate. It tells the scheduler about each packet that joins a flow's queue
//! ([`MClock::enqueue`]) and, whenever the link is free, asks which flow's head packet
//! goes next ([`MClock::dequeue`]). The scheduler keeps only each packet's size and
//! arrival time, in the same order as the caller's queues; the caller sends the head of
//! the flow it is told. Time is always passed in (u64 ns of one clock that does not go
//! backwards: `CLOCK_MONOTONIC` in use, a virtual clock in tests), so the schedule is a
//! pure function of the calls: the same calls give the same schedule.
//!
//! Real-time contract: [`MClock::new`] allocates every queue (flows × `queue_capacity`
//! slots) and belongs before the stream starts. [`MClock::enqueue`],
//! [`MClock::dequeue`], [`MClock::next_eligible_ns`], [`MClock::queued`] and
//! [`MClock::reset`] allocate, lock, print and panic on nothing, whatever their
//! arguments (a flow index out of range is refused like a full queue); each is O(number
//! of flows). Debug-build tests run them under `assert_no_alloc`. One thread owns the
//! scheduler.
//!
//! # What each flow gets
//!
//! - **reservation** `r` (bit/s, 0: none): while the flow is backlogged it is served at
//!   least `r`, whatever the other flows do, provided the reservations fit in the link
//!   ([`MClock::feasible`]).
//! - **limit** `l` (bit/s, [`f64::INFINITY`]: none): in any window of length `T` the flow
//!   is served at most `l·T` plus two of the largest packets seen (see the limit tag
//!   below), even when the link is otherwise idle.
//! - **weight** `w` (> 0, only ratios matter): the link is divided by weight, subject to
//!   the two bounds. The weight counts all of a flow's service, so the allocation is the
//!   paper's: flow `i` gets `clamp(x·wᵢ, rᵢ, lᵢ)` with `x` chosen so that the shares fill
//!   the link. A flow whose weighted share is below its reservation gets its reservation
//!   and no more; the others share the rest by weight.
//!
//! # Tags
//!
//! Every packet gets three tags; `c` is its size in bits:
//!
//! - reservation `R = max(R_prev + c/r, arrival)` (ns), `∞` without a reservation;
//! - limit `L = max(L_prev + c/l, arrival, head − (M − c)/l)` (ns), where `head` is when
//!   the packet reached the head of its flow's queue and `M` the largest packet enqueued
//!   so far on any flow;
//! - proportion `P = max(P_prev + c·W/w, V)`, where `W` is the sum of all flows'
//!   weights and `V` the weight phase's virtual time (below).
//!
//! `dequeue(now)` then follows the paper. **Constraint-based phase**: among the head
//! packets with `R ≤ now` (and `L ≤ now`, below), the smallest `R` is served
//! ([`Phase::Reservation`]). Otherwise the **weight-based phase**: among the head
//! packets with `L ≤ now`, the smallest `P` is served ([`Phase::Weight`]), and that
//! flow's pending `R` tags are moved back by `c/r`, so that service given by weight is
//! not also counted against the reservation (the paper's adjustment; without it a flow
//! that had the link to itself for a while would find its `R` tags far in the future
//! when the others return, and miss its reservation). If no head is within its limit,
//! `dequeue` returns `None` and [`MClock::next_eligible_ns`] says when one will be.
//! Ties go to the lowest flow index.
//!
//! The paper's rules, and where this differs:
//!
//! - **Idle flows earn no credit.** The `max(…, arrival)` terms: a packet arriving at an
//!   empty queue starts its tags at its arrival time, however long the flow was silent.
//! - **Tags are computed when a packet reaches the head of its queue** (Ceph dmclock's
//!   "delayed tag calculation"), from the flow's previous packet's tags and this packet's
//!   arrival time. The values are the paper's; the weight phase's adjustment of the
//!   pending `R` tags then touches one number (`R_prev`) instead of the whole queue,
//!   and a tag that the `max` set to the packet's arrival time is not moved before it.
//! - **The limit tag has a floor** `head − (M − c)/l`. The paper's `L` may lag far
//!   behind real time for a backlogged flow that others kept waiting (say, behind
//!   their reservations); when they stop, it would catch up at the full link rate,
//!   breaking the limit. The floor keeps the lag to one largest packet's worth of the
//!   limit: a flow that waited behind the packet on the link loses none of its rate
//!   (without that allowance, a flow of small packets sharing the link with large ones
//!   falls well short of its limit), and no more can build up, hence the bound above.
//!   A packet arriving at an empty queue has `head = arrival`: the floor changes
//!   nothing for it.
//! - **The constraint-based phase also requires `L ≤ now`.** The paper leaves the limit
//!   out of it, since `r ≤ l`; but `R` tags come from arrival times, so a flow whose
//!   reserved packets went out late catches up, and with both phases serving it the
//!   catching up could pass the limit. A flow held back by its limit has just been
//!   served at its limit, at least its reservation, so the reservation is still met.
//! - **`P` tags are in virtual bits, not seconds.** `P` advances by `c·W/w`: the bits
//!   the whole link would carry while this flow received `c` bits at exactly its
//!   weighted share (the weights normalised by their sum). Only the order of `P` tags
//!   matters, so no link rate is needed. The paper compares a new `P` tag with the
//!   arrival time `t`, after shifting the active flows' `P` tags so that the smallest
//!   equals `t` (its synchronisation when a flow becomes active, so that it neither
//!   starves nor monopolises). Here the comparison is with `V`, the largest value that
//!   the smallest `P` tag among the flows competing in the weight phase (head with
//!   `L ≤ now`) has had; it is updated at every `dequeue` and when a flow becomes
//!   active. Shifting tags by a common amount changes no decision, so this is the
//!   paper's rule without the shift, with three differences. The paper shifts only the
//!   active flows; here all tags stay in one frame, so a flow that was ahead when it
//!   went quiet (served beyond its weighted share by its reservation) is still ahead
//!   when it returns. `V` leaves out flows held back by their limit, whose `P` lags
//!   and would hand a newcomer credit against everyone else, and it also floors a
//!   limited flow's own next tag, so that such a lag never builds up. And when nothing
//!   at all is queued, `V` is raised to the largest `P` tag any flow has left: a new
//!   busy period starts level, as the paper's real-time `P` tags do once the link has
//!   been idle long enough.
//!
//! # Time and precision
//!
//! `R` and `L` tags are `f64` nanoseconds since the first time the scheduler was given
//! (its epoch), not absolute `CLOCK_MONOTONIC` values, which can exceed the 2⁵³ ns that
//! an `f64` holds exactly after 104 days of uptime. Relative to the epoch, the rounding
//! step stays below 0.02 ns for a day of running and below 1 ns for 52 days. Times
//! before the epoch count as the epoch. `P` tags grow about as fast as the bits the
//! link carries (a flow served at exactly its weighted share advances its tags by the
//! link's bits), so on a 1 Gbit/s link their rounding step stays below one bit, far
//! below any packet's increment, for some 50 days.
//!
//! ```
//! use netaudio::mclock::{FlowSpec, MClock, Phase};
//! let audio = FlowSpec { reservation_bps: 2e6, weight: 1.0, limit_bps: f64::INFINITY };
//! let bulk = FlowSpec { reservation_bps: 0.0, weight: 100.0, limit_bps: 80e6 };
//! MClock::feasible(&[audio, bulk], 100e6).unwrap();
//! let mut scheduler = MClock::new(&[audio, bulk], 64).unwrap();
//! assert!(scheduler.enqueue(1, 12_000, 0));
//! assert!(scheduler.enqueue(0, 1_000, 0));
//! let first = scheduler.dequeue(0).unwrap();
//! assert_eq!((first.flow, first.phase), (0, Phase::Reservation));
//! ```

/// One flow's share of the link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowSpec {
    /// Guaranteed rate while the flow is backlogged, bit/s; 0 for none.
    pub reservation_bps: f64,
    /// Relative share of what the reservations leave; greater than 0.
    pub weight: f64,
    /// Most the flow may be served, bit/s; [`f64::INFINITY`] for no limit. At least the
    /// reservation.
    pub limit_bps: f64,
}

/// Which rule chose a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Its reservation tag was due: service owed to the flow's reservation.
    Reservation,
    /// No reservation was due; it had the smallest proportion tag among the flows
    /// within their limits.
    Weight,
}

/// The packet [`MClock::dequeue`] chose: the head of `flow`'s queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Served {
    /// The flow whose head packet to send.
    pub flow: usize,
    /// Its size, as given to [`MClock::enqueue`].
    pub bits: u32,
    /// Which rule chose it.
    pub phase: Phase,
}

#[derive(Clone, Copy, Debug)]
struct Tags {
    reservation: f64,
    limit: f64,
    proportion: f64,
}

impl Tags {
    const NONE: Tags = Tags {
        reservation: f64::NEG_INFINITY,
        limit: f64::NEG_INFINITY,
        proportion: f64::NEG_INFINITY,
    };
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    bits: u32,
    /// ns since the epoch.
    arrival: f64,
}

#[derive(Clone, Debug)]
struct Flow {
    /// 1e9 / reservation; 0 without a reservation.
    reservation_ns_per_bit: f64,
    /// 1e9 / limit; 0 without a limit.
    limit_ns_per_bit: f64,
    /// W / w: virtual bits per bit served.
    proportion_per_bit: f64,
    /// Index of the head packet within the flow's ring.
    first: usize,
    len: usize,
    /// The head packet's tags, valid while `len > 0`.
    head: Tags,
    /// The tags of the flow's last packet to leave, after the weight phase's adjustment.
    last: Tags,
}

/// An mClock scheduler over a fixed set of flows, each with a bounded queue. See the
/// module documentation for the rules.
#[derive(Clone, Debug)]
pub struct MClock {
    flows: Vec<Flow>,
    /// Every flow's ring, `queue_capacity` slots each, flow after flow.
    slots: Vec<Slot>,
    queue_capacity: usize,
    queued_total: usize,
    /// The clock value that tags count from; set by the first call that passes a time.
    epoch_ns: Option<u64>,
    /// `V`: no proportion tag starts below it.
    virtual_time: f64,
    /// `M`: the largest packet enqueued so far, bits.
    largest_bits: u32,
}

impl MClock {
    /// Builds the scheduler, with room for `queue_capacity` packets in each flow's
    /// queue. Allocates; call it before the stream starts.
    ///
    /// Refuses (naming the flow and what to change): no flows, a zero capacity, a
    /// reservation that is negative or not finite, a weight that is not finite and
    /// positive, a limit that is not positive (use [`f64::INFINITY`] for none), a limit
    /// below the reservation, and rates or weights so extreme that their tags would not
    /// be finite. It does not check that the reservations fit in the link: see
    /// [`MClock::feasible`].
    pub fn new(flows: &[FlowSpec], queue_capacity: usize) -> Result<MClock, String> {
        let weight_sum = validate(flows)?;
        if queue_capacity == 0 {
            return Err("queue capacity 0: each flow's queue must hold at least one packet".into());
        }
        let slot_count = flows.len().checked_mul(queue_capacity).ok_or_else(|| {
            format!(
                "{} flows × {queue_capacity} packets overflows memory; give a smaller queue capacity",
                flows.len()
            )
        })?;
        let flows = flows
            .iter()
            .map(|spec| Flow {
                reservation_ns_per_bit: if spec.reservation_bps > 0.0 {
                    1e9 / spec.reservation_bps
                } else {
                    0.0
                },
                limit_ns_per_bit: if spec.limit_bps.is_finite() {
                    1e9 / spec.limit_bps
                } else {
                    0.0
                },
                proportion_per_bit: weight_sum / spec.weight,
                first: 0,
                len: 0,
                head: Tags::NONE,
                last: Tags::NONE,
            })
            .collect();
        Ok(MClock {
            flows,
            slots: vec![
                Slot {
                    bits: 0,
                    arrival: 0.0,
                };
                slot_count
            ],
            queue_capacity,
            queued_total: 0,
            epoch_ns: None,
            virtual_time: 0.0,
            largest_bits: 0,
        })
    }

    /// Admission control: `Ok` if the flows are valid (as for [`MClock::new`]) and their
    /// reservations together fit in `capacity_bps` (exactly full counts as fitting);
    /// otherwise what is wrong, with the arithmetic, e.g. "reservations 240 + 900 = 1140
    /// Mbit/s exceed the link's 1000 Mbit/s by 140 Mbit/s". Reservations beyond the
    /// link cannot all be met: the scheduler then serves reservations by deadline and
    /// every reserving flow falls behind.
    pub fn feasible(flows: &[FlowSpec], capacity_bps: f64) -> Result<(), String> {
        validate(flows)?;
        if !(capacity_bps.is_finite() && capacity_bps > 0.0) {
            return Err(format!(
                "link capacity {capacity_bps} bit/s: give the link's rate, a finite number of bit/s greater than 0"
            ));
        }
        let reserved: Vec<(usize, f64)> = flows
            .iter()
            .enumerate()
            .filter(|(_, f)| f.reservation_bps > 0.0)
            .map(|(i, f)| (i, f.reservation_bps))
            .collect();
        let total: f64 = reserved.iter().map(|(_, r)| r).sum();
        if total <= capacity_bps * (1.0 + 1e-12) {
            return Ok(());
        }
        let (divisor, unit) = rate_unit(capacity_bps);
        let show = |bps: f64| format!("{}", (bps / divisor * 1000.0).round() / 1000.0);
        let over = format!(
            "the link's {} {unit} by {} {unit}",
            show(capacity_bps),
            show(total - capacity_bps)
        );
        Err(match reserved.as_slice() {
            [(flow, r)] => format!(
                "flow {flow}'s reservation {} {unit} exceeds {over}; lower it",
                show(*r)
            ),
            _ => {
                let terms: Vec<String> = reserved.iter().map(|(_, r)| show(*r)).collect();
                format!(
                    "reservations {} = {} {unit} exceed {over}; lower them so that they fit",
                    terms.join(" + "),
                    show(total)
                )
            }
        })
    }

    /// A packet of `bits` joined the tail of `flow`'s queue at `now_ns`. Returns `false`,
    /// and remembers nothing, if that queue is full or there is no such flow: the caller
    /// drops (and counts) the packet. Real-time safe.
    pub fn enqueue(&mut self, flow: usize, bits: u32, now_ns: u64) -> bool {
        let capacity = self.queue_capacity;
        let Some(state) = self.flows.get(flow) else {
            return false;
        };
        if state.len == capacity {
            return false;
        }
        let now = self.since_epoch(now_ns);
        self.largest_bits = self.largest_bits.max(bits);
        if self.queued_total == 0 {
            // A new busy period: nobody is ahead or behind.
            for f in &self.flows {
                self.virtual_time = self.virtual_time.max(f.last.proportion);
            }
        }
        let becomes_active = self.flows[flow].len == 0;
        if becomes_active {
            // Its proportion tag will start level with the flows competing by weight
            // (the paper's synchronisation).
            self.raise_virtual_time(now);
        }
        let state = &mut self.flows[flow];
        let index = flow * capacity + (state.first + state.len) % capacity;
        self.slots[index] = Slot { bits, arrival: now };
        state.len += 1;
        self.queued_total += 1;
        if becomes_active {
            self.tag_head(flow, now);
        }
        true
    }

    /// The link is free at `now_ns`: which flow's head packet to send, or `None` if no
    /// flow has a packet or every backlogged flow is at its limit (then see
    /// [`MClock::next_eligible_ns`]). The caller sends that flow's head packet; the
    /// scheduler has already forgotten it. Real-time safe.
    ///
    /// At an instant when packets arrive and the link is free, enqueue them first,
    /// then dequeue (as the tests' link simulator does).
    pub fn dequeue(&mut self, now_ns: u64) -> Option<Served> {
        if self.queued_total == 0 {
            return None;
        }
        let now = self.since_epoch(now_ns);
        let mut due: Option<(usize, f64)> = None;
        let mut competing: Option<(usize, f64)> = None;
        for (i, f) in self.flows.iter().enumerate() {
            if f.len == 0 {
                continue;
            }
            if f.head.limit > now {
                continue;
            }
            if f.head.reservation <= now && due.is_none_or(|(_, r)| f.head.reservation < r) {
                due = Some((i, f.head.reservation));
            }
            if competing.is_none_or(|(_, p)| f.head.proportion < p) {
                competing = Some((i, f.head.proportion));
            }
        }
        if let Some((_, p)) = competing {
            self.virtual_time = self.virtual_time.max(p);
        }
        let (flow, phase) = match (due, competing) {
            (Some((i, _)), _) => (i, Phase::Reservation),
            (None, Some((i, _))) => (i, Phase::Weight),
            (None, None) => return None,
        };
        let capacity = self.queue_capacity;
        let state = &mut self.flows[flow];
        let bits = self.slots[flow * capacity + state.first].bits;
        state.first = (state.first + 1) % capacity;
        state.len -= 1;
        self.queued_total -= 1;
        state.last = state.head;
        if phase == Phase::Weight {
            // Served by weight, not owed to the reservation: the pending R tags move back.
            state.last.reservation -= f64::from(bits) * state.reservation_ns_per_bit;
        }
        if state.len > 0 {
            self.tag_head(flow, now);
        }
        Some(Served { flow, bits, phase })
    }

    /// The earliest time (same clock as the calls) at which some flow's head packet is
    /// within its limit, and so eligible (by weight if not by reservation); `None` if
    /// nothing is queued. After `dequeue(now)` returned `None` with packets queued, this
    /// is later than `now`: the caller may sleep until then, or until a packet arrives.
    /// Real-time safe.
    pub fn next_eligible_ns(&self) -> Option<u64> {
        let earliest = self
            .flows
            .iter()
            .filter(|f| f.len > 0)
            .map(|f| f.head.limit)
            .min_by(f64::total_cmp)?;
        // Rounded up: at that ns the tag is due. `as` saturates.
        let since_epoch = earliest.max(0.0).ceil() as u64;
        Some(self.epoch_ns.unwrap_or(0).saturating_add(since_epoch))
    }

    /// Packets in `flow`'s queue (0 for a flow that does not exist). Real-time safe.
    pub fn queued(&self, flow: usize) -> usize {
        self.flows.get(flow).map_or(0, |f| f.len)
    }

    /// Forgets every queued packet and every tag, as if just built (the next time given
    /// becomes the epoch). Real-time safe: it frees and allocates nothing.
    pub fn reset(&mut self) {
        for f in &mut self.flows {
            f.first = 0;
            f.len = 0;
            f.head = Tags::NONE;
            f.last = Tags::NONE;
        }
        self.queued_total = 0;
        self.epoch_ns = None;
        self.virtual_time = 0.0;
        self.largest_bits = 0;
    }

    fn since_epoch(&mut self, now_ns: u64) -> f64 {
        let epoch = *self.epoch_ns.get_or_insert(now_ns);
        now_ns.saturating_sub(epoch) as f64
    }

    /// `V` up to the smallest proportion tag among the heads within their limits.
    fn raise_virtual_time(&mut self, now: f64) {
        let smallest = self
            .flows
            .iter()
            .filter(|f| f.len > 0 && f.head.limit <= now)
            .map(|f| f.head.proportion)
            .min_by(f64::total_cmp);
        if let Some(p) = smallest {
            self.virtual_time = self.virtual_time.max(p);
        }
    }

    /// Tags the packet that has just reached the head of `flow`'s queue at `now`.
    fn tag_head(&mut self, flow: usize, now: f64) {
        let state = &mut self.flows[flow];
        let slot = self.slots[flow * self.queue_capacity + state.first];
        let bits = f64::from(slot.bits);
        let last = state.last;
        let reservation = if state.reservation_ns_per_bit > 0.0 {
            (last.reservation + bits * state.reservation_ns_per_bit).max(slot.arrival)
        } else {
            f64::INFINITY
        };
        let lag_allowed = (f64::from(self.largest_bits) - bits).max(0.0) * state.limit_ns_per_bit;
        let limit = (last.limit + bits * state.limit_ns_per_bit)
            .max(slot.arrival)
            .max(now - lag_allowed);
        let proportion = (last.proportion + bits * state.proportion_per_bit).max(self.virtual_time);
        state.head = Tags {
            reservation,
            limit,
            proportion,
        };
    }
}

/// Checks every flow; returns the sum of the weights.
fn validate(flows: &[FlowSpec]) -> Result<f64, String> {
    if flows.is_empty() {
        return Err("no flows: the scheduler needs at least one".into());
    }
    for (i, f) in flows.iter().enumerate() {
        let r = f.reservation_bps;
        if !(r.is_finite() && r >= 0.0) {
            return Err(format!(
                "flow {i}: reservation {r} bit/s is not a rate; give 0 for none or a finite number of bit/s"
            ));
        }
        if r > 0.0 && !(1e9 / r).is_finite() {
            return Err(format!(
                "flow {i}: reservation {r} bit/s is too small to schedule; give 0 for none"
            ));
        }
        if !(f.weight.is_finite() && f.weight > 0.0) {
            return Err(format!(
                "flow {i}: weight {} must be finite and greater than 0 (only the ratios between flows matter)",
                f.weight
            ));
        }
        let l = f.limit_bps;
        if !(l > 0.0 && (1e9 / l).is_finite()) {
            return Err(format!(
                "flow {i}: limit {l} bit/s would never let it send; give f64::INFINITY for no limit"
            ));
        }
        if l < r {
            return Err(format!(
                "flow {i}: limit {l} bit/s is below its reservation {r} bit/s; raise the limit or lower the reservation"
            ));
        }
    }
    let weight_sum: f64 = flows.iter().map(|f| f.weight).sum();
    if !weight_sum.is_finite() {
        return Err("the weights add up to more than an f64 holds; scale them all down (only ratios matter)".into());
    }
    for (i, f) in flows.iter().enumerate() {
        if !(weight_sum / f.weight).is_finite() {
            return Err(format!(
                "flow {i}: weight {} is too small beside the others' sum {weight_sum}; scale the weights closer together",
                f.weight
            ));
        }
    }
    Ok(weight_sum)
}

/// Divisor and unit to print rates on a link of `capacity_bps`.
fn rate_unit(capacity_bps: f64) -> (f64, &'static str) {
    if capacity_bps >= 1e6 {
        (1e6, "Mbit/s")
    } else if capacity_bps >= 1e3 {
        (1e3, "kbit/s")
    } else {
        (1.0, "bit/s")
    }
}

#[cfg(test)]
mod tests;

/// The hot path, run under `assert_no_alloc`: every allocation or deallocation inside
/// the guard is counted, and the test asserts the count is zero. Only in debug builds,
/// where the guard is armed.
#[cfg(all(test, debug_assertions))]
mod no_alloc;
