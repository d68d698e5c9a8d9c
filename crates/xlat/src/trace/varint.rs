//! LEB128 varints and zigzag encoding for the native trace format.
//!
//! Decoding is on the hot path of trace reading: it works on a byte slice with a cursor, does
//! not allocate, and reports malformed input (overlong or truncated varints) instead of
//! panicking.

/// Appends `v` as an unsigned LEB128 varint (7 bits per byte, low bits first).
#[inline]
pub(crate) fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads an unsigned LEB128 varint at `*pos`, advancing `*pos`.
///
/// Returns `None` when the slice ends inside the varint or when it does not fit in 64 bits
/// (more than 10 bytes, or a 10th byte above 1), so corrupt data cannot wrap silently.
#[inline]
pub(crate) fn get(data: &[u8], pos: &mut usize) -> Option<u64> {
    let mut p = *pos;
    let first = *data.get(p)?;
    p += 1;
    if first < 0x80 {
        // The common case (deltas within ±64, small counts) costs one branch.
        *pos = p;
        return Some(u64::from(first));
    }
    let mut v = u64::from(first & 0x7f);
    let mut shift = 7;
    loop {
        let b = *data.get(p)?;
        p += 1;
        if shift == 63 && b > 1 {
            return None;
        }
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            *pos = p;
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

/// Maps a signed delta to an unsigned value with small magnitudes near zero.
#[inline]
pub(crate) fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Inverse of [`zigzag`].
#[inline]
pub(crate) fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_boundaries() {
        for v in [0, 1, 127, 128, 16383, 16384, u64::from(u32::MAX), u64::MAX - 1, u64::MAX] {
            let mut buf = Vec::new();
            put(&mut buf, v);
            let mut pos = 0;
            assert_eq!(get(&buf, &mut pos), Some(v));
            assert_eq!(pos, buf.len());
        }
    }

    #[test]
    fn truncated_and_overlong_varints_are_rejected() {
        let mut pos = 0;
        assert_eq!(get(&[0x80, 0x80], &mut pos), None);
        let overlong = [0xff; 11];
        assert_eq!(get(&overlong, &mut pos), None);
        let too_big = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert_eq!(get(&too_big, &mut pos), None);
        assert_eq!(pos, 0, "a failed read must not move the cursor");
    }

    #[test]
    fn zigzag_round_trips() {
        for v in [0i64, 1, -1, 63, -64, i64::MAX, i64::MIN] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
    }
}
