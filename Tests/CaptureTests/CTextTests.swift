import Capture
import Testing

/// `String(cField:)`: a C `char[N]` field as Swift imports it (a tuple of `CChar`).
@Suite struct CTextTests {
    @Test func readsUpToTheFirstNUL() {
        let field: (CChar, CChar, CChar, CChar, CChar, CChar) = (0x6d, 0x75, 0x74, 0, 0x78, 0)  // "mut\0x\0"
        #expect(String(cField: field) == "mut")
    }

    @Test func stopsAtTheFieldsEndWithoutANUL() {
        let field: (CChar, CChar, CChar, CChar) = (0x6e, 0x6f, 0x64, 0x65)  // "node", no NUL
        #expect(String(cField: field) == "node")
        let empty: (CChar, CChar) = (0, 0x41)
        #expect(String(cField: empty) == "")
    }
}
