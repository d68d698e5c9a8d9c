//! Every built-in workload at `tiny` scale, run as a reference source: its self-check passes,
//! and its footprint and reference counts match what `expected()` documents.

use std::collections::BTreeSet;
use xlat::source::RefSource;
use xlat::trace::info::info;
use xlat::workload::{BuiltinSpec, Scale, WORKLOADS};
use xlat::{AddressSpaceEvent, Batch, RangeOp};

fn spec(name: &str, params: &str) -> BuiltinSpec {
    let table: toml::Table = toml::from_str(params).unwrap();
    BuiltinSpec::new(name, Scale::Tiny, Some(&table), 7, 1, "workload").unwrap()
}

fn within(actual: u64, expected: u64, tolerance: f64) -> bool {
    (actual as f64 - expected as f64).abs() <= tolerance * expected as f64
}

/// Footprints are compared within the tolerance or one page, whichever is larger (a region's
/// partial last page may go untouched).
fn pages_within(actual: u64, expected: u64, tolerance: f64) -> bool {
    actual.abs_diff(expected) <= 1 || within(actual, expected, tolerance)
}

/// Reads `spec`'s stream applying its address-space events to the set of mapped pages:
/// returns the events and the references that touch a page not mapped then.
fn events_and_strays(spec: &BuiltinSpec) -> (Vec<AddressSpaceEvent>, Vec<xlat::MemRef>) {
    let (mut source, mut batch) = (spec.open().unwrap(), Batch::default());
    let (mut mapped, mut events, mut strays) = (BTreeSet::new(), Vec::new(), Vec::new());
    loop {
        batch.clear();
        let n = source.fill(&mut batch, 10_000).unwrap();
        for (run, event) in batch.runs() {
            strays.extend(run.iter().filter(|r| !(r.first_vpn().0..=r.last_vpn().0).all(|p| mapped.contains(&p))));
            if let Some(&e) = event {
                let pages = e.pages().start >> 12..e.pages().end >> 12;
                match e.op {
                    RangeOp::Map => mapped.extend(pages),
                    RangeOp::Unmap => mapped.retain(|p| !pages.contains(p)),
                }
                events.push(e);
            }
        }
        if n == 0 {
            return (events, strays);
        }
    }
}

/// Runs `spec` through its thread and checks it against its expectation.
fn check(spec: &BuiltinSpec) {
    let name = spec.name();
    let (events, strays) = events_and_strays(spec);
    if spec.events {
        // The process's mappings first (image, heap, libraries, stack), then its own (none
        // when everything fits in the heap's first 128 KiB).
        assert!(events.len() >= 4, "{name}: {} events", events.len());
        assert!(events.iter().all(|e| e.asid == spec.asid), "{name}: an event of another address space");
        assert!(strays.is_empty(), "{name}: {} references outside the mappings, the first {:?}", strays.len(), strays[0]);
    } else {
        assert!(events.is_empty(), "{name}: events from a workload that does not map its memory");
    }
    let expected = spec.expected();
    let mut source = spec.open().unwrap();
    let summary = info(&mut source).unwrap();
    let report = source.report().expect("a finished run has a report");
    assert!(!report.checks.is_empty(), "{name}: no self-check reported");
    for (phase, want) in report.phases.iter().zip(&expected.phases) {
        assert_eq!(phase.name, want.name);
        let tolerance = if want.exact { 0.0 } else { expected.tolerance };
        assert!(within(phase.refs, want.refs, tolerance), "{name} {}: {} references, expected {} ± {:.0}%",
            phase.name, phase.refs, want.refs, 100.0 * tolerance);
        assert!(phase.instructions > 0, "{name} {}: no instructions", phase.name);
    }
    let emitted: u64 = report.phases.iter().filter(|p| p.emitted).map(|p| p.refs).sum();
    assert_eq!(summary.references, emitted, "{name}: the stream and the report disagree");
    assert_eq!(summary.address_spaces, 1);
    assert_eq!(summary.instructions, Some(report.phases.iter().filter(|p| p.emitted).map(|p| p.instructions).sum()));
    assert!(pages_within(summary.pages, expected.footprint_pages(), expected.tolerance),
        "{name}: {} pages touched, expected {} ± {:.0}%", summary.pages, expected.footprint_pages(), 100.0 * expected.tolerance);
}

