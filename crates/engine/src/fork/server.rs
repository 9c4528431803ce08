//! A fork server for `fork --samples K` (decision 0358): the recorded
//! prefix is followed once, up to the call of the fork point, where the
//! process `fork(2)`s K children. Each child adds its own model seed,
//! goes on live to the end, grades, and sends the lines it wrote after
//! the prefix (footer included) and its final state on a pipe, then
//! `_exit`s; it touches no store file. The parent reads each child's
//! continuation, checks its chain from the prefix's last hash and its
//! grade, and does every store write itself, in member order. A process
//! with threads other than the watchdog at the fork point is not copied:
//! the branches re-execute the prefix (decision 0355).

use crate::run::{self, RunOptions, RunOutcome};
use anyhow::{Context as _, Result};
use std::io::{Read as _, Write as _};
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::sync::{Arc, Mutex};
use worldline_case::world::state::State;
use worldline_log::log::bundle::{self, Edit, ForkPoint, Group};
use worldline_log::log::{Header, Held};
use worldline_runtime::mediate::{Mediator, Stop};
use worldline_runtime::sandbox::{Agent, Sandbox};
use worldline_store::store::StoreDir;

use crate::replay::RecordedRun;

/// Set to `1`, branches re-execute the prefix each (decision 0355)
/// instead of copying one process (docs/cli.md).
pub const REEXECUTE: &str = "WORLDLINE_BRANCH_REEXECUTE";

/// What the fork server did.
pub(super) enum Served {
    /// The branches, in member order, written to the store.
    Branched(Vec<RunOutcome>),
    /// Not copied (why: threads, a failed `fork`, no call at the fork
    /// point): the caller re-executes the prefix per branch.
    Refused(String),
}

/// The branch children forked so far: killed and reaped on drop unless
/// collected (an error, a panic), so none outlives the parent's call.
#[derive(Default)]
struct Children {
    /// Each child's pid and the read end of its pipe; `None` once reaped.
    live: Vec<Option<(libc::pid_t, OwnedFd)>>,
}

impl Children {
    /// In a child: close its siblings' pipes and forget them (they are
    /// the parent's to reap).
    fn disown(&mut self) {
        self.live.clear();
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        for (pid, _) in self.live.iter().flatten() {
            // SAFETY: our own child, not yet reaped: its pid is still ours.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        for (pid, _) in self.live.drain(..).flatten() {
            let _ = reap(pid);
        }
    }
}

