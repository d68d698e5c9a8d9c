// The interface of the paper's circuit (Mosaic pages, Table 5): H hash functions of a key, of
// which `sel` picks one into a 32-bit output register. Built on tab_hash, so it computes the
// same functions as xlat; only used to compare sizes with the paper.
module hash_select #(
    parameter int KEY_BITS = 45,
    parameter int H = 8,
    parameter int OUT_BITS = 32,
    parameter TABLES = "table",
    localparam int SEL_BITS = H > 1 ? $clog2(H) : 1
) (
    input  logic                clk,
    input  logic [KEY_BITS-1:0] key,
    /* verilator lint_off UNUSEDSIGNAL */
    input  logic [SEL_BITS-1:0] sel,  // unused when H = 1
    /* verilator lint_on UNUSEDSIGNAL */
    output logic [OUT_BITS-1:0] out
);
    logic [H*OUT_BITS-1:0] hash;
    tab_hash #(.KEY_BITS(KEY_BITS), .H(H), .OUT_BITS(OUT_BITS), .TABLES(TABLES))
        hasher (.clk(clk), .key(key), .hash(hash));
    if (H == 1) begin : g_one  // nothing to select
        always_ff @(posedge clk) out <= hash;
    end else begin : g_select
        always_ff @(posedge clk) out <= hash[sel*OUT_BITS +: OUT_BITS];
    end
endmodule
