// Checks tab_hash against hash_vectors.txt of `xlat hash vectors`: for every key, outputs
// h_0 .. h_{H-1} must equal the software's bit for bit. Stops at the first mismatch.
module tb_tab_hash;
    parameter int KEY_BITS = 64;
    parameter int H = 8;
    parameter int OUT_BITS = 32;
    parameter bit PIPELINE = 0;
    parameter TABLES = "table";
    parameter VECTORS = "hash_vectors.txt";
    localparam int FILE_OUTPUTS = 8;  // hash_vectors.txt lists h_0 .. h_7

    logic clk = 0;
    logic [KEY_BITS-1:0] key = '0;
    logic [H*OUT_BITS-1:0] hash;
    tab_hash #(.KEY_BITS(KEY_BITS), .H(H), .OUT_BITS(OUT_BITS), .PIPELINE(PIPELINE), .TABLES(TABLES))
        dut (.clk(clk), .key(key), .hash(hash));

    initial begin
        integer fd, fields, line, keys, first;
        reg [8*1024-1:0] comment;
        logic [63:0] want_key;
        logic [31:0] want [FILE_OUTPUTS];
        logic [OUT_BITS-1:0] got, expected;
        if (H > FILE_OUTPUTS) $fatal(1, "FAIL: the vectors hold %0d outputs, H = %0d", FILE_OUTPUTS, H);
        fd = $fopen(VECTORS, "r");
        if (fd == 0) $fatal(1, "FAIL: cannot open %0s", VECTORS);
        line = 0;
        keys = 0;
        first = $fgetc(fd);
        while (first != -1) begin
            line++;
            if (first == "/") begin
                fields = $fgets(comment, fd);  // a `//` comment line
            end else begin
                fields = $ungetc(first, fd);
                fields = $fscanf(fd, "%h %h %h %h %h %h %h %h %h\n", want_key, want[0], want[1],
                                 want[2], want[3], want[4], want[5], want[6], want[7]);
                if (fields != 1 + FILE_OUTPUTS) $fatal(1, "FAIL: %0s line %0d is malformed", VECTORS, line);
                if (KEY_BITS < 64 && (want_key >> KEY_BITS) != 0)
                    $fatal(1, "FAIL: key %h is wider than KEY_BITS = %0d (generate with --key-bits)",
                           want_key, KEY_BITS);
                key = KEY_BITS'(want_key);
                // One clock per vector: a PIPELINE register captures it, a combinational
                // circuit has settled by then anyway.
                #1 clk = 1;
                #1 clk = 0;
                for (int k = 0; k < H; k++) begin
                    got = hash[k*OUT_BITS +: OUT_BITS];
                    expected = want[k][31 -: OUT_BITS];
                    if (got !== expected)
                        $fatal(1, "FAIL: MISMATCH %0s line %0d key %h h_%0d: circuit %h, xlat %h",
                               VECTORS, line, want_key, k, got, expected);
                end
                keys++;
            end
            first = $fgetc(fd);
        end
        $fclose(fd);
        if (keys == 0) $fatal(1, "FAIL: no vectors in %0s", VECTORS);
        $display("PASS tab_hash KEY_BITS=%0d H=%0d OUT_BITS=%0d PIPELINE=%0d: %0d keys, %0d outputs match",
                 KEY_BITS, H, OUT_BITS, PIPELINE, keys, keys * H);
        $finish;
    end
endmodule
