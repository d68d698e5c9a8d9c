//! Address-space events of real recordings, checked where the recorder hands them to the
//! trace writer (the batches `stream::receive` decodes); `tests/record.rs` checks that they
//! reach the file and a replay.
//!
//! They need valgrind and a C compiler. `scripts/test` installs them and sets
//! `XLAT_REQUIRE_RECORD=1`, which turns their absence into a failure; otherwise the tests
//! print a note and return.

use super::stream::{self, Decoded, Received};
use super::*;
use std::collections::HashSet;
use std::process::Stdio;
use xlat::{AccessKind, AddressSpaceEvent, MemRef, RangeOp};

const PAGE: u64 = 4096;
const MIB: u64 = 1 << 20;

/// True when valgrind and cc are installed. When they are not: a failure under
/// `XLAT_REQUIRE_RECORD=1`, else a printed note (the test then passes without checking).
fn can_record(test: &str) -> bool {
    let missing: Vec<&str> = ["valgrind", "cc"].into_iter().filter(|t| which::which(t).is_err()).collect();
    if missing.is_empty() {
        return true;
    }
    let what = missing.join(" ");
    assert!(std::env::var("XLAT_REQUIRE_RECORD").as_deref() != Ok("1"), "{test}: {what} missing; install with: apt-get install valgrind gcc");
    eprintln!("note: {test} skipped: {what} not installed (apt-get install valgrind gcc)");
    false
}

/// Records as `xlat trace record ARGS` does (options, `--`, the program and its arguments),
/// the tool built in `dir`, and returns what came through the pipe, every read's records
/// joined in one, and the program's output.
fn record(dir: &Path, args: &[&str]) -> (Received, Decoded, String) {
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: RecordArgs,
    }
    let args = <Cli as clap::Parser>::parse_from(["record"].iter().chain(args)).args;
    let program = find_program(&args.command).unwrap();
    let tool = tool::prepare_in(&dir.join("cache")).unwrap();
    let (read_end, write_end) = pipe_for_child().unwrap();
    let mut valgrind = valgrind_command(&args, &tool, &program, write_end.as_raw_fd());
    let (mut child, _) = spawn_without_aslr(valgrind.current_dir(dir).stdout(Stdio::piped())).unwrap();
    drop(write_end);
    let mut all = Decoded::default();
    let sink = &mut |part: &Decoded| {
        stream::tests::append(&mut all, part);
        Ok(())
    };
    let got = stream::receive(&mut File::from(read_end), sink, &AtomicU64::new(0)).unwrap();
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    assert!(child.wait().unwrap().success(), "{:?} failed", args.command);
    (got, all, out)
}

/// The references that touch a page no event has mapped (or that one has unmapped since),
/// applying the events in order.
fn unmapped_references(d: &Decoded) -> Vec<MemRef> {
    let mut mapped = HashSet::new();
    let mut outside = Vec::new();
    for (run, event) in d.batch.runs() {
        for r in run {
            if !(r.first_vpn().0..=r.last_vpn().0).all(|p| mapped.contains(&p)) {
                outside.push(*r);
            }
        }
        if let Some(e) = event {
            let pages = e.pages().start / PAGE..e.pages().end / PAGE;
            match e.op {
                RangeOp::Map => mapped.extend(pages),
                RangeOp::Unmap => mapped.retain(|p| !pages.contains(p)),
            }
        }
    }
    outside
}

/// Maps 1 MiB and touches it, unmaps it, grows and shrinks the heap with sbrk, shrinks a
/// mapping with mremap and moves it onto another, and attaches and detaches a System V
/// shared-memory segment (where the system allows one), touching each; then prints the
/// addresses involved.
const EVENTS: &str = r#"
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>

#define PAGE 4096
#define MIB (1 << 20)
#define ANON (MAP_PRIVATE | MAP_ANONYMOUS)

int main(void) {
    volatile char *m = mmap(NULL, MIB, PROT_READ | PROT_WRITE, ANON, -1, 0);
    for (long i = 0; i < MIB; i += PAGE) m[i] = 1;
    munmap((void *)m, MIB);
    char *old = sbrk(0);
    sbrk(64 * 1024);
    volatile char *top = sbrk(0);
    for (volatile char *p = old; p < top; p += PAGE) *p = 2;
    sbrk(-32 * 1024);
    char *shrunk = sbrk(0);
    char *r = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, ANON, -1, 0);
    mremap(r, 3 * PAGE, PAGE, 0);
    char *target = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, ANON, -1, 0);
    volatile char *moved = mremap(r, PAGE, 2 * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, target);
    moved[PAGE] = 3;
    int id = shmget(IPC_PRIVATE, 4 * PAGE, IPC_CREAT | 0600);
    volatile char *s = id >= 0 ? shmat(id, NULL, 0) : (void *)-1;
    if (s != (void *)-1) {
        s[0] = 4;
        shmdt((void *)s);
        shmctl(id, IPC_RMID, NULL);
    }
    printf("%lx %lx %lx %lx %lx %lx %lx\n", (unsigned long)m, (unsigned long)old, (unsigned long)top,
           (unsigned long)shrunk, (unsigned long)r, (unsigned long)target, (unsigned long)s);
    return moved != target;
}
"#;