/// Wait for child `pid` to end: its wait status.
fn reap(pid: libc::pid_t) -> std::io::Result<i32> {
    let mut status = 0;
    loop {
        // SAFETY: waits for our own child; `status` outlives the call.
        let got = unsafe { libc::waitpid(pid, &mut status, 0) };
        if got == pid {
            return Ok(status);
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// What the hook at the fork point made of this process.
enum Role {
    /// The guest has not reached the fork point.
    Before,
    /// The process was not copied (why).
    Refused(String),
    /// The parent: its children, the prefix's bytes and the events they
    /// hold (the clock reads held back to be folded are in each child's
    /// continuation).
    Parent {
        children: Children,
        prefix: Vec<u8>,
        events: Held,
    },
    /// A branch, sending on `pipe`; the buffer held `prefix` bytes when
    /// it was copied.
    Child { pipe: OwnedFd, prefix: usize },
}

/// The threads of this process (`/proc/self/task`) not on their way out:
/// a thread joined is still listed a moment after its join returns, but
/// the kernel has marked it exiting by then (it holds no lock of ours).
fn threads() -> std::io::Result<usize> {
    let mut live = 0;
    for task in std::fs::read_dir("/proc/self/task")? {
        let stat = match std::fs::read_to_string(task?.path().join("stat")) {
            Ok(stat) => stat,
            // Gone between the listing and the read.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        if !exiting(&stat) {
            live += 1;
        }
    }
    Ok(live)
}

/// Whether a task's `/proc/<pid>/task/<tid>/stat` line shows it ending:
/// a zombie or dead state, or the kernel's `PF_EXITING` flag (`proc(5)`:
/// the state is the first field after the name in parentheses, the flags
/// the seventh).
fn exiting(stat: &str) -> bool {
    const PF_EXITING: u64 = 0x4;
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let mut fields = after_name.split_whitespace();
    let state = fields.next().unwrap_or("");
    let flags = fields
        .nth(5)
        .and_then(|f| f.parse::<u64>().ok())
        .unwrap_or(0);
    matches!(state, "Z" | "X" | "x") || flags & PF_EXITING != 0
}

/// The members one copy of the process makes: `seeds[i]` is member
/// `first + i` of a group of `size`, whose id is `id` (none in the first
/// chunk: its first member's run id is the group's).
pub(super) struct Chunk<'a> {
    pub seeds: &'a [u64],
    pub first: u64,
    pub size: u64,
    pub id: Option<String>,
}

/// The branches of `rec` at `at` with `edits`, by `agent`, of `chunk`:
/// made by one process following the prefix and copied at the fork
/// point, or refused (see [`Served`]).
pub(super) fn serve(
    sandbox: &Sandbox,
    store: &StoreDir,
    rec: &RecordedRun,
    at: u64,
    edits: &[Edit],
    agent: &Agent,
    chunk: &Chunk<'_>,
) -> Result<Served> {
    let case = &rec.case;
    let buffer = Arc::new(Mutex::new(Vec::new()));
    let mut opts: RunOptions = super::options(
        store,
        rec,
        super::parent_of(rec, at, edits.to_vec(), false),
        None,
    );
    opts.detached = Some(buffer.clone());
    super::taken_by(&mut opts, rec, agent);
    let begun = run::begin(
        sandbox,
        run::header_for(sandbox, agent, case),
        case,
        &mut opts,
    )?;
    let role = Arc::new(Mutex::new(Role::Before));
    let mut med = begun.med;
    med.at_fork = Some((
        at,
        Box::new({
            let (role, buffer, seeds) = (role.clone(), buffer.clone(), chunk.seeds.to_vec());
            let engine = sandbox.engine.clone();
            move |med: &mut Mediator| {
                let made = branch_here(med, at, &seeds, &buffer, &engine);
                let to_go_on = matches!(made, Role::Child { .. });
                *role.lock().unwrap_or_else(|e| e.into_inner()) = made;
                if to_go_on {
                    Ok(())
                } else {
                    Err(Stop::Branched)
                }
            }
        }),
    ));
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run::execute(sandbox, agent, case, med, |e| e)
    }));
    let role = std::mem::replace(
        &mut *role.lock().unwrap_or_else(|e| e.into_inner()),
        Role::Before,
    );
    match role {
        Role::Child { pipe, prefix } => {
            let sent = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let guest = match ran {
                    Ok(guest) => guest?,
                    Err(panic) => anyhow::bail!("panicked: {}", panic_text(&panic)),
                };
                let outcome = guest.finish(case, begun.opened, &opts)?;
                let written = buffer.lock().unwrap_or_else(|e| e.into_inner());
                let mut lines = written[prefix..].to_vec();
                lines.extend_from_slice(bundle::footer_line(&outcome.footer).as_bytes());
                Ok(message(&lines, &outcome.final_state))
            }));
            let bytes = match sent {
                Ok(Ok(bytes)) => bytes,
                Ok(Err(e)) => error_message(&format!("{e:#}")),
                Err(panic) => error_message(&format!("panicked: {}", panic_text(&panic))),
            };
            let _ = std::fs::File::from(pipe).write_all(&bytes);
            // SAFETY: ends this copied process at once: no destructor, no
            // flush of buffers that are the parent's.
            unsafe { libc::_exit(0) }
        }
        Role::Refused(why) => Ok(Served::Refused(why)),
        Role::Before => {
            let guest = match ran {
                Ok(guest) => guest?,
                Err(panic) => std::panic::resume_unwind(panic),
            };
            let outcome = guest.finish(case, begun.opened, &opts)?;
            super::departed(&outcome, at)?;
            // Forked at the end of a run whose agent makes no call after
            // it: nothing to copy, each branch is the run again.
            Ok(Served::Refused(format!(
                "the agent ended ({}) without calling event {at}",
                outcome.footer.status.as_str()
            )))
        }
        Role::Parent {
            children,
            prefix,
            events,
        } => {
            drop(ran);
            let outcomes = collect(
                store,
                rec,
                at,
                edits,
                chunk,
                &begun.opened,
                children,
                &prefix,
                events,
            )?;
            Ok(Served::Branched(outcomes))
        }
    }
}

