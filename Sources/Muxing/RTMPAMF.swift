/// AMF0 values (Adobe's Action Message Format, version 0), as RTMP's commands and FLV's
/// `onMetaData` carry them: the few types a publisher writes (numbers, booleans, strings,
/// objects, null, ECMA arrays) and every type a server's answers use, read back.
enum AMF0 {
    case number(Double)
    case bool(Bool)
    case string(String)
    case object([(String, AMF0)])
    case null
    case undefined
    case ecmaArray([(String, AMF0)])
    case strictArray([AMF0])

    /// A field of an object or ECMA array.
    func field(_ name: String) -> AMF0? {
        switch self {
        case .object(let fields), .ecmaArray(let fields): fields.first { $0.0 == name }?.1
        default: nil
        }
    }

    var text: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    var number: Double? {
        if case .number(let n) = self { return n }
        return nil
    }

    /// Appends the encoding of `values`, one after the other, to `out`.
    static func encode(_ values: [AMF0], into out: inout [UInt8]) {
        for value in values { value.encode(into: &out) }
    }

    func encode(into out: inout [UInt8]) {
        switch self {
        case .number(let n):
            out.append(0x00)
            Self.append(n.bitPattern, bytes: 8, to: &out)
        case .bool(let b):
            out.append(contentsOf: [0x01, b ? 1 : 0])
        case .string(let s):
            let utf8 = Array(s.utf8)
            if utf8.count > 0xFFFF {
                out.append(0x0C)
                Self.append(UInt64(utf8.count), bytes: 4, to: &out)
            } else {
                out.append(0x02)
                Self.append(UInt64(utf8.count), bytes: 2, to: &out)
            }
            out.append(contentsOf: utf8)
        case .object(let fields):
            out.append(0x03)
            Self.encode(fields, into: &out)
        case .null:
            out.append(0x05)
        case .undefined:
            out.append(0x06)
        case .ecmaArray(let fields):
            out.append(0x08)
            Self.append(UInt64(fields.count), bytes: 4, to: &out)
            Self.encode(fields, into: &out)
        case .strictArray(let items):
            out.append(0x0A)
            Self.append(UInt64(items.count), bytes: 4, to: &out)
            for item in items { item.encode(into: &out) }
        }
    }

    private static func encode(_ fields: [(String, AMF0)], into out: inout [UInt8]) {
        for (name, value) in fields {
            let utf8 = Array(name.utf8.prefix(0xFFFF))
            append(UInt64(utf8.count), bytes: 2, to: &out)
            out.append(contentsOf: utf8)
            value.encode(into: &out)
        }
        out.append(contentsOf: [0, 0, 0x09])
    }

    static func append(_ value: UInt64, bytes: Int, to out: inout [UInt8]) {
        for i in stride(from: bytes - 1, through: 0, by: -1) { out.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(i)))) }
    }

    /// Every value in `bytes`, in order; throws on a type it does not know, a length past the
    /// end, or nesting deeper than 16 (a server's answers are two levels deep).
    static func decode(_ bytes: ArraySlice<UInt8>) throws(AMF0Error) -> [AMF0] {
        var reader = Reader(bytes: bytes)
        var values: [AMF0] = []
        while !reader.atEnd { values.append(try reader.value(depth: 0)) }
        return values
    }

    private struct Reader {
        let bytes: ArraySlice<UInt8>
        var at: Int

        init(bytes: ArraySlice<UInt8>) {
            self.bytes = bytes
            at = bytes.startIndex
        }

        var atEnd: Bool { at >= bytes.endIndex }

        mutating func take(_ n: Int) throws(AMF0Error) -> ArraySlice<UInt8> {
            guard n >= 0, bytes.endIndex - at >= n else { throw AMF0Error() }
            defer { at += n }
            return bytes[at..<at + n]
        }

        mutating func uint(_ n: Int) throws(AMF0Error) -> UInt64 {
            try take(n).reduce(0) { $0 << 8 | UInt64($1) }
        }

        mutating func string(lengthBytes: Int) throws(AMF0Error) -> String {
            String(decoding: try take(Int(try uint(lengthBytes))), as: UTF8.self)
        }

        mutating func value(depth: Int) throws(AMF0Error) -> AMF0 {
            guard depth < 16 else { throw AMF0Error() }
            switch try uint(1) {
            case 0x00: return .number(Double(bitPattern: try uint(8)))
            case 0x01: return .bool(try uint(1) != 0)
            case 0x02: return .string(try string(lengthBytes: 2))
            case 0x03: return .object(try fields(depth: depth))
            case 0x05: return .null
            case 0x06: return .undefined
            case 0x08:
                _ = try uint(4)
                return .ecmaArray(try fields(depth: depth))
            case 0x0A:
                let count = try uint(4)
                guard count <= UInt64(bytes.endIndex - at) else { throw AMF0Error() }
                var items: [AMF0] = []
                for _ in 0..<count { items.append(try value(depth: depth + 1)) }
                return .strictArray(items)
            case 0x0B:
                let ms = Double(bitPattern: try uint(8))
                _ = try uint(2)
                return .number(ms)
            case 0x0C: return .string(try string(lengthBytes: 4))
            default: throw AMF0Error()
            }
        }

        mutating func fields(depth: Int) throws(AMF0Error) -> [(String, AMF0)] {
            var fields: [(String, AMF0)] = []
            while true {
                let name = try string(lengthBytes: 2)
                if name.isEmpty, bytes.endIndex - at >= 1, bytes[at] == 0x09 {
                    at += 1
                    return fields
                }
                fields.append((name, try value(depth: depth + 1)))
            }
        }
    }
}

/// AMF0 that could not be read.
struct AMF0Error: Error {}
