/// The arithmetic coder of CABAC, as an encoder (H.264 9.3.4.2 to 9.3.4.6): what
/// `RepeatPicture` needs to write a CABAC slice, decisions in one context and the
/// end_of_slice_flag. Binarization and the choice of context are the caller's.
struct CABACWriter {
    /// One context variable (9.3.1.1): the probability state and the more probable bin.
    struct Context {
        var state: UInt8
        var mostProbable: UInt8

        /// Initialised from the (m, n) of its context index for the slice's QP (9.3.1.1).
        init(m: Int, n: Int, sliceQP: Int) {
            let pre = Swift.min(126, Swift.max(1, ((m * Swift.min(51, Swift.max(0, sliceQP))) >> 4) + n))
            if pre <= 63 {
                state = UInt8(63 - pre)
                mostProbable = 0
            } else {
                state = UInt8(pre - 64)
                mostProbable = 1
            }
        }
    }

    private var low = 0
    private var range = 510
    private var firstBit = true
    private var outstanding = 0
    private(set) var writer: BitWriter

    /// Starts the coder on a writer at a byte boundary (after cabac_alignment_one_bit).
    init(_ writer: BitWriter) {
        precondition(writer.isByteAligned)
        self.writer = writer
    }

    /// EncodeDecision (9.3.4.2).
    mutating func decision(_ bin: UInt8, _ context: inout Context) {
        let lps = Int(CABACWriter.rangeLPS[Int(context.state)][(range >> 6) & 3])
        range -= lps
        if bin != context.mostProbable {
            low += range
            range = lps
            if context.state == 0 { context.mostProbable = 1 - context.mostProbable }
            context.state = CABACWriter.nextStateLPS[Int(context.state)]
        } else if context.state < 62 {
            context.state += 1
        }
        renormalize()
    }

    /// EncodeTerminate (9.3.4.5): the end_of_slice_flag; a 1 flushes the coder, whose last
    /// bit written is the slice's rbsp_stop_one_bit.
    mutating func terminate(_ bin: Bool) {
        range -= 2
        if bin {
            low += range
            range = 2
            renormalize()
            put((low >> 9) & 1)
            writer.bits(UInt64(((low >> 7) & 3) | 1), 2)
        } else {
            renormalize()
        }
    }

    /// RenormE (9.3.4.3).
    private mutating func renormalize() {
        while range < 256 {
            if low < 256 {
                put(0)
            } else if low >= 512 {
                low -= 512
                put(1)
            } else {
                low -= 256
                outstanding += 1
            }
            range <<= 1
            low <<= 1
        }
    }

    /// PutBit (9.3.4.4).
    private mutating func put(_ bit: Int) {
        if firstBit {
            firstBit = false
        } else {
            writer.bit(bit == 1)
        }
        while outstanding > 0 {
            writer.bit(bit == 0)
            outstanding -= 1
        }
    }

    /// rangeTabLPS (Table 9-44): by pStateIdx, then by (codIRange >> 6) & 3.
    static let rangeLPS: [[UInt8]] = [
        [128, 176, 208, 240], [128, 167, 197, 227], [128, 158, 187, 216], [123, 150, 178, 205],
        [116, 142, 169, 195], [111, 135, 160, 185], [105, 128, 152, 175], [100, 122, 144, 166],
        [95, 116, 137, 158], [90, 110, 130, 150], [85, 104, 123, 142], [81, 99, 117, 135],
        [77, 94, 111, 128], [73, 89, 105, 122], [69, 85, 100, 116], [66, 80, 95, 110],
        [62, 76, 90, 104], [59, 72, 86, 99], [56, 69, 81, 94], [53, 65, 77, 89],
        [51, 62, 73, 85], [48, 59, 69, 80], [46, 56, 66, 76], [43, 53, 63, 72],
        [41, 50, 59, 69], [39, 48, 56, 65], [37, 45, 54, 62], [35, 43, 51, 59],
        [33, 41, 48, 56], [32, 39, 46, 53], [30, 37, 43, 50], [29, 35, 41, 48],
        [27, 33, 39, 45], [26, 31, 37, 43], [24, 30, 35, 41], [23, 28, 33, 39],
        [22, 27, 32, 37], [21, 26, 30, 35], [20, 24, 29, 33], [19, 23, 27, 31],
        [18, 22, 26, 30], [17, 21, 25, 28], [16, 20, 23, 27], [15, 19, 22, 25],
        [14, 18, 21, 24], [14, 17, 20, 23], [13, 16, 19, 22], [12, 15, 18, 21],
        [12, 14, 17, 20], [11, 14, 16, 19], [11, 13, 15, 18], [10, 12, 15, 17],
        [10, 12, 14, 16], [9, 11, 13, 15], [9, 11, 12, 14], [8, 10, 12, 14],
        [8, 9, 11, 13], [7, 9, 11, 12], [7, 9, 10, 12], [7, 8, 10, 11],
        [6, 8, 9, 11], [6, 7, 9, 10], [6, 7, 8, 9], [2, 2, 2, 2],
    ]

    /// transIdxLPS (Table 9-45); after the more probable bin the state goes up by one, to 62.
    static let nextStateLPS: [UInt8] = [
        0, 0, 1, 2, 2, 4, 4, 5, 6, 7, 8, 9, 9, 11, 11, 12, 13, 13, 15, 15, 16, 16, 18, 18, 19, 19, 21, 21, 22, 22, 23, 24,
        24, 25, 26, 26, 27, 27, 28, 29, 29, 30, 30, 30, 31, 32, 32, 33, 33, 33, 34, 34, 35, 35, 35, 36, 36, 36, 37, 37, 37, 38, 38, 63,
    ]
}