/// The instructions of `spec`'s stream after skipping `skip` references and keeping at most
/// `limit`.
fn instructions_of(spec: &BuiltinSpec, skip: u64, limit: Option<u64>) -> u64 {
    let mut source = xlat::source::Limited::new(spec.open().unwrap(), skip, limit);
    info(&mut source).unwrap().instructions.unwrap_or(0)
}

#[test]
fn a_cut_stream_keeps_exactly_the_instructions_of_its_references() {
    // GUPS's init phase (16 Ki stores, 4 instructions each) is the first 16 Ki references.
    let gups = spec("gups", "");
    // The process's start-up comes first in a run from the program's start.
    let (init, startup) = (16_384, xlat::workload::startup::refs());
    assert_eq!(instructions_of(&gups, 0, Some(startup)), xlat::workload::startup::INSTRUCTIONS);
    assert_eq!(instructions_of(&gups, startup + init, None), instructions_of(&spec("gups", "init = false"), 0, None));
    assert_eq!(instructions_of(&gups, startup, Some(init)), 4 * init);
    // Whatever the cut, in a chunk or between chunks, the two sides add up to the whole.
    for workload in [gups, spec("gap", "kernel = \"bfs\""), spec("btree", "")] {
        let total = instructions_of(&workload, 0, None);
        for cut in [1, 4_097, 65_536, 65_537, 100_003] {
            let (before, after) = (instructions_of(&workload, 0, Some(cut)), instructions_of(&workload, cut, None));
            assert_eq!(before + after, total, "{} cut at {cut}", workload.name());
        }
    }
}

#[test]
fn gups_tiny() {
    check(&spec("gups", ""));
}

#[test]
fn gups_without_init_touches_what_the_updates_reach() {
    check(&spec("gups", "init = false\nupdates = 3000"));
}

#[test]
fn btree_tiny() {
    check(&spec("btree", ""));
}

#[test]
fn btree_lookups_alone_touch_the_nodes_on_their_paths() {
    check(&spec("btree", "keys = 40000\nlookups = 1500\nbuild = false"));
}

/// Other orders: the smallest (where every split leaves one or two keys), odd ones, and the
/// largest (a node per page), against the fringe model's expectations, built and not.
#[test]
fn btree_every_order_meets_its_model() {
    for order in [4, 5, 9, 33, 256] {
        check(&spec("btree", &format!("keys = 12000\nlookups = 6000\norder = {order}")));
    }
    check(&spec("btree", "keys = 40000\nlookups = 1500\nbuild = false\norder = 6"));
}

#[test]
fn xsbench_lookups_alone_touch_what_they_read() {
    for grid in ["unionized", "nuclide", "hash"] {
        check(&spec("xsbench", &format!("grid = \"{grid}\"\nsetup = false")));
    }
}

#[test]
fn xsbench_tiny_every_grid() {
    for grid in ["unionized", "nuclide", "hash"] {
        check(&spec("xsbench", &format!("grid = \"{grid}\"\nhash_bins = 100")));
    }
}

#[test]
fn graph500_searches_alone_read_all_but_whole_pages_of_dropped_duplicates() {
    check(&spec("graph500", "setup = false"));
    check(&spec("graph500", "setup = false\nscale = 14\nedgefactor = 32"));
}

#[test]
fn graph500_tiny() {
    check(&spec("graph500", ""));
}

/// Leaving the validation out of the stream leaves the rest of it as it was: the same set-up
/// and searches, the validation still performed (and counted), only not emitted.
#[test]
fn graph500_without_validation_emits_the_same_searches() {
    let run = |params| {
        let spec = spec("graph500", params);
        check(&spec);
        let mut source = spec.open().unwrap();
        let summary = info(&mut source).unwrap();
        (summary, source.report().unwrap().phases)
    };
    let (with, with_phases) = run("");
    let (without, without_phases) = run("validation = false");
    let names: Vec<_> = with_phases.iter().map(|p| p.name).collect();
    assert_eq!(names, ["startup", "setup", "bfs", "validation"]);
    assert_eq!(with_phases[..3], without_phases[..3]);
    let (validation, left_out) = (&with_phases[3], &without_phases[3]);
    assert!(validation.emitted && !left_out.emitted);
    assert_eq!((validation.refs, validation.instructions), (left_out.refs, left_out.instructions));
    assert_eq!(with.references - without.references, validation.refs);
    assert!(with.pages > without.pages, "the validation arrays are touched only when emitted");
    // The validation's estimate is finer than the workloads' 10%: within 1%, its per-vertex
    // terms (an eighth of it at this scale) count.
    let estimate = spec("graph500", "").expected().phases[3].refs;
    assert!(within(validation.refs, estimate, 0.01), "{} validation references, expected {estimate}", validation.refs);
}

