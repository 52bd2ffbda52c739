/// What a server made of one published access unit for the wire formats of its readers (the
/// MPEG-TS packets of a `ts:` listener, say), made once per unit and shared by every reader
/// that wants it.
///
/// The fan-out core carries it with its `QueuedAccessUnit` (through the GOP cache, joins,
/// skips and bounds) and never looks inside: which forms exist and what they hold is the
/// server's business. Each form is found by its type, so a reader takes its own
/// (`unit.forms[TransportStreamUnit.self]`) and ignores the others. Empty, it costs nothing.
public struct WireForms: Sendable {
    @usableFromInline var forms: [any Sendable] = []

    public init() {}

    public var isEmpty: Bool { forms.isEmpty }

    /// Adds `form`, in place of one of the same type.
    public mutating func add<Form: Sendable>(_ form: Form) {
        forms.removeAll { $0 is Form }
        forms.append(form)
    }

    /// The form of type `Form`; nil when none was made (no reader wants it, or its maker left
    /// this unit out).
    @inlinable
    public subscript<Form: Sendable>(_ type: Form.Type) -> Form? {
        for form in forms {
            if let match = form as? Form { return match }
        }
        return nil
    }
}