/// At the fork point's call: copy this process once per seed. Returns
/// the role this process has then (the parent's, a child's, or refused).
fn branch_here(
    med: &mut Mediator,
    at: u64,
    seeds: &[u64],
    buffer: &Mutex<Vec<u8>>,
    engine: &wasmtime::Engine,
) -> Role {
    match threads() {
        Ok(n) if n <= 2 => {}
        Ok(n) => {
            return Role::Refused(format!(
                "{n} threads there; only the main thread and the watchdog are copied safely"
            ));
        }
        Err(e) => return Role::Refused(format!("cannot count threads (/proc/self/task): {e}")),
    }
    // stdout's buffer would be copied into every child; Rust's standard
    // error is unbuffered, so there is nothing of it to flush.
    let _ = std::io::stdout().flush();
    let prefix = buffer.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let events = med.written().0;
    let mut children = Children::default();
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    for seed in seeds {
        let mut fds = [0; 2];
        // SAFETY: `fds` is two ints for pipe2 to fill.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Role::Refused(format!(
                "cannot make a pipe: {}",
                std::io::Error::last_os_error()
            ));
        }
        // SAFETY: both ends are new descriptors, owned from here on.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: the process has the main thread and the watchdog only
        // (counted above), which holds no lock while it sleeps; the child
        // runs on this thread alone and starts a watchdog of its own.
        match unsafe { libc::fork() } {
            -1 => {
                // The children forked so far are killed by the drop.
                return Role::Refused(format!("fork failed: {}", std::io::Error::last_os_error()));
            }
            0 => {
                // SAFETY: asks for SIGKILL when the parent ends, so a
                // branch never outlives a parent that was killed; if it
                // already has, end now.
                unsafe {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    if libc::getppid() != parent {
                        libc::_exit(1);
                    }
                }
                drop(read);
                children.disown();
                quiet();
                if let Some(following) = med.following.as_mut() {
                    following.fork_points.push(ForkPoint {
                        event: at,
                        edits: vec![Edit::Reseed { model_seed: *seed }],
                        counted: true,
                    });
                }
                if let Err(e) = worldline_runtime::sandbox::start_watchdog(engine) {
                    let _ = std::fs::File::from(write).write_all(&error_message(&format!("{e:#}")));
                    // SAFETY: ends the copied process at once.
                    unsafe { libc::_exit(0) }
                }
                return Role::Child {
                    pipe: write,
                    prefix: prefix.len(),
                };
            }
            pid => {
                drop(write);
                children.live.push(Some((pid, read)));
            }
        }
    }
    Role::Parent {
        children,
        prefix,
        events,
    }
}

/// In a child: stdout and stderr to /dev/null (it writes nothing to the
/// parent's; what it has to say goes on its pipe).
fn quiet() {
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        // SAFETY: duplicates an open descriptor onto 1 and 2.
        unsafe {
            libc::dup2(null.as_raw_fd(), 1);
            libc::dup2(null.as_raw_fd(), 2);
        }
    }
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// A child's result: `R`, the length of its lines, its lines, then its
/// final state as JSON.
fn message(lines: &[u8], state: &State) -> Vec<u8> {
    let mut out = vec![b'R'];
    out.extend_from_slice(&(lines.len() as u64).to_le_bytes());
    out.extend_from_slice(lines);
    out.extend_from_slice(&serde_json::to_vec(state).expect("states serialize"));
    out
}

