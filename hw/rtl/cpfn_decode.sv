// CPFN-to-frame decoder of a Mosaic TLB hit (docs/hashing.md), bit-exact with
// Layout::decode_frame in crates/xlat/src/os/iceberg/geometry.rs.
//
// A CPFN names one of the FRONT + CHOICES * BACK slots a page may use:
//   0 | slot               front-yard slot of bucket h_0
//   1 | choice-1 | slot    backyard slot of the bucket of choice 1..CHOICES
// and all ones (or any code naming no slot) means "no frame". The hash outputs come from
// tab_hash with H = CHOICES + 1, computed in parallel with the TLB lookup; the CPFN then
// selects one, maps it onto its bucket range by multiply-shift and adds the slot.
module cpfn_decode #(
    parameter int FRONT = 56,       // front-yard slots per bucket (f)
    parameter int BACK = 8,         // backyard slots per bucket (b)
    parameter int CHOICES = 6,      // backyard choices (d)
    parameter int CPFN_BITS = 7,    // width of a CPFN
    parameter logic [63:0] BUCKETS = 64'd65536,  // buckets of f + b frames in memory
    // 0: choice i falls in the i-th of CHOICES disjoint bucket ranges (the default);
    // 1: every choice falls among all buckets.
    parameter bit BACKYARD_ALL = 0,
    parameter int FRAME_BITS = $clog2(BUCKETS * (64'(FRONT) + 64'(BACK)))
) (
    // h_0 .. h_CHOICES, 32 bits each: h_k is hash[32*k +: 32].
    input  logic [(CHOICES+1)*32-1:0] hash,
    input  logic [CPFN_BITS-1:0]      cpfn,
    output logic                      valid,
    // The frame number; 0 when valid is 0, as in the vectors.
    output logic [FRAME_BITS-1:0]     frame
);
    // Field widths: the backyard code holds choice-1 in CHOICE_BITS bits above a SLOT_BITS-bit
    // slot. Either may be zero bits wide, so fields are cut with shifts and masks, not slices.
    localparam int CHOICE_BITS = $clog2(CHOICES);
    localparam int SLOT_BITS = CPFN_BITS - 1 - CHOICE_BITS;
    // Bits to hold a bucket range length (at most BUCKETS).
    localparam int LEN_BITS = $clog2(BUCKETS + 1);
    localparam logic [63:0] BUCKET_FRAMES = 64'(FRONT) + 64'(BACK);

    // First bucket and number of buckets of choice c (0 = front yard), packed for all c:
    // start_c = floor((c-1) * B / d), end_c = floor(c * B / d) for disjoint ranges.
    function automatic logic [(CHOICES+1)*64-1:0] range_starts();
        for (int c = 0; c <= CHOICES; c++)
            range_starts[64*c +: 64] = (c == 0 || BACKYARD_ALL) ? 64'd0
                                     : (64'(c) - 64'd1) * BUCKETS / 64'(CHOICES);
    endfunction
    function automatic logic [(CHOICES+1)*64-1:0] range_lens();
        for (int c = 0; c <= CHOICES; c++)
            range_lens[64*c +: 64] = (c == 0 || BACKYARD_ALL) ? BUCKETS
                                   : 64'(c) * BUCKETS / 64'(CHOICES) - (64'(c) - 64'd1) * BUCKETS / 64'(CHOICES);
    endfunction
    localparam logic [(CHOICES+1)*64-1:0] STARTS = range_starts();
    localparam logic [(CHOICES+1)*64-1:0] LENS = range_lens();

    logic is_back;
    logic [31:0] rest, choice_m1, slot;
    assign is_back = cpfn[CPFN_BITS-1];
    assign rest = 32'(cpfn) & ((32'd1 << (CPFN_BITS - 1)) - 1);
    assign choice_m1 = rest >> SLOT_BITS;
    assign slot = is_back ? rest & ((32'd1 << SLOT_BITS) - 1) : rest;
    assign valid = is_back ? (choice_m1 < CHOICES && slot < BACK) : (rest < FRONT);

    // Select the hash output and bucket range of the CPFN's choice (0 = front yard). A code
    // naming no choice selects garbage, which the valid bit masks.
    localparam int SEL_BITS = $clog2(CHOICES + 1);
    logic [SEL_BITS-1:0] sel;
    logic [31:0] h;
    logic [63:0] start;
    logic [LEN_BITS-1:0] len;
    assign sel = is_back ? SEL_BITS'(choice_m1 + 1) : '0;
    assign h = hash[32*sel +: 32];
    assign start = STARTS[64*sel +: 64];
    assign len = LEN_BITS'(LENS[64*sel +: 64]);

    // Multiply-shift: the bucket index within the range is floor(h * len / 2^32).
    /* verilator lint_off UNUSEDSIGNAL */
    logic [32+LEN_BITS-1:0] product;  // its low 32 bits are the fraction, dropped
    /* verilator lint_on UNUSEDSIGNAL */
    logic [63:0] bucket, offset;
    assign product = (32+LEN_BITS)'(h) * (32+LEN_BITS)'(len);
    assign bucket = start + 64'(product[32 +: LEN_BITS]);
    assign offset = is_back ? 64'(FRONT) + 64'(slot) : 64'(slot);
    assign frame = valid ? FRAME_BITS'(bucket * BUCKET_FRAMES + offset) : '0;
endmodule
