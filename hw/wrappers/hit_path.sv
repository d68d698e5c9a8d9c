// The TLB-hit path of a Mosaic TLB: the CHOICES + 1 hash outputs of the page key, the CPFN
// decoder after them, and a register on the frame number. Only used for synthesis figures.
module hit_path #(
    parameter int FRONT = 56,
    parameter int BACK = 8,
    parameter int CHOICES = 6,
    parameter int CPFN_BITS = 7,
    parameter logic [63:0] BUCKETS = 64'd65536,
    parameter TABLES = "table",
    localparam int FRAME_BITS = $clog2(BUCKETS * (64'(FRONT) + 64'(BACK)))
) (
    input  logic                  clk,
    input  logic [63:0]           key,
    input  logic [CPFN_BITS-1:0]  cpfn,
    output logic                  valid,
    output logic [FRAME_BITS-1:0] frame
);
    logic [(CHOICES+1)*32-1:0] hash;
    logic valid_d;
    logic [FRAME_BITS-1:0] frame_d;
    tab_hash #(.H(CHOICES + 1), .TABLES(TABLES)) hasher (.clk(clk), .key(key), .hash(hash));
    cpfn_decode #(.FRONT(FRONT), .BACK(BACK), .CHOICES(CHOICES), .CPFN_BITS(CPFN_BITS), .BUCKETS(BUCKETS))
        decoder (.hash(hash), .cpfn(cpfn), .valid(valid_d), .frame(frame_d));
    always_ff @(posedge clk) {valid, frame} <= {valid_d, frame_d};
endmodule
