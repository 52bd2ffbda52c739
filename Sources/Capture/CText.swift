extension String {
    /// The text of a C `char name[N]` field as Swift imports it (a tuple of `CChar`), which
    /// the capture shims (CPipeWire, CWlr, CPortal) fill with messages and names: up to its
    /// first NUL, and never past the field's end even without one.
    public init<Field>(cField field: Field) {
        self = withUnsafeBytes(of: field) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }
}
