// Checks tab_hash + cpfn_decode against cpfn_vectors.txt of `xlat hash vectors`: for every
// (key, CPFN), the valid bit and the frame must equal the software's. The geometry in the
// file's header must be the one the circuit is built with. Stops at the first mismatch.
module tb_cpfn;
    parameter int FRONT = 56;
    parameter int BACK = 8;
    parameter int CHOICES = 6;
    parameter int CPFN_BITS = 7;
    parameter logic [63:0] BUCKETS = 64'd65536;
    parameter bit BACKYARD_ALL = 0;
    parameter TABLES = "table";
    parameter VECTORS = "cpfn_vectors.txt";
    localparam int H = CHOICES + 1;
    localparam int FRAME_BITS = $clog2(BUCKETS * (64'(FRONT) + 64'(BACK)));

    logic [63:0] key = '0;
    logic [CPFN_BITS-1:0] cpfn = '0;
    logic [H*32-1:0] hash;
    logic valid;
    logic [FRAME_BITS-1:0] frame;
    tab_hash #(.H(H), .TABLES(TABLES)) hasher (.clk(1'b0), .key(key), .hash(hash));
    cpfn_decode #(.FRONT(FRONT), .BACK(BACK), .CHOICES(CHOICES), .CPFN_BITS(CPFN_BITS),
                  .BUCKETS(BUCKETS), .BACKYARD_ALL(BACKYARD_ALL))
        dut (.hash(hash), .cpfn(cpfn), .valid(valid), .frame(frame));

    initial begin
        integer fd, fields, line, checked, valids, first;
        logic [63:0] f_buckets;
        integer f_front, f_back, f_choices, f_bits;
        reg [8*64-1:0] f_backyard;
        logic [63:0] want_key, want_frame;
        logic [31:0] want_cpfn, want_valid;
        fd = $fopen(VECTORS, "r");
        if (fd == 0) $fatal(1, "FAIL: cannot open %0s", VECTORS);
        fields = $fscanf(fd, "// key cpfn valid frame (hex); buckets %d front %d back %d choices %d backyard %s cpfn_bits %d\n",
                         f_buckets, f_front, f_back, f_choices, f_backyard, f_bits);
        if (fields != 6) $fatal(1, "FAIL: %0s has no geometry header", VECTORS);
        if (f_buckets != BUCKETS || f_front != FRONT || f_back != BACK || f_choices != CHOICES
                || f_bits != CPFN_BITS || (f_backyard == "All") != BACKYARD_ALL)
            $fatal(1, "FAIL: %0s is for buckets %0d front %0d back %0d choices %0d backyard %0s cpfn_bits %0d, %s",
                   VECTORS, f_buckets, f_front, f_back, f_choices, f_backyard, f_bits,
                   $sformatf("the circuit for buckets %0d front %0d back %0d choices %0d backyard_all %0d cpfn_bits %0d",
                             BUCKETS, FRONT, BACK, CHOICES, BACKYARD_ALL, CPFN_BITS));
        line = 1;
        checked = 0;
        valids = 0;
        first = $fgetc(fd);
        while (first != -1) begin
            line++;
            fields = $ungetc(first, fd);
            fields = $fscanf(fd, "%h %h %h %h\n", want_key, want_cpfn, want_valid, want_frame);
            if (fields != 4) $fatal(1, "FAIL: %0s line %0d is malformed", VECTORS, line);
            key = want_key;
            cpfn = CPFN_BITS'(want_cpfn);
            #1;
            if (valid !== want_valid[0] || 64'(frame) !== want_frame)
                $fatal(1, "FAIL: MISMATCH %0s line %0d key %h cpfn %h: circuit valid %b frame %h, xlat valid %0d frame %h",
                       VECTORS, line, want_key, want_cpfn, valid, frame, want_valid, want_frame);
            checked++;
            valids += valid;
            first = $fgetc(fd);
        end
        $fclose(fd);
        if (checked == 0) $fatal(1, "FAIL: no vectors in %0s", VECTORS);
        $display("PASS cpfn_decode f=%0d b=%0d d=%0d backyard=%0s cpfn_bits=%0d buckets=%0d: %0d codes (%0d valid) match",
                 FRONT, BACK, CHOICES, f_backyard, CPFN_BITS, BUCKETS, checked, valids);
        $finish;
    end
endmodule
