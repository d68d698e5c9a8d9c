use super::*;
use proptest::prelude::*;
use std::fmt::Write as _;

/// A warp's memory instruction as the tests write it: opcode, access width, active mask and
/// each active lane's address.
#[derive(Clone, Debug)]
pub(crate) struct Access {
    pub(crate) opcode: &'static str,
    pub(crate) width: u64,
    pub(crate) mask: u32,
    pub(crate) lanes: Vec<u64>,
}

impl Access {
    /// The global access the reader sees in this instruction, if any (every generic access
    /// the tests write lies outside the windows).
    pub(crate) fn global(&self) -> Option<AccessKind> {
        match global_access(self.opcode) {
            _ if self.width == 0 => None,
            Some(Global::Load) => Some(AccessKind::Load),
            Some(Global::Store) => Some(AccessKind::Store),
            Some(Global::Generic(kind)) => Some(kind),
            None => None,
        }
    }
}

/// Writes `access` as an instruction line of tracer `version` in address `mode`, as NVBit's
/// tracer does; `None` when the mode cannot express the lanes (a stride that varies).
pub(crate) fn line(access: &Access, version: u32, mode: u8, lineinfo: bool) -> Option<String> {
    let mut text = String::new();
    if version < 3 {
        text.push_str("0 0 0 3 ");
    }
    if lineinfo {
        text.push_str("17 ");
    }
    write!(text, "0a70 {:08x} 1 R4 {} 2 R2 R3 {}", access.mask, access.opcode, access.width).unwrap();
    if access.width == 0 {
        return Some(text);
    }
    let lanes = &access.lanes;
    match mode {
        // No active lane: the mode alone (a mask of 0 is what shrinking reaches).
        1 | 2 if lanes.is_empty() => write!(text, " {mode}").unwrap(),
        0 => {
            text.push_str(" 0");
            lanes.iter().for_each(|a| write!(text, " 0x{a:016x}").unwrap());
        }
        1 => {
            let stride = lanes.get(1).map_or(0, |b| b.wrapping_sub(lanes[0]) as i64);
            if lanes.windows(2).any(|w| w[1].wrapping_sub(w[0]) as i64 != stride) {
                return None;
            }
            write!(text, " 1 0x{:x} {stride}", lanes[0]).unwrap();
        }
        _ => {
            write!(text, " 2 0x{:x}", lanes[0]).unwrap();
            lanes.windows(2).for_each(|w| write!(text, " {}", w[1].wrapping_sub(w[0]) as i64).unwrap());
        }
    }
    if version >= 5 {
        text.push_str(" 0");
    }
    Some(text)
}

/// A kernel file of tracer `version`: one thread block of one warp per instruction list.
fn kernel(warps: &[Vec<String>], version: u32, lineinfo: bool) -> String {
    kernel_of_blocks(&[warps.to_vec()], version, lineinfo)
}

/// A kernel file of tracer `version`: one thread block per entry of `blocks`, each of one
/// warp per instruction list.
pub(crate) fn kernel_of_blocks(blocks: &[Vec<Vec<String>>], version: u32, lineinfo: bool) -> String {
    let mut text = format!(
        "-kernel name = k\n-kernel id = 1\n-grid dim = (1,1,1)\n-block dim = (32,1,1)\n-shmem = 0\n-nregs = 8\n-binary version = 70\n\
         -cuda stream id = 0\n-shmem base_addr = 0x00007f0000000000\n-local mem base_addr = 0x00007f0001000000\n-nvbit version = 1.5\n\
         -accelsim tracer version = {version}\n-enable lineinfo = {}\n\n#traces format = PC mask dest_num [reg_dests] opcode src_num [reg_srcs] mem_width [adrrescompress?] [mem_addresses]\n\n",
        u8::from(lineinfo)
    );
    for (b, warps) in blocks.iter().enumerate() {
        write!(text, "#BEGIN_TB\n\nthread block = {b},0,0\n\n").unwrap();
        for (w, lines) in warps.iter().enumerate() {
            write!(text, "warp = {w}\ninsts = {}\n", lines.len()).unwrap();
            lines.iter().for_each(|l| writeln!(text, "{l}").unwrap());
            text.push('\n');
        }
        text.push_str("#END_TB\n");
    }
    text
}

/// Every reference of the trace at `path`, and its instructions.
pub(crate) fn read(path: &Path) -> Result<(Vec<MemRef>, u64)> {
    let mut reader = AccelSimReader::open(path)?;
    let mut batch = Batch::with_capacity(7);
    let mut refs = Vec::new();
    loop {
        let n = reader.fill(&mut batch, 7)?;
        refs.extend_from_slice(&batch.refs);
        batch.refs.clear();
        if n == 0 {
            return Ok((refs, batch.instructions));
        }
    }
}

