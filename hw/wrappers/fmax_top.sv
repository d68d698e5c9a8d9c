// A frame for place and route: registers on the key (and select) inputs, the design under
// test (whose outputs are registered), and its output bits XOR-folded onto one pin. Every
// timed path inside the design then runs register to register, so the clock's maximum
// frequency measures the hash logic, and the pins stay few enough for a small FPGA.
module fmax_top #(
    parameter int KEY_BITS = 64,
    parameter int H = 8,
    parameter int OUT_BITS = 32,
    parameter bit SELECT = 0,  // 1: hash_select (one output picked), 0: tab_hash (all H)
    parameter TABLES = "table",
    localparam int SEL_BITS = H > 1 ? $clog2(H) : 1
) (
    input  logic                clk,
    input  logic [KEY_BITS-1:0] key,
    input  logic [SEL_BITS-1:0] sel,
    output logic                fold
);
    logic [KEY_BITS-1:0] key_q;
    /* verilator lint_off UNUSEDSIGNAL */
    logic [SEL_BITS-1:0] sel_q;  // unused when SELECT = 0
    /* verilator lint_on UNUSEDSIGNAL */
    always_ff @(posedge clk) {key_q, sel_q} <= {key, sel};

    if (SELECT) begin : g_select
        logic [OUT_BITS-1:0] out;
        hash_select #(.KEY_BITS(KEY_BITS), .H(H), .OUT_BITS(OUT_BITS), .TABLES(TABLES))
            dut (.clk(clk), .key(key_q), .sel(sel_q), .out(out));
        assign fold = ^out;
    end else begin : g_all
        logic [H*OUT_BITS-1:0] hash;
        tab_hash #(.KEY_BITS(KEY_BITS), .H(H), .OUT_BITS(OUT_BITS), .PIPELINE(1), .TABLES(TABLES))
            dut (.clk(clk), .key(key_q), .hash(hash));
        assign fold = ^hash;
    end
endmodule
