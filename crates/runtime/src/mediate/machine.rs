//! A failure of the machine, not of a guest: an instance needs address
//! space and memory from the host (a linear memory's reservation, a pool's
//! slot), and a process under a low `ulimit -v`, or on a machine out of
//! memory, does not get them. Such an error says nothing of the agent or
//! the world and would not happen on another machine, so it ends the
//! command as an internal error and is recorded nowhere: it was recorded
//! as the agent's trap, or as a tool's failed answer, and graded.

/// Whether instantiating a component failed for the machine: the
/// operating system refused it memory or address space (an `errno`, as
/// wasmtime's `mmap` passes it up, or an I/O error), or wasmtime ran out
/// of memory. A guest's own failure while instantiating is a trap or a
/// limit of its case (`Stop`), never one of these.
pub fn host_failure(err: &wasmtime::Error) -> bool {
    err.is::<wasmtime::OutOfMemory>()
        || err
            .chain()
            .any(|c| c.is::<rustix::io::Errno>() || c.is::<std::io::Error>())
}