/// The naive coalescer: every byte each lane touches, then one request per 128-byte segment
/// from its lowest byte touched to its highest.
fn naive(access: &Access, kind: AccessKind) -> Vec<MemRef> {
    let mut bytes: Vec<u64> = access.lanes.iter().flat_map(|&a| (0..access.width).map(move |i| a + i)).collect();
    bytes.sort_unstable();
    let mut refs: Vec<MemRef> = Vec::new();
    for b in bytes {
        match refs.last_mut() {
            Some(r) if r.vaddr / 128 == b / 128 => r.size = (b - r.vaddr + 1) as u16,
            _ => refs.push(MemRef { vaddr: b, asid: 0, size: 1, kind }),
        }
    }
    refs
}

/// A trace directory of the kernels' files `kernels`, its list copying 4 KiB to the GPU first.
pub(crate) fn write_dir(kernels: &[String]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut list = String::from("MemcpyHtoD,0x00007f1000000000,4096\n");
    for (i, k) in kernels.iter().enumerate() {
        std::fs::write(dir.path().join(format!("kernel-{}.traceg", i + 1)), k).unwrap();
        writeln!(list, "kernel-{}.traceg", i + 1).unwrap();
    }
    std::fs::write(dir.path().join(KERNEL_LIST), list).unwrap();
    dir
}

/// Warp instructions of every kind the reader knows, at lanes in a 1 MiB region.
pub(crate) fn access_strategy() -> impl Strategy<Value = Access> {
    let opcodes = prop::sample::select(vec!["LDG.E", "STG.E.64", "ATOMG.E.ADD", "RED.E.ADD", "LD.E", "ST.E", "LDS", "STL", "IMAD"]);
    (opcodes, prop::sample::select(vec![1u64, 2, 4, 8, 16]), any::<u32>(), 0u64..1 << 20, prop::sample::select(vec![0i64, 4, 8, -8, 128, 1000]), any::<bool>())
        .prop_map(|(opcode, width, mask, base, stride, scattered)| {
            let width = if opcode == "IMAD" { 0 } else { width };
            let active = mask.count_ones() as u64;
            let base = 0x7f10_0000_0000 + base;
            let lanes = (0..active).map(|i| if scattered { base + (i * 0x9e37) % 4096 * 8 } else { base.wrapping_add_signed(stride * i as i64) }).collect();
            Access { opcode, width, mask, lanes }
        })
}

proptest! {
    /// Written by a writer of every version, address mode and line form, the instructions
    /// read back as the naive coalescer's requests of their global accesses, in order, and
    /// every warp instruction counts one instruction.
    #[test]
    fn every_form_reads_back_the_naive_coalescers_requests(
        warps in prop::collection::vec(prop::collection::vec(access_strategy(), 0..6), 1..4),
        version in prop::sample::select(vec![2u32, 3, 4, 5]),
        mode in 0u8..3,
        lineinfo in any::<bool>(),
    ) {
        let lines: Vec<Vec<String>> = warps.iter().map(|w| w.iter().map(|a| line(a, version, mode, lineinfo).or_else(|| line(a, version, 0, lineinfo)).unwrap()).collect()).collect();
        let dir = write_dir(&[kernel(&lines, version, lineinfo)]);
        let (refs, instructions) = read(dir.path()).unwrap();
        let expected: Vec<MemRef> = warps.iter().flatten().flat_map(|a| a.global().map_or_else(Vec::new, |kind| naive(a, kind))).collect();
        prop_assert_eq!(refs, expected);
        prop_assert_eq!(instructions, warps.iter().map(Vec::len).sum::<usize>() as u64);
    }
}