/// A child's error: `E` then its text.
fn error_message(text: &str) -> Vec<u8> {
    let mut out = vec![b'E'];
    out.extend_from_slice(text.as_bytes());
    out
}

/// A branch's continuation, read and checked (its final state against
/// its footer's hash, its grade against the footer's): its lines, every
/// event, its footer and grade.
struct Checked {
    lines: Vec<u8>,
    events: Held,
    footer: bundle::Footer,
    grade: Option<crate::grade::Grade>,
}

/// Read every child's result in member order and check it, then write
/// each to the store as its member (header, the prefix's lines, the
/// child's): a branch that failed leaves no member of its chunk written.
/// Each outcome is returned without its events and final state (they are
/// in the store): K branches hold K footers, not K runs.
#[allow(clippy::too_many_arguments)]
fn collect(
    store: &StoreDir,
    rec: &RecordedRun,
    at: u64,
    edits: &[Edit],
    chunk: &Chunk<'_>,
    opened: &run::Opened,
    mut children: Children,
    prefix: &[u8],
    events: Held,
) -> Result<Vec<RunOutcome>> {
    let mut checked = Vec::new();
    for i in 0..children.live.len() {
        let branch = format!("branch {} of {}", chunk.first + i as u64, chunk.size);
        let (pid, read) = children.live[i]
            .take()
            .expect("each child is collected once");
        let bytes = receive(pid, read).with_context(|| branch.clone())?;
        let (lines, state) =
            read_message(&bytes).with_context(|| format!("{branch}: its result"))?;
        let name = std::path::PathBuf::from(format!("({branch})"));
        let (all, footer) = bundle::continued(events.clone(), lines, &name)?;
        let footer = footer.with_context(|| format!("{branch}: its result has no footer"))?;
        if state.hash() != footer.final_state_hash {
            anyhow::bail!("{branch}: its final state is not the one its footer hashes");
        }
        let grade = run::regrade(&rec.case, opened, &footer, &all, &state);
        let graded = grade
            .as_ref()
            .map(|g| serde_json::to_value(g).expect("grades serialize"));
        if graded != footer.grade {
            anyhow::bail!("{branch}: its recorded grade is not the grade of its events");
        }
        checked.push(Checked {
            lines: lines.to_vec(),
            events: all,
            footer,
            grade,
        });
    }
    let mut outcomes: Vec<RunOutcome> = Vec::new();
    for (i, c) in checked.into_iter().enumerate() {
        let mut member = edits.to_vec();
        member.push(Edit::Reseed {
            model_seed: chunk.seeds[i],
        });
        let mut header: Header = opened.header.clone();
        header.parent = Some(super::parent_of(rec, at, member, false));
        header.group = Some(Group {
            id: chunk
                .id
                .clone()
                .or_else(|| outcomes.first().and_then(|o: &RunOutcome| o.run_id.clone())),
            member: chunk.first + i as u64,
            size: chunk.size,
        });
        store.hold_run(&header)?;
        let line = bundle::header_line(&header);
        let (id, path, mut file) =
            store.create_bundle(&header.agent_sha256, line.as_bytes(), None)?;
        // The child's footer held the header it ran under; the member's
        // names its parent and group, so its footer is sealed again.
        let mut footer = c.footer;
        if !footer.hash.is_empty() {
            bundle::seal(&mut footer, &header);
        }
        let body = c.lines[..c.lines.len() - 1]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(&c.lines[..0], |end| &c.lines[..=end]);
        let written = (|| {
            file.write_all(prefix)?;
            file.write_all(body)?;
            file.write_all(bundle::footer_line(&footer).as_bytes())?;
            if store.syncs_bundles() {
                worldline_case::parallel::waiting(|| file.sync_all())?;
            }
            std::io::Result::Ok(())
        })();
        written.map_err(|e| store.write_error(&path, e))?;
        run::publish(store, &id, &header, &c.events, &footer)?;
        outcomes.push(RunOutcome {
            run_id: Some(id),
            divergence: None,
            reached_end: false,
            grade: c.grade,
            bundle: Some(path),
            header,
            footer,
            events: Held::default(),
            final_state: State::default(),
        });
    }
    Ok(outcomes)
}

