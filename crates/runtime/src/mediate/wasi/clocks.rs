//! `wasi:clocks`: wall clock, monotonic clock and timezone.
//!
//! - virtual: both clocks read the run's virtual clock (the case's start
//!   time); sleeping (a pollable's deadline) jumps virtual time to it;
//! - recorded: every read and every subscription;
//! - denied: nothing; the timezone is UTC.

use super::super::bindings::{Pollable, wasi};
use super::super::{RunState, ServiceReply};
use super::u64_of;
use serde_json::json;
use wasmtime::component::Resource;

impl wasi::clocks::wall_clock::Host for RunState {
    fn now(&mut self) -> wasmtime::Result<wasi::clocks::wall_clock::Datetime> {
        let r = self.mediated("wasi:clocks/wall-clock.now", json!({}), |s| {
            let ns = s.clock.guest_wall_ns();
            ServiceReply::read(json!({"seconds": ns.div_euclid(1_000_000_000) as u64, "nanoseconds": ns.rem_euclid(1_000_000_000) as u32}))
        })?;
        Ok(wasi::clocks::wall_clock::Datetime {
            seconds: u64_of(&r["seconds"]),
            nanoseconds: u64_of(&r["nanoseconds"]) as u32,
        })
    }

    fn resolution(&mut self) -> wasmtime::Result<wasi::clocks::wall_clock::Datetime> {
        self.call_fixed(
            "wasi:clocks/wall-clock.resolution",
            json!({}),
            json!({"seconds": 0, "nanoseconds": 1}),
        )?;
        Ok(wasi::clocks::wall_clock::Datetime {
            seconds: 0,
            nanoseconds: 1,
        })
    }
}

impl wasi::clocks::monotonic_clock::Host for RunState {
    fn now(&mut self) -> wasmtime::Result<u64> {
        let r = self.mediated("wasi:clocks/monotonic-clock.now", json!({}), |s| {
            ServiceReply::read(json!(s.clock.mono_ns()))
        })?;
        Ok(u64_of(&r))
    }

    fn resolution(&mut self) -> wasmtime::Result<u64> {
        self.call_fixed(
            "wasi:clocks/monotonic-clock.resolution",
            json!({}),
            json!(1),
        )?;
        Ok(1)
    }

    fn subscribe_instant(&mut self, when: u64) -> wasmtime::Result<Resource<Pollable>> {
        self.call_fixed(
            "wasi:clocks/monotonic-clock.subscribe-instant",
            json!({"when": when}),
            json!({"deadline": when}),
        )?;
        Ok(self.table.push(Pollable { deadline: when })?)
    }

    fn subscribe_duration(&mut self, duration: u64) -> wasmtime::Result<Resource<Pollable>> {
        let r = self.mediated(
            "wasi:clocks/monotonic-clock.subscribe-duration",
            json!({"duration": duration}),
            |s| ServiceReply::read(json!({"deadline": s.clock.mono_ns().saturating_add(duration)})),
        )?;
        Ok(self.table.push(Pollable {
            deadline: u64_of(&r["deadline"]),
        })?)
    }
}

impl wasi::clocks::timezone::Host for RunState {
    fn display(
        &mut self,
        when: wasi::clocks::wall_clock::Datetime,
    ) -> wasmtime::Result<wasi::clocks::timezone::TimezoneDisplay> {
        let request = json!({"seconds": when.seconds, "nanoseconds": when.nanoseconds});
        self.call_fixed(
            "wasi:clocks/timezone.display",
            request,
            json!({"utc-offset": 0, "name": "UTC"}),
        )?;
        Ok(wasi::clocks::timezone::TimezoneDisplay {
            utc_offset: 0,
            name: "UTC".into(),
            in_daylight_saving_time: false,
        })
    }

    fn utc_offset(&mut self, when: wasi::clocks::wall_clock::Datetime) -> wasmtime::Result<i32> {
        let request = json!({"seconds": when.seconds, "nanoseconds": when.nanoseconds});
        self.call_fixed("wasi:clocks/timezone.utc-offset", request, json!(0))?;
        Ok(0)
    }
}
