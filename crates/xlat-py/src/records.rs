//! Packed reference records: how references cross between the library and NumPy.
//!
//! A record is 16 bytes, little-endian: `vaddr` u64 at 0, `asid` u16 at 8, `size` u16 at 10,
//! `kind` u8 at 12 (0 load, 1 store, 2 instruction fetch), 3 bytes of padding. The Python side
//! views them as the structured dtype `xlat.REF_DTYPE`, which has exactly this layout.

use pyo3::exceptions::PyValueError;
use pyo3::PyResult;
use xlat::memref::past_top;
use xlat::{AccessKind, MemRef};

/// Bytes of one record.
pub const RECORD_BYTES: usize = 16;

/// `refs` as records.
pub fn encode(refs: &[MemRef]) -> Vec<u8> {
    let mut out = vec![0u8; refs.len() * RECORD_BYTES];
    for (r, rec) in refs.iter().zip(out.chunks_exact_mut(RECORD_BYTES)) {
        rec[0..8].copy_from_slice(&r.vaddr.to_le_bytes());
        rec[8..10].copy_from_slice(&r.asid.to_le_bytes());
        rec[10..12].copy_from_slice(&r.size.to_le_bytes());
        rec[12] = r.kind as u8;
    }
    out
}

/// The references in `records`. A kind other than 0, 1, 2, or a reference whose last byte
/// lies past 2^64 - 1 (which trace readers reject too), is a `ValueError` naming its index.
pub fn decode(records: &[u8]) -> PyResult<Vec<MemRef>> {
    if records.len() % RECORD_BYTES != 0 {
        return Err(PyValueError::new_err(format!("{} bytes are not a whole number of {RECORD_BYTES}-byte references", records.len())));
    }
    records.chunks_exact(RECORD_BYTES).enumerate().map(|(i, rec)| decode_one(i, rec)).collect()
}

/// The reference in record `rec`, the `i`-th.
fn decode_one(i: usize, rec: &[u8]) -> PyResult<MemRef> {
    let vaddr = u64::from_le_bytes(rec[0..8].try_into().expect("8 bytes"));
    let asid = u16::from_le_bytes([rec[8], rec[9]]);
    let size = u16::from_le_bytes([rec[10], rec[11]]);
    let kind = AccessKind::from_u8(rec[12])
        .ok_or_else(|| PyValueError::new_err(format!("reference {i}: kind {} is not 0 (load), 1 (store) or 2 (instruction fetch)", rec[12])))?;
    if past_top(vaddr, size) {
        return Err(PyValueError::new_err(format!("reference {i}: its {size} bytes at {vaddr:#x} run past the top of the address space")));
    }
    Ok(MemRef { vaddr, asid, size, kind })
}