/// A child's whole message (read to a bundle's bound), once it has ended
/// and been reaped: an error when it sent one, or ended otherwise than
/// by exiting 0.
fn receive(pid: libc::pid_t, read: OwnedFd) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    let bound = worldline_case::bounded::BUNDLE;
    let got = std::fs::File::from(read)
        .take(bound + 1)
        .read_to_end(&mut bytes);
    let status = reap(pid).context("waiting for its process")?;
    got.context("reading its result")?;
    if bytes.len() as u64 > bound {
        anyhow::bail!("its result is over {bound} bytes");
    }
    if let Some(text) = bytes.strip_prefix(b"E") {
        anyhow::bail!("{}", String::from_utf8_lossy(text));
    }
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        anyhow::bail!(
            "its process {} before sending its result",
            if libc::WIFSIGNALED(status) {
                format!("was killed by signal {}", libc::WTERMSIG(status))
            } else {
                format!("exited with code {}", libc::WEXITSTATUS(status))
            }
        );
    }
    Ok(bytes)
}

/// A child's result message: its lines and its final state.
fn read_message(bytes: &[u8]) -> Result<(&[u8], State)> {
    let rest = bytes
        .strip_prefix(b"R")
        .context("it sent nothing (or not a result)")?;
    let (len, rest) = rest.split_at_checked(8).context("cut short")?;
    let len = u64::from_le_bytes(len.try_into().expect("eight bytes")) as usize;
    let (lines, state) = rest.split_at_checked(len).context("cut short")?;
    let state: State = serde_json::from_slice(state).context("its final state")?;
    Ok((lines, state))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use worldline_case::ahead;

    /// A thread that still runs its exit (here a thread-local's drop
    /// that takes a while) after the work it did ahead was taken.
    struct Lingers;

    impl Drop for Lingers {
        fn drop(&mut self) {
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    thread_local! {
        static LINGERS: Lingers = const { Lingers };
    }

    fn tid() -> libc::pid_t {
        // SAFETY: gettid has no preconditions.
        unsafe { libc::gettid() }
    }

    /// Once the work done ahead on another thread is taken, that thread
    /// is gone or counted as exiting: the fork server, which copies no
    /// process with other threads alive, copies one that made its
    /// sandbox ahead (the CI failure of 2026-12-01, where such a thread
    /// was still running its exit on a loaded machine).
    #[test]
    fn a_thread_whose_work_was_taken_is_not_counted() {
        let here = tid();
        // The work is done by whichever thread begins it first: tried
        // until the other thread did it.
        let there = (0..50)
            .map(|_| {
                std::thread::scope(|s| {
                    let ahead = ahead::spawn(s, || {
                        LINGERS.with(|_| ());
                        tid()
                    });
                    std::thread::sleep(Duration::from_millis(20));
                    ahead.take()
                })
            })
            .find(|&t| t != here)
            .expect("the other thread did the work once in 50 tries");
        match std::fs::read_to_string(format!("/proc/self/task/{there}/stat")) {
            Ok(stat) => assert!(exiting(&stat), "still running: {stat}"),
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::NotFound),
        }
    }

    /// The state and flags of real stat lines, one with a name holding
    /// a parenthesis and spaces.
    #[test]
    fn a_stat_line_shows_an_exiting_task() {
        let running = "7966 (worldline) R 7857 4908 1759 0 -1 4194368 276 0 0 0";
        let sleeping = "7967 (a (b) c) S 7857 4908 1759 0 -1 4194368 6 0 0 0";
        let flagged = "7968 (worldline) R 7857 4908 1759 0 -1 4194372 276 0 0 0";
        let zombie = "7969 (worldline) Z 7857 4908 1759 0 -1 4194368 276 0 0 0";
        assert!(!exiting(running) && !exiting(sleeping));
        assert!(exiting(flagged) && exiting(zombie));
    }
}