/// A hand-written trace of every construct: two kernels (one compressed with xz), the three
/// address modes, a line with its line number, a generic load into the shared window (not
/// global) and one outside it, a lane's bytes across a segment boundary, a non-memory
/// instruction, an empty warp.
#[test]
fn a_hand_written_trace_of_every_construct_reads_as_written() {
    let first = "-accelsim tracer version = 5\n-enable lineinfo = 1\n-shmem base_addr = 0x00007f0000000000\n-local mem base_addr = 0x00007f0001000000\n\n\
#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 5\n\
3 0000 ffffffff 1 R1 IMAD.MOV.U32 2 R255 R255 0\n\
4 0010 00000003 1 R2 LDG.E.64 1 R4 8 0 0x00007f1000000000 0x00007f1000000100 0\n\
5 0020 0000000f 0 STG.E 2 R4 R5 4 1 0x7f1000000000 4 0\n\
6 0030 00000007 1 R3 LD.E 1 R4 4 2 0x7f0000000010 4 4 0\n\
7 0040 00000003 1 R3 LD.E.128 1 R4 16 2 0x7f100000007c -4 0\n\
warp = 1\ninsts = 0\n#END_TB\n";
    let second = "-accelsim tracer version = 2\n#BEGIN_TB\nthread block = 1,0,0\nwarp = 0\ninsts = 1\n1 0 0 0 0050 80000000 0 ATOMG.E.ADD 2 R1 R2 4 0 0x00007f1000002000\n#END_TB\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("kernel-1.traceg"), first).unwrap();
    let xz = liblzma::encode_all(second.as_bytes(), 6).unwrap();
    std::fs::write(dir.path().join("kernel-2.traceg.xz"), xz).unwrap();
    std::fs::write(dir.path().join(KERNEL_LIST), "MemcpyHtoD,0x00007f1000000000,1024\nkernel-1.traceg\n\nkernel-2.traceg.xz\n").unwrap();
    let r = |vaddr, size, kind| MemRef { vaddr, asid: 0, size, kind };
    let (refs, instructions) = read(dir.path()).unwrap();
    assert_eq!(
        refs,
        vec![
            // Two lanes 256 bytes apart: two segments of 8 bytes.
            r(0x7f10_0000_0000, 8, AccessKind::Load),
            r(0x7f10_0000_0100, 8, AccessKind::Load),
            // Four lanes of 4 bytes at stride 4: one segment of 16.
            r(0x7f10_0000_0000, 16, AccessKind::Store),
            // (The generic load into the shared window makes none.) Two lanes of 16 bytes at
            // 0x..7c and 0x..78: their bytes reach into the next segment.
            r(0x7f10_0000_0078, 8, AccessKind::Load),
            r(0x7f10_0000_0080, 12, AccessKind::Load),
            // The old-format atomic of the compressed kernel: lane 31 alone.
            r(0x7f10_0000_2000, 4, AccessKind::Store),
        ]
    );
    assert_eq!(instructions, 6);
    assert_eq!(crate::trace::detect(dir.path()).unwrap(), crate::trace::TraceFormat::AccelSim);
    // The list alone and one kernel's file alone read too.
    assert_eq!(read(&dir.path().join(KERNEL_LIST)).unwrap().0, refs);
    assert_eq!(read(&dir.path().join("kernel-2.traceg.xz")).unwrap().0, refs[5..]);
}

/// Bad input is an error naming the file and line, never a panic.
#[test]
fn malformed_traces_name_the_file_and_line() {
    let header = "-accelsim tracer version = 4\n#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 1\n";
    let cases = [
        (format!("{header}0010 zz 0 LDG.E 0 4 0 0x10\n#END_TB\n"), 6, "mask"),
        (format!("{header}0010 1 0 LDG.E 0 4 7 0x10\n#END_TB\n"), 6, "address mode"),
        (format!("{header}0010 3 0 LDG.E 0 4 0 0x10\n#END_TB\n"), 6, "lane address"),
        (format!("{header}0010 1 0 LDG.E 0 4096 0 0x10\n#END_TB\n"), 6, "width"),
        (format!("{header}0010 1 0 LDG.E 0 4 0 0x10 junk\n#END_TB\n"), 6, "unexpected"),
        (format!("{header}0010 1 0 LDG.E 0 4 0 0x10\n"), 6, "#END_TB"),
        (header.to_string(), 5, "missing"),
        ("-accelsim tracer version = x\n".to_string(), 1, "version"),
        ("hello\n".to_string(), 1, "header line"),
        ("#BEGIN_TB\nnonsense\n".to_string(), 2, "thread block"),
    ];
    for (text, line, words) in cases {
        let dir = write_dir(std::slice::from_ref(&text));
        let e = read(dir.path()).unwrap_err().to_string();
        assert!(e.contains(&format!("kernel-1.traceg:{line}")) && e.contains(words), "{text:?}: {e}");
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(KERNEL_LIST), "MemcpyHtoD,0x10\n").unwrap();
    let e = read(dir.path()).err().unwrap().to_string();
    assert!(e.contains("kernelslist.g:1") && e.contains("MemcpyHtoD"), "{e}");
    std::fs::write(dir.path().join(KERNEL_LIST), "kernel-9.traceg\n").unwrap();
    let e = read(dir.path()).err().unwrap().to_string();
    assert!(e.contains("kernel-9.traceg"), "a missing kernel file is named: {e}");
    let empty = tempfile::tempdir().unwrap();
    assert!(crate::trace::detect(empty.path()).unwrap_err().to_string().contains("kernelslist.g"));
}
