//! Instances from a pool (decision 0390): a command that runs many short
//! runs one after another on a few threads (`test`, `fuzz`, `verify`)
//! takes each run's instances from wasmtime's pooling allocator, whose
//! slots keep their memory mappings from one run to the next (reset, not
//! unmapped and mapped again), and the first 4 MiB of each memory resident
//! (reset in place, not faulted in afresh). Of those, only the pages a run
//! wrote are reset, as the kernel lists them (`PAGEMAP_SCAN`, decision
//! 0404): wasmtime 48.0.11 counts a written page swapped out or being
//! migrated among them, which 48.0.8 skipped and the next run then read
//! (decision 0427). Sized from the number of runs at once; every other
//! command allocates on demand, as before.
//! `WORLDLINE_INSTANCE_POOL=0` turns the pool off.

use wasmtime::{Enabled, InstanceAllocationStrategy, PoolingAllocationConfig};

/// Component instances a run may hold at once: its agent and the world's
/// services.
const PER_RUN: u32 = 4;

/// Runs at once a pool is sized for; more than this allocate on demand
/// (a pool too small for them would fail their instances).
const MAX_RUNS: usize = 64;

/// The pool for `runs` runs at once, unless the environment turns it off
/// or they are more than [`MAX_RUNS`].
pub(crate) fn strategy(runs: usize) -> InstanceAllocationStrategy {
    if std::env::var_os("WORLDLINE_INSTANCE_POOL").is_some_and(|v| v == "0") || runs > MAX_RUNS {
        return InstanceAllocationStrategy::OnDemand;
    }
    let components = PER_RUN * runs.max(1) as u32 + PER_RUN;
    let mut pool = PoolingAllocationConfig::new();
    // Generous per component, since a Python or JavaScript agent links
    // many core modules: a component the pool cannot hold would fail to
    // instantiate where it ran before. Reserved address space, not memory:
    // a slot's pages are touched only by what runs in it.
    pool.total_component_instances(components)
        .max_core_instances_per_component(128)
        .total_core_instances(components * 64)
        .max_memories_per_component(16)
        .total_memories(components * 4)
        .max_tables_per_component(64)
        .total_tables(components * 16)
        .table_elements(1 << 20)
        .max_memory_size(4 << 30)
        .max_core_instance_size(16 << 20)
        .max_component_instance_size(16 << 20)
        // What a slot keeps mapped between runs instead of giving back, of
        // which only the pages a run wrote are reset; a kernel without the
        // scan (before Linux 6.7) resets it whole.
        .linear_memory_keep_resident(4 << 20)
        .table_keep_resident(64 << 10)
        .pagemap_scan(Enabled::Auto);
    InstanceAllocationStrategy::Pooling(pool)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// More runs at once than a pool is sized for allocate on demand: a
    /// pool of 64 runs' slots would fail the 65th run's instances.
    #[test]
    fn more_runs_than_a_pool_holds_allocate_on_demand() {
        assert!(matches!(
            strategy(MAX_RUNS),
            InstanceAllocationStrategy::Pooling(_)
        ));
        assert!(matches!(
            strategy(MAX_RUNS + 1),
            InstanceAllocationStrategy::OnDemand
        ));
    }
}
