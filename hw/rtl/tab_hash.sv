// Tabulation hashing with probing (docs/hashing.md), bit-exact with crates/xlat/src/hash.
//
// Output k (0 <= k < H) is h_k(key) = T_0[(byte_0 + k) mod 256] ^ ... ^ T_7[(byte_7 + k) mod 256],
// where byte_i is key byte i (little-endian). The H outputs share the eight tables: probing
// adds k to each byte's table index instead of adding tables, so the circuit grows linearly
// with H while every output has the same depth (one table read, one 8-way XOR).
module tab_hash #(
    // Key width. Bits above it are taken as zero, so a narrower key (45 bits: the VPN of the
    // paper's circuit) hashes exactly like the same key zero-extended to 64 bits, and the
    // tables of all-zero bytes fold into constants.
    parameter int KEY_BITS = 64,
    // Number of hash outputs, h_0 .. h_{H-1} (1..256).
    parameter int H = 8,
    // Width of each output: the top OUT_BITS bits of the 32-bit hash, the ones that matter
    // most to the multiply-shift bucket mapping.
    parameter int OUT_BITS = 32,
    // 1: register the outputs (one cycle of latency), 0: purely combinational.
    parameter bit PIPELINE = 0,
    // Where the tables are: table t is read from {TABLES, "t.memh"}, so the prefix
    // "DIR/table" names DIR/table0.memh .. table7.memh as `xlat hash vectors` writes them.
    parameter TABLES = "table"
) (
    input  logic                  clk,  // used only when PIPELINE = 1
    input  logic [KEY_BITS-1:0]   key,
    // Output k is hash[k*OUT_BITS +: OUT_BITS].
    output logic [H*OUT_BITS-1:0] hash
);
    localparam int BYTES = 8;
    localparam int ENTRIES = 256;

    // One ROM per table, read by all H outputs. (Separate ROMs rather than one of 2048 words
    // also keep Yosys from building, then pruning, a 2048-way multiplexer per read.)
    for (genvar t = 0; t < BYTES; t++) begin : g_rom
        logic [31:0] rom [0:ENTRIES-1];
        initial $readmemh({TABLES, 8'd48 + 8'(t), ".memh"}, rom);  // 48 is "0"
    end

    /* verilator lint_off UNUSEDSIGNAL */
    logic unused_clk;
    assign unused_clk = clk;
    /* verilator lint_on UNUSEDSIGNAL */

    logic [63:0] key64;
    assign key64 = 64'(key);

    logic [H*OUT_BITS-1:0] hash_d;
    for (genvar k = 0; k < H; k++) begin : g_out
        // words[32t +: 32] is table t's word for this output.
        logic [BYTES*32-1:0] words;
        for (genvar t = 0; t < BYTES; t++) begin : g_read
            // The 8-bit adder drops its carry: the wrap rule of the spec.
            logic [7:0] index;
            assign index = key64[8*t +: 8] + 8'(k);
            assign words[32*t +: 32] = g_rom[t].rom[index];
        end
        // The low bits are dropped when OUT_BITS < 32.
        /* verilator lint_off UNUSEDSIGNAL */
        logic [31:0] h;
        /* verilator lint_on UNUSEDSIGNAL */
        always_comb begin
            h = '0;
            for (int t = 0; t < BYTES; t++) h ^= words[32*t +: 32];
        end
        assign hash_d[k*OUT_BITS +: OUT_BITS] = h[31 -: OUT_BITS];
    end

    if (PIPELINE) begin : g_reg
        always_ff @(posedge clk) hash <= hash_d;
    end else begin : g_comb
        assign hash = hash_d;
    end
endmodule