/// Each call's event, with the right range, between the references before and after it:
/// the touches of a mapping lie between its map and its unmap. And every reference of the
/// recording falls in a mapped page, the mappings made before the first reference (program,
/// loader, stack) having been sent at its start.
#[test]
fn records_the_address_space_changes_among_the_references() {
    if !can_record("records_the_address_space_changes_among_the_references") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("events.c"), EVENTS).unwrap();
    let cc = Command::new("cc").args(["-O1", "-o", "events", "events.c"]).current_dir(dir.path()).status().unwrap();
    assert!(cc.success(), "compiling events.c");
    let program = dir.path().join("events");
    let (got, all, out) = record(dir.path(), &["--", program.to_str().unwrap()]);
    let addrs: Vec<u64> = out.split_whitespace().map(|a| u64::from_str_radix(a, 16).unwrap()).collect();
    let &[m, old, top, shrunk, r, target, s] = &addrs[..] else { panic!("the program printed {out:?}") };
    let up = |a: u64| a.next_multiple_of(PAGE);
    let (map, unmap) = (AddressSpaceEvent::map, AddressSpaceEvent::unmap);
    let mut want = vec![
        map(m, MIB),
        unmap(m, MIB),
        map(up(old), up(top) - up(old)),
        unmap(up(shrunk), up(top) - up(shrunk)),
        map(r, 3 * PAGE),
        unmap(r + PAGE, 2 * PAGE),
        map(target, 2 * PAGE),
        // Moved: unmapped and mapped anew.
        unmap(r, PAGE),
        map(target, 2 * PAGE),
    ];
    let shm = s != u64::MAX;
    if shm {
        want.extend([map(s, 4 * PAGE), unmap(s, 4 * PAGE)]);
    } else {
        eprintln!("note: no System V shared memory here; shmat and shmdt are not checked");
    }
    let events = &all.batch.events;
    let first = events.iter().position(|&(_, e)| e == map(m, MIB)).expect("the 1 MiB mapping's event");
    let ours: Vec<AddressSpaceEvent> = events[first..].iter().take(want.len()).map(|&(_, e)| e).collect();
    assert_eq!(ours, want);
    // Where each of our events sits among the references; the stores into a range before
    // the reference at `until` (after which the range may be reused: malloc grows the heap
    // again for printf's buffer).
    let at = |i: usize| events[first + i].0;
    let stores = |lo: u64, hi: u64, until: usize| -> Vec<usize> {
        let store = |r: &MemRef| r.kind == AccessKind::Store && (lo..hi).contains(&r.vaddr);
        all.batch.refs[..until].iter().enumerate().filter(|(_, r)| store(r)).map(|(i, _)| i).collect()
    };
    let touches = stores(m, m + MIB, at(1));
    assert_eq!(touches.len(), 256, "one store a page");
    assert!(touches.iter().all(|&i| i >= at(0)), "stores before the mapping");
    let heap = stores(old, top, at(3));
    assert_eq!(heap.len(), 16);
    assert!(heap.iter().all(|&i| i >= at(2)), "heap stores before the brk growth");
    let moved = stores(target + PAGE, target + 2 * PAGE, all.batch.len());
    assert!(!moved.is_empty() && moved.iter().all(|&i| i >= at(8)), "the moved mapping's store");
    if shm {
        let attached = stores(s, s + 4 * PAGE, at(10));
        assert!(attached.len() == 1 && attached[0] >= at(9), "the shared segment's store");
    }
    // The mappings that existed at the start come before the first reference.
    assert!(events.iter().take_while(|&&(i, _)| i == 0).count() >= 5, "{events:?}");
    assert_eq!(unmapped_references(&all), [], "references outside every mapping");
    assert_eq!(got.events.iter().sum::<u64>(), events.len() as u64);
}

/// A real program (`ls`): its mappings at the start, the loader's mmaps of the libraries
/// after, and every reference inside a mapping. With references skipped, the mappings made
/// meanwhile come at the start instead, and again every reference is inside one.
#[test]
fn a_real_program_has_its_mappings() {
    if !can_record("a_real_program_has_its_mappings") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (got, all, _) = record(dir.path(), &["--", "ls", "/"]);
    let events = &all.batch.events;
    let at_start = events.iter().take_while(|&&(i, _)| i == 0).count();
    let maps_later = events[at_start..].iter().filter(|(_, e)| e.op == RangeOp::Map).count();
    assert!(at_start >= 5 && maps_later >= 3, "{at_start} events at the start, {maps_later} maps later: {events:?}");
    assert_eq!(got.events.iter().sum::<u64>(), events.len() as u64);
    assert_eq!(unmapped_references(&all), []);
    let (_, skipped, _) = record(dir.path(), &["--skip", "30000", "--", "ls", "/"]);
    let events = &skipped.batch.events;
    assert!(events.iter().take_while(|&&(i, _)| i == 0).count() > at_start, "{events:?}");
    assert_eq!(unmapped_references(&skipped), []);
}
