//! Virtual time. Wall and monotonic clocks start at the case clock and move
//! only when the guest makes a host call (a fixed tick), when a call models
//! latency, or when the guest sleeps (time jumps to the deadline). No real
//! clock is ever read.

pub(crate) struct VirtualClock {
    start_wall_ns: i128,
    /// How far the agent's wall clock is off from the world's (a fuzz
    /// fault); tools and their `$now` keep the world's time.
    pub skew_ns: i128,
    mono_ns: u64,
    tick_ns: u64,
    /// All the latency calls have moved the clock by (see [`Self::wait`]).
    waited_ns: u64,
    /// Time was asked to move past the clock's end (`u64::MAX` ns, ~584
    /// years after the start), where it stood still.
    ran_out: bool,
}

impl VirtualClock {
    pub(crate) fn new(start_wall_ns: i128, tick_ns: u64) -> Self {
        VirtualClock {
            start_wall_ns,
            skew_ns: 0,
            mono_ns: 0,
            tick_ns,
            waited_ns: 0,
            ran_out: false,
        }
    }

    /// Nanoseconds since the run started.
    pub(crate) fn mono_ns(&self) -> u64 {
        self.mono_ns
    }

    /// Nanoseconds since the Unix epoch.
    pub(crate) fn wall_ns(&self) -> i128 {
        self.start_wall_ns + self.mono_ns as i128
    }

    /// The wall clock as the agent reads it (`wall-clock.now`).
    pub(crate) fn guest_wall_ns(&self) -> i128 {
        self.wall_ns() + self.skew_ns
    }

    /// One host call's worth of time.
    pub(crate) fn tick(&mut self) {
        self.advance(self.tick_ns);
    }

    pub(crate) fn advance(&mut self, ns: u64) {
        let (mono_ns, past_the_end) = self.mono_ns.overflowing_add(ns);
        self.ran_out |= past_the_end;
        self.mono_ns = if past_the_end { u64::MAX } else { mono_ns };
    }

    /// Whether time was asked to move past the clock's end, where it
    /// stopped: the latest wall time it holds, [`Self::end_ns`].
    pub(crate) fn ran_out(&self) -> bool {
        self.ran_out
    }

    /// The wall time at the clock's end.
    pub(crate) fn end_ns(&self) -> i128 {
        self.start_wall_ns + i128::from(u64::MAX)
    }

    /// A call's modelled latency, counted in [`Self::waited_ns`].
    pub(crate) fn wait(&mut self, ns: u64) {
        let before = self.mono_ns;
        self.advance(ns);
        self.waited_ns = self.waited_ns.wrapping_add(self.mono_ns - before);
    }

    /// The latency calls have moved the clock by so far.
    pub(crate) fn waited_ns(&self) -> u64 {
        self.waited_ns
    }

    /// Take back `ns` of latency the clock has waited: the run goes on
    /// from before it (an HTTP answer ready then, decision 0425).
    pub(crate) fn take_back(&mut self, ns: u64) {
        self.mono_ns -= ns;
    }

    /// Jump to a monotonic deadline (never backwards).
    pub(crate) fn advance_to(&mut self, mono_deadline: u64) {
        self.mono_ns = self.mono_ns.max(mono_deadline);
    }
}

/// A case's milliseconds (a latency) as nanoseconds. A case checked
/// today holds at most ten years (decision 0412); one recorded before may
/// hold more (past ~584 years the product overflows) and replays as it
/// ran, so the product wraps as the release builds that recorded it
/// computed it, in every build: a debug build panicked instead.
pub(crate) fn ns_of_ms(ms: u64) -> u64 {
    ms.wrapping_mul(1_000_000)
}