/// The references of `spec`'s whole stream.
fn stream(spec: &BuiltinSpec) -> Vec<xlat::MemRef> {
    xlat::source::collect(&mut spec.open().unwrap()).unwrap().0
}

/// The same, reference by reference: with one search, the stream without the validation is
/// the stream with it cut where the validation starts; with two, the second search follows
/// the first validation unchanged (the first root and search do not depend on the count).
#[test]
fn graph500_without_validation_is_the_stream_with_it_less_the_validations() {
    let without_one = stream(&spec("graph500", "roots = 1\nvalidation = false"));
    let with_one = stream(&spec("graph500", "roots = 1"));
    assert!(with_one.len() > without_one.len());
    assert_eq!(with_one[..without_one.len()], without_one[..]);
    let first_validation = with_one.len() - without_one.len();
    let without_two = stream(&spec("graph500", "roots = 2\nvalidation = false"));
    let with_two = stream(&spec("graph500", "roots = 2"));
    let second_search = &without_two[without_one.len()..];
    assert!(!second_search.is_empty());
    assert_eq!(with_two[..with_one.len()], with_one[..]);
    assert_eq!(with_two[with_one.len()..with_one.len() + second_search.len()], second_search[..]);
    assert!(with_two.len() > with_one.len() + second_search.len() + first_validation / 2, "a second validation follows");
}

#[test]
fn graph500_linked_lists_tiny() {
    check(&spec("graph500", "adjacency = \"list\""));
}

#[test]
fn kronecker_graphs_of_other_initiators_match_their_expectations() {
    // Asymmetric (B ≠ C) and flatter initiators: the expected distinct edges and connected
    // vertices (which set the kernels' reference counts and, without set-up, the footprint)
    // must follow the initiator.
    for init in ["a = 0.45\nb = 0.3\nc = 0.1", "a = 0.3\nb = 0.25\nc = 0.25"] {
        check(&spec("graph500", init));
        check(&spec("graph500", &format!("{init}\nsetup = false")));
        check(&spec("gap", &format!("{init}\nkernel = \"bfs\"\nsetup = false\ntrials = 1")));
    }
}

#[test]
fn initiator_errors_name_the_parameter() {
    let table: toml::Table = toml::from_str("a = 0.6\nb = 0.3\nc = 0.2").unwrap();
    let e = BuiltinSpec::new("graph500", Scale::Tiny, Some(&table), 7, 1, "workload").unwrap_err().to_string();
    assert!(e.contains("workload.params.a") && e.contains("fourth quadrant"), "{e}");
    let table: toml::Table = toml::from_str("b = 0.0").unwrap();
    let e = BuiltinSpec::new("gap", Scale::Tiny, Some(&table), 7, 1, "workload").unwrap_err().to_string();
    assert!(e.contains("workload.params.b"), "{e}");
}

/// `sources` is bc's alone: a graph of two vertices is checked against it for bc only.
#[test]
fn gap_sources_are_checked_for_bc_only() {
    let gap = |params: &str| BuiltinSpec::new("gap", Scale::Tiny, Some(&toml::from_str(params).unwrap()), 7, 1, "workload").map(|_| ());
    assert!(gap("kernel = \"bfs\"\nscale = 1").is_ok());
    let e = gap("kernel = \"bc\"\nscale = 1\nsources = 3").unwrap_err().to_string();
    assert!(e.contains("workload.params.sources") && e.contains("need 1 to 2"), "{e}");
}

#[test]
fn gap_every_kernel_on_every_graph_tiny() {
    for kernel in ["bfs", "pr", "cc", "sssp", "bc", "tc"] {
        for graph in ["kron", "urand"] {
            check(&spec("gap", &format!("kernel = \"{kernel}\"\ngraph = \"{graph}\"")));
        }
    }
}

#[test]
fn gap_kernel_alone_touches_the_graph_and_its_arrays() {
    check(&spec("gap", "kernel = \"pr\"\nsetup = false\ntrials = 1"));
}

#[test]
fn memcached_tiny() {
    check(&spec("memcached", ""));
}

/// A small first table, so that it grows twice while loading; uniform keys; the requests
/// alone.
#[test]
fn memcached_growing_table_and_requests_alone() {
    check(&spec("memcached", "records = 14000\nvalue_bytes = 96\nhashpower = 12\nbulk_move = 4"));
    check(&spec("memcached", "distribution = \"uniform\"\nget_fraction = 0.5"));
    check(&spec("memcached", "load = false\nrecords = 8000"));
}

