//! Placing address-space events among references, for the trace tests' property strategies
//! (included by path: the other reference models are not needed there).

use proptest::sample::Index;

/// Places each raw event among `len` references: before the first when its `end` is 0, after
/// the last when it is 1 (the places where formats go wrong), else where `at` says; sorted by
/// place, events at one place keeping their order.
pub fn place<E>(len: usize, raw: Vec<((u8, Index), E)>) -> Vec<(usize, E)> {
    let mut events: Vec<(usize, E)> = raw
        .into_iter()
        .map(|((end, at), e)| match end {
            0 => (0, e),
            1 => (len, e),
            _ => (at.index(len + 1), e),
        })
        .collect();
    events.sort_by_key(|&(at, _)| at);
    events
}
