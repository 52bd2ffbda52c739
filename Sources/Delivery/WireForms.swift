/// What a server made of one published access unit for the wire formats of its readers (the
/// MPEG-TS packets of a `ts:` listener, say), made once per unit and shared by every reader
/// that wants it.
///
/// The fan-out core carries it with its `QueuedAccessUnit` (through the GOP cache, joins,
/// skips and bounds) and never looks inside: which forms exist and what they hold is the
/// server's business. Each form is found by its type, so a reader takes its own
/// (`unit.forms[TransportStreamUnit.self]`) and ignores the others. Empty, it costs nothing.
///
/// Every reader looks its form up for every access unit, so the lookup is a comparison of
/// type identities, not a dynamic cast: each form is kept in a `Box` of its own type, tagged
/// with that type's identity, and taken out with an unchecked downcast the tag vouches for.
public struct WireForms: Sendable {
    @usableFromInline var forms: [(type: ObjectIdentifier, box: AnyObject & Sendable)] = []

    /// One form, in a class of its type's own so that the tag can stand for the cast.
    @usableFromInline final class Box<Form: Sendable>: Sendable {
        @usableFromInline let form: Form
        @usableFromInline init(_ form: Form) { self.form = form }
    }

    public init() {}

    public var isEmpty: Bool { forms.isEmpty }

    /// Adds `form`, in place of one of the same type. Inlinable, so that a server adding its
    /// form builds the `Box` of a type it knows: the box's class is found once, not looked up
    /// in the runtime's table of generic types for every access unit.
    @inlinable
    public mutating func add<Form: Sendable>(_ form: Form) {
        let type = ObjectIdentifier(Form.self)
        forms.removeAll { $0.type == type }
        forms.append((type, Box(form)))
    }

    /// The form of type `Form`; nil when none was made (no reader wants it, or its maker left
    /// this unit out).
    @inlinable
    public subscript<Form: Sendable>(_ type: Form.Type) -> Form? {
        let wanted = ObjectIdentifier(Form.self)
        for entry in forms where entry.type == wanted {
            // Only `add` makes entries, each tagged with its own Box's form type.
            return unsafeDowncast(entry.box, to: Box<Form>.self).form
        }
        return nil
    }
}