#[test]
fn redis_tiny() {
    check(&spec("redis", ""));
}

/// Values kept with their object (up to 44 bytes), Zipf keys, the requests alone.
#[test]
fn redis_embedded_values_zipf_keys_and_requests_alone() {
    check(&spec("redis", "value_bytes = 32\ndistribution = \"zipf\""));
    check(&spec("redis", "load = false\nrecords = 20000"));
}

/// GAP's builder and kernels and the key-value stores hand on what their allocations map
/// and unmap, beyond the process's first mappings: sssp's bins and the builder's arrays
/// (grown and freed), memcached's slab pages (mappings of their own), redis's records and
/// tables (its heap growing, and an old table's mapping freed after its rehash).
#[test]
fn gap_and_the_key_value_stores_map_and_unmap_where_they_allocate() {
    for (name, params, unmaps) in [("gap", "kernel = \"sssp\"", true), ("gap", "kernel = \"tc\"", true), ("memcached", "", false), ("redis", "load = false\nrecords = 20000", true)] {
        let (events, strays) = events_and_strays(&spec(name, params));
        assert!(strays.is_empty(), "{name} {params}: {} references outside the mappings", strays.len());
        let maps = events.iter().filter(|e| e.op == RangeOp::Map).count();
        assert!(maps > 4, "{name} {params}: {maps} maps, no more than the process's first");
        assert_eq!(events.iter().any(|e| e.op == RangeOp::Unmap), unmaps, "{name} {params}");
    }
}

/// `address_space_events = false` turns a workload's events off and leaves its references
/// as they are.
#[test]
fn a_workload_without_events_emits_the_same_references() {
    for (name, params) in [("gap", "kernel = \"bc\""), ("memcached", "records = 14000\nvalue_bytes = 96\nhashpower = 12"), ("redis", "")] {
        let with = spec(name, params);
        let config = format!("[[workload]]\nname = \"w\"\ntype = \"{name}\"\nscale = \"tiny\"\nseed = 7\nasid = 1\naddress_space_events = false\nparams = {{ {} }}", params.replace('\n', ", "));
        let xlat::source::SourceSpec::Builtin(without) = parse(&config).unwrap().workloads.remove(0).source else { panic!("{name} is built in") };
        assert!(with.events && !without.events, "{name}");
        check(&without);
        assert!(stream(&with) == stream(&without), "{name}: the references differ with events off");
    }
}

#[test]
fn sysbench_memory_every_operation_and_access_mode() {
    for oper in ["read", "write", "none"] {
        for mode in ["seq", "rnd"] {
            check(&spec("sysbench-memory", &format!("oper = \"{oper}\"\naccess_mode = \"{mode}\"\ninit = {}", oper != "write")));
        }
    }
}

/// A run starts with the process's start-up exactly when it emits its first phase, the
/// set-up.
#[test]
fn the_start_up_comes_first_exactly_when_the_set_up_is_emitted() {
    let flags = [("gups", "init"), ("btree", "build"), ("xsbench", "setup"), ("graph500", "setup"), ("gap", "setup"), ("memcached", "load"), ("redis", "load"), ("sysbench-memory", "init")];
    assert_eq!(flags.len(), WORKLOADS.len());
    for (name, flag) in flags {
        for on in [true, false] {
            let s = spec(name, &format!("{flag} = {on}"));
            let phases = s.expected().phases;
            assert_eq!((s.startup, phases[0].name == "startup"), (on, on), "{name} with {flag} = {on}");
            let set_up = &phases[usize::from(on)];
            assert_eq!(set_up.emitted, on, "{name} with {flag} = {on}: {} comes first", set_up.name);
        }
    }
}

#[test]
fn every_workload_is_deterministic_for_a_seed() {
    for (name, _) in WORKLOADS {
        let a = xlat::source::collect(&mut spec(name, "").open().unwrap()).unwrap();
        let b = xlat::source::collect(&mut spec(name, "").open().unwrap()).unwrap();
        assert!(a == b, "{name}");
    }
}

#[test]
fn a_consumer_that_stops_early_stops_the_workload() {
    let mut source = spec("gups", "").open().unwrap();
    let mut batch = xlat::Batch::default();
    assert_eq!(source.fill(&mut batch, 1000).unwrap(), 1000);
    drop(source);
}

