import XCTest
@testable import WebRTC

final class STUNTests: XCTestCase {
    /// RFC 5769 §2.1: the sample request, with its MESSAGE-INTEGRITY and FINGERPRINT.
    static let sampleRequest: [UInt8] = [
        0x00, 0x01, 0x00, 0x58, 0x21, 0x12, 0xa4, 0x42, 0xb7, 0xe7, 0xa7, 0x01, 0xbc, 0x34, 0xd6, 0x86, 0xfa, 0x87, 0xdf, 0xae,
        0x80, 0x22, 0x00, 0x10, 0x53, 0x54, 0x55, 0x4e, 0x20, 0x74, 0x65, 0x73, 0x74, 0x20, 0x63, 0x6c, 0x69, 0x65, 0x6e, 0x74,
        0x00, 0x24, 0x00, 0x04, 0x6e, 0x00, 0x01, 0xff,
        0x80, 0x29, 0x00, 0x08, 0x93, 0x2f, 0xf9, 0xb1, 0x51, 0x26, 0x3b, 0x36,
        0x00, 0x06, 0x00, 0x09, 0x65, 0x76, 0x74, 0x6a, 0x3a, 0x68, 0x36, 0x76, 0x59, 0x20, 0x20, 0x20,
        0x00, 0x08, 0x00, 0x14, 0x9a, 0xea, 0xa7, 0x0c, 0xbf, 0xd8, 0xcb, 0x56, 0x78, 0x1e, 0xf2, 0xb5, 0xb2, 0xd3, 0xf2, 0x49,
        0xc1, 0xb5, 0x71, 0xa2,
        0x80, 0x28, 0x00, 0x04, 0xe5, 0x7a, 0x3b, 0xcf,
    ]

    func testReadsAndChecksRFC5769SampleRequest() throws {
        let request = try STUN.parseBindingRequest(Self.sampleRequest)
        XCTAssertEqual(request.username, "evtj:h6vY")
        XCTAssertEqual(request.localUfrag, "evtj")
        XCTAssertEqual(request.transactionID, Array(Self.sampleRequest[8..<20]))
        XCTAssertFalse(request.useCandidate)
        XCTAssertTrue(request.isAuthentic(password: "VOkJxbRl1RmTxUk/WvJxBt"))
        XCTAssertFalse(request.isAuthentic(password: "VOkJxbRl1RmTxUk/WvJxBT"))
    }

    func testRefusesABrokenFingerprintAndOtherMessages() {
        var broken = Self.sampleRequest
        broken[broken.count - 1] ^= 1
        XCTAssertThrowsError(try STUN.parseBindingRequest(broken)) { XCTAssertEqual($0 as? STUN.ParseError, .badFingerprint) }
        var response = Self.sampleRequest
        response[1] = 0x01
        response[0] = 0x01
        XCTAssertThrowsError(try STUN.parseBindingRequest(response)) { XCTAssertEqual($0 as? STUN.ParseError, .notBindingRequest) }
        XCTAssertThrowsError(try STUN.parseBindingRequest(Array(Self.sampleRequest.prefix(40)))) { XCTAssertEqual($0 as? STUN.ParseError, .badLength) }
        // A DTLS record is not STUN (RFC 7983's first byte).
        XCTAssertFalse(STUN.isSTUN(22))
        XCTAssertTrue(STUN.isSTUN(0))
    }

    /// The answer: XOR-MAPPED-ADDRESS as RFC 5769 §2.2 has it for 192.0.2.1:32853, signed
    /// with the password and fingerprinted, which the request parser's own checks accept.
    func testAnswersWithXORMappedAddressIntegrityAndFingerprint() throws {
        let request = try STUN.parseBindingRequest(Self.sampleRequest)
        let response = STUN.bindingSuccess(to: request, mapped: ([192, 0, 2, 1], 32853), password: "VOkJxbRl1RmTxUk/WvJxBt")
        XCTAssertEqual(Array(response[0..<2]), [0x01, 0x01])
        XCTAssertEqual(Int(response[2]) << 8 | Int(response[3]), response.count - 20)
        XCTAssertEqual(Array(response[8..<20]), request.transactionID)
        XCTAssertEqual(Array(response[20..<32]), [0x00, 0x20, 0x00, 0x08, 0x00, 0x01, 0xa1, 0x47, 0xe1, 0x12, 0xa6, 0x43])
        // MESSAGE-INTEGRITY over the header (length up to its end) and XOR-MAPPED-ADDRESS.
        XCTAssertEqual(Array(response[32..<36]), [0x00, 0x08, 0x00, 0x14])
        var signed = Array(response[0..<32])
        signed[3] = UInt8(32 + 24 - 20)
        XCTAssertEqual(Array(response[36..<56]), STUN.hmac(key: Array("VOkJxbRl1RmTxUk/WvJxBt".utf8), signed))
        XCTAssertEqual(Array(response[56..<60]), [0x80, 0x28, 0x00, 0x04])
        XCTAssertEqual(STUN.word(response, 60), STUN.crc32(response[0..<56]) ^ 0x5354_554E)
        XCTAssertEqual(response.count, 64)
    }

    func testCRC32IsZlibs() {
        XCTAssertEqual(STUN.crc32(Array("123456789".utf8)[...]), 0xCBF4_3926)
    }

    func testRequestsWrittenHereReadBack() throws {
        let id = [UInt8](repeating: 9, count: 12)
        let bytes = STUN.bindingRequest(transactionID: id, username: "abcd:efgh", password: "secretsecretsecret", useCandidate: true)
        let request = try STUN.parseBindingRequest(bytes)
        XCTAssertEqual(request.username, "abcd:efgh")
        XCTAssertTrue(request.useCandidate)
        XCTAssertTrue(request.isAuthentic(password: "secretsecretsecret"))
        XCTAssertFalse(request.isAuthentic(password: "secretsecretsecreT"))
    }
}