const MACHINE: &str = r#"
[[machine]]
name = "m"
preset = "single-tlb"
entries = 64
ways = 4
"#;

fn parse(workloads: &str) -> xlat::Result<xlat::config::ExperimentSpec> {
    xlat::config::parse_experiment(&format!("{workloads}\n{MACHINE}"), std::path::Path::new("."))
}

fn config_error(workloads: &str) -> String {
    parse(workloads).unwrap_err().to_string()
}

#[test]
fn experiments_run_builtin_workloads_with_instruction_counts() {
    let spec = parse(
        r#"
[[workload]]
name = "g"
type = "graph500"
scale = "tiny"
params = { roots = 2, setup = false }
"#,
    )
    .unwrap();
    let result = xlat::sim::run_experiment(&spec, &std::sync::atomic::AtomicBool::new(false), &mut |_| {}).unwrap();
    let w = &result.workloads[0];
    assert!(w.refs > 0 && !w.partial);
    let rows = result.rows();
    assert!(rows[0].mpki.is_some(), "built-in workloads count instructions");
    assert_eq!(w.input["spec"]["params"]["roots"], 2);
}

#[test]
fn builtin_workload_errors_name_the_field() {
    let e = config_error("[[workload]]\nname = \"g\"\ntype = \"gups\"\nscale = \"huge\"");
    assert!(e.contains("workload[0].scale") && e.contains("tiny, small or paper"), "{e}");
    let e = config_error("[[workload]]\nname = \"g\"\ntype = \"gups\"");
    assert!(e.contains("workload[0].scale") && e.contains("needs a `scale`"), "{e}");
    let e = config_error("[[workload]]\nname = \"g\"\ntype = \"btree\"\nscale = \"tiny\"\nfootprint = \"1GiB\"");
    assert!(e.contains("workload[0].footprint") && e.contains("params"), "{e}");
    let e = config_error("[[workload]]\nname = \"g\"\ntype = \"btree\"\nscale = \"tiny\"\nparams = { order = 3 }");
    assert!(e.contains("workload[0].params.order") && e.contains("4..=256"), "{e}");
    let e = config_error("[[workload]]\nname = \"g\"\ntype = \"xsbench\"\nscale = \"tiny\"\nparams = { nuclides = 100 }");
    assert!(e.contains("workload[0].params.nuclides") && e.contains("68 or 355"), "{e}");
    let e = config_error("[[workload]]\nname = \"g\"\ntype = \"xsbench\"\nscale = \"tiny\"\nparams = { grid = \"octree\" }");
    assert!(e.contains("workload[0].params"), "{e}");
    let e = config_error("[[workload]]\nname = \"g\"\ntype = \"graph500\"\nscale = \"tiny\"\nparams = { roots = 5000 }");
    assert!(e.contains("workload[0].params.roots"), "{e}");
    let e = config_error("[[workload]]\nname = \"g\"\ntype = \"gap\"\nscale = \"tiny\"\nparams = { kernel = \"sort\" }");
    assert!(e.contains("workload[0].params") && e.contains("kernel"), "{e}");
    let e = config_error("[[workload]]\nname = \"g\"\ntype = \"gap\"\nscale = \"tiny\"\nparams = { delta = 0 }");
    assert!(e.contains("workload[0].params.delta"), "{e}");
    let e = config_error("[[workload]]\nname = \"m\"\ntype = \"memcached\"\nscale = \"tiny\"\nparams = { get_fraction = 2.0 }");
    assert!(e.contains("workload[0].params.get_fraction"), "{e}");
    let e = config_error("[[workload]]\nname = \"r\"\ntype = \"redis\"\nscale = \"tiny\"\nparams = { distribution = \"pareto\" }");
    assert!(e.contains("workload[0].params") && e.contains("distribution"), "{e}");
    let e = config_error("[[workload]]\nname = \"s\"\ntype = \"sysbench-memory\"\nscale = \"tiny\"\nparams = { block_size = 1000 }");
    assert!(e.contains("workload[0].params.block_size") && e.contains("power of two"), "{e}");
    let e = config_error("[[workload]]\nname = \"u\"\ntype = \"uniform\"\nfootprint = \"1MiB\"\nrefs = 10\nscale = \"tiny\"");
    assert!(e.contains("workload[0].scale") && e.contains("only built-in"), "{e}");
    let e = config_error("[[workload]]\nname = \"g\"\ntype = \"nbody\"\nscale = \"tiny\"");
    assert!(e.contains("nbody"), "{e}");
}
